import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The TypeScript blocks of the README and of every docs/ page, type-checked as
 * written. Each page is a project of its own (its blocks in a folder named
 * after it) and each block a file: the path its first line names
 * (`// src/greeter.ts`), else a file of its own. A page's blocks import each
 * other by those paths; an import of a file no block of the page defines
 * resolves to the repository's file at the same place (the fork-and-edit path:
 * `../authoring`; `./test-workflow` from the example deployment's
 * examples/demo/workflows/), and `shardflow/*` to the package's
 * sources. A block preceded by `<!-- readme-check: fragment -->` is a piece of
 * a larger file (an object property, `...` for elided code) and is only counted.
 */
const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const FRAGMENT = '<!-- readme-check: fragment -->';
/** Kept small on purpose (over all pages): a snippet should run as written unless it cannot stand alone. */
const MAX_FRAGMENTS = 3;

interface Snippet {
	/** The page, as a repository path (`README.md`, `docs/testing.md`). */
	page: string;
	line: number;
	/** Where the block is written in the work folder: `<page folder>/<the path it names>`. */
	path: string;
	code: string;
}

/** README.md and every docs/*.md page. */
const PAGES = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
/** A page's folder in the work folder: its blocks' paths are relative to it, as if it were the repository's root. */
const folderOf = (page: string) => page.replace(/\.md$/, '').replace(/\//g, '--');

function pageSnippets(page: string): { checked: Snippet[]; fragments: string[] } {
	const lines = readFileSync(join(root, page), 'utf8').split('\n');
	const checked: Snippet[] = [];
	const fragments: string[] = [];
	for (let i = 0; i < lines.length; i++) {
		const open = /^(\s*)```(ts|typescript)\s*$/.exec(lines[i]!);
		if (!open) continue;
		const indent = open[1]!.length;
		const start = i;
		const body: string[] = [];
		while (++i < lines.length && !/^\s*```\s*$/.test(lines[i]!)) body.push(lines[i]!.slice(indent));
		const previous = lines.slice(0, start).reverse().find((l) => l.trim() !== '');
		if (previous?.trim() === FRAGMENT) {
			fragments.push(`${page}:${start + 1}`);
			continue;
		}
		const named = /^\/\/ ([\w./-]+\.tsx?)\b/.exec(body[0] ?? '');
		checked.push({ page, line: start + 1, path: join(folderOf(page), named ? named[1]! : `snippets/line-${start + 1}.ts`), code: body.join('\n') });
	}
	return { checked, fragments };
}

const work = (() => {
	// Inside the repository (ignored by git and by its tsconfig) so the snippets' own imports
	// (zod, hono, vitest) resolve to its node_modules.
	const cache = join(root, '.cache');
	mkdirSync(cache, { recursive: true });
	return mkdtempSync(join(cache, 'readme-snippets-'));
})();

/** What `wrangler types` writes for the README's wrangler.jsonc lines (the binding every host and caller has). */
const WORKER_CONFIGURATION = `declare namespace Cloudflare {
	interface Env {
		WORKFLOW_RUNNER: DurableObjectNamespace;
	}
}
interface Env extends Cloudflare.Env {}
`;
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** For each relative import no snippet of its page satisfies, the repository's file at that place (re-exported, or copied for JSON). */
function linkRepositoryFiles(snippets: Snippet[]): void {
	const written = new Set(snippets.map((s) => s.path));
	for (const snippet of snippets) {
		const folder = folderOf(snippet.page);
		for (const [, spec] of snippet.code.matchAll(/from\s+'(\.{1,2}\/[^']+)'/g)) {
			const target = join(dirname(snippet.path), spec!);
			/** The same place in the repository. */
			const inRepository = relative(folder, target);
			if (spec!.endsWith('.json')) {
				if (!written.has(target) && existsSync(join(root, inRepository))) {
					mkdirSync(dirname(join(work, target)), { recursive: true });
					copyFileSync(join(root, inRepository), join(work, target));
				}
				continue;
			}
			if (written.has(`${target}.ts`) || written.has(`${target}/index.ts`)) continue;
			// A fork's `src/workflows/` is the example deployment's (examples/demo/workflows/) in this repository.
			const demo = inRepository.replace(/^src\/workflows\//, 'examples/demo/workflows/');
			const source = [`${inRepository}.ts`, `${inRepository}/index.ts`, `${demo}.ts`].find((candidate) => existsSync(join(root, candidate)));
			if (!source) continue; // tsc reports it: the snippet imports something nobody defines
			mkdirSync(dirname(join(work, `${target}.ts`)), { recursive: true });
			writeFileSync(join(work, `${target}.ts`), `export * from '${join(root, source).replace(/\.ts$/, '')}';\n`);
			written.add(`${target}.ts`);
		}
	}
}

describe('README and docs/ snippets', () => {
	it('type-check as written against the package sources (fragments marked and few)', async () => {
		const pages = PAGES.map(pageSnippets);
		const checked = pages.flatMap((p) => p.checked);
		const fragments = pages.flatMap((p) => p.fragments);
		const paths = checked.map((s) => s.path);
		expect(paths.filter((p, i) => paths.indexOf(p) !== i), 'two blocks of one page name the same file').toEqual([]);
		for (const snippet of checked) {
			mkdirSync(dirname(join(work, snippet.path)), { recursive: true });
			writeFileSync(join(work, snippet.path), `${snippet.code}\n`);
		}
		linkRepositoryFiles(checked);
		writeFileSync(join(work, 'worker-configuration.d.ts'), WORKER_CONFIGURATION);
		const src = (file: string) => [join(root, file)];
		writeFileSync(
			join(work, 'tsconfig.json'),
			JSON.stringify({
				compilerOptions: {
					target: 'es2022',
					lib: ['es2023'],
					module: 'es2022',
					moduleResolution: 'bundler',
					types: ['@cloudflare/workers-types', '@cloudflare/vitest-plugin/types'],
					allowJs: true,
					strict: true,
					noImplicitOverride: true,
					resolveJsonModule: true,
					skipLibCheck: true,
					noEmit: true,
					jsx: 'react-jsx',
					jsxImportSource: 'hono/jsx',
					paths: {
						shardflow: src('src/host.ts'),
						'shardflow/workflow': src('src/authoring.ts'),
						'shardflow/client': src('src/client.ts'),
						'shardflow/testing': src('src/testing/index.ts'),
						'shardflow/testing/workerd': src('src/testing/workerd.ts'),
						'shardflow/testing/runner': src('src/testing/workerd-runner.ts'),
					},
				},
				include: ['**/*.ts'],
				exclude: [],
			}),
		);
		const tsc = await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', work], { cwd: work }).then(
			() => '',
			(error: { stdout?: string }) => error.stdout ?? String(error),
		);
		// Errors name the snippet's file; say where it is in its page.
		const where = Object.fromEntries(checked.map((s) => [s.path, `${s.page}:${s.line}`]));
		expect(tsc.replace(/^([\w./-]+\.ts)\((\d+),/gm, (_, file: string, line: string) => `${where[relative(work, join(work, file))] ?? file} (${file}:${line}),`)).toBe('');
		const perPage = pages.map((p, i) => `${PAGES[i]} ${p.checked.length}`).filter((entry) => !entry.endsWith(' 0'));
		console.log(`[readme] ${checked.length} TypeScript blocks type-checked (${perPage.join(', ')}), ${fragments.length} marked as fragments (${fragments.join(', ')})`);
		expect(checked.length).toBeGreaterThanOrEqual(10);
		expect(fragments.length).toBeLessThanOrEqual(MAX_FRAGMENTS);
	}, 120_000);
});
