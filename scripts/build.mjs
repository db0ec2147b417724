// `npm run build`: the package as users install it (dist/), built from the
// sources. JavaScript by esbuild, one file per entry plus shared chunks (so an
// error class is one class whichever entries a Worker imports), dependencies
// left as imports; the drizzle-kit migrations (`drizzle/*.sql`, listed by
// drizzle/migrations.js from the journal) are inlined as strings, so a host
// needs no wrangler `rules` for .sql. Declarations by tsc (tsconfig.build.json),
// their relative imports given the `.js` that Node's resolution wants.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { rawText } from './raw-text.mjs';

const root = resolve(import.meta.dirname, '..');
const dist = join(root, 'dist');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** Entry file -> output name; package.json `exports` points at these. */
export const ENTRIES = {
	index: 'src/host.ts',
	workflow: 'src/authoring.ts',
	client: 'src/client.ts',
	'testing/index': 'src/testing/index.ts',
	'testing/workerd': 'src/testing/workerd.ts',
	'testing/runner': 'src/testing/workerd-runner.ts',
};

rmSync(dist, { recursive: true, force: true });

await build({
	absWorkingDir: root,
	entryPoints: Object.entries(ENTRIES).map(([out, entry]) => ({ in: entry, out })),
	outdir: dist,
	chunkNames: 'chunks/[name]-[hash]',
	bundle: true,
	splitting: true,
	format: 'esm',
	platform: 'neutral',
	target: 'es2022',
	// Readable output: stack traces of a failed workflow point into code a user can read.
	minify: false,
	external: ['cloudflare:*', ...Object.keys(pkg.dependencies ?? {}).flatMap((dep) => [dep, `${dep}/*`])],
	loader: { '.sql': 'text' },
	plugins: [rawText],
	logLevel: 'warning',
});

execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });

/** `from './x'` -> `from './x.js'` (or `./x/index.js`), as Node16/NodeNext resolution requires in declarations. */
function addExtensions(dir) {
	for (const name of readdirSync(dir)) {
		const path = join(dir, name);
		if (statSync(path).isDirectory()) addExtensions(path);
		else if (path.endsWith('.d.ts')) {
			const text = readFileSync(path, 'utf8').replace(/((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]+)(['"])/g, (match, head, spec, tail) => {
				if (/\.(js|json)$/.test(spec)) return match;
				const target = join(dirname(path), spec);
				if (existsSync(`${target}.d.ts`)) return `${head}${spec}.js${tail}`;
				if (existsSync(join(target, 'index.d.ts'))) return `${head}${spec}/index.js${tail}`;
				return match;
			});
			writeFileSync(path, text);
		}
	}
}
addExtensions(join(dist, 'types'));
