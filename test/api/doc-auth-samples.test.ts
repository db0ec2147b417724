/// <reference types="vite/client" />
import { describe, expect, it } from 'vitest';

/**
 * Every code sample in the docs that guards access runs here, so a sample that lets an
 * unauthenticated request through fails (issue 45: the mount example compared the header with an
 * unset ADMIN_KEY, undefined === undefined, and let every request in). A sample guards access when
 * it turns shardflow's own check off (`auth: 'host'`) or checks a request header; such a sample
 * must be a file under examples/ that the doc includes (a `<!-- example: <path> -->` line right
 * above its code block, the block the file's text), so the code that runs here is the code the
 * doc shows.
 */

const docs = import.meta.glob<string>(['../../docs/*.md', '../../README.md', '../../templates/**/*.md'], { query: '?raw', import: 'default', eager: true });
const exampleTexts = import.meta.glob<string>('../../examples/**/*.ts', { query: '?raw', import: 'default', eager: true });
/** The project the package test installs the packed package into runs the same Worker (test/tooling/package.test.ts). */
const freshProject = import.meta.glob<string>('../fixtures/fresh-project/src/index.ts', { query: '?raw', import: 'default', eager: true });
const exampleModules = import.meta.glob<{ default: { fetch(request: Request, env: unknown): Response | Promise<Response> } }>('../../examples/**/src/index.ts');

const GUARDS_ACCESS = /auth:\s*['"]host['"]|\.req\.header\(|headers\.get\(/;

interface Sample {
	doc: string;
	line: number;
	code: string;
	/** The examples/ file the doc says the block is (`<!-- example: … -->`), if it says one. */
	example?: string;
}

/** The fenced ts/js blocks of a doc, with the example file named just above each, if any. */
function samplesOf(doc: string, text: string): Sample[] {
	const samples: Sample[] = [];
	const lines = text.split('\n');
	for (let i = 0; i < lines.length; i++) {
		if (!/^```(ts|js|tsx|typescript|javascript)\s*$/.test(lines[i]!)) continue;
		const end = lines.indexOf('```', i + 1);
		const code = lines.slice(i + 1, end).join('\n');
		const marker = /^<!-- example: (\S+) -->$/.exec(lines[i - 1] ?? '');
		samples.push({ doc, line: i + 1, code, ...(marker ? { example: marker[1] } : {}) });
		i = end;
	}
	return samples;
}

const samples = Object.entries(docs).flatMap(([path, text]) => samplesOf(path.replace('../../', ''), text));
const guarding = samples.filter((sample) => GUARDS_ACCESS.test(sample.code));

/** The block without its first line when that only names the file (`// src/index.ts`). */
const body = (code: string) => code.replace(/^\/\/ \S+\n/, '');

describe('code samples in the docs that guard access', () => {
	it('finds the samples that guard access, each an examples/ file the doc includes verbatim', () => {
		expect(guarding.map((s) => s.example)).toContain('examples/host-worker/src/index.ts');
		for (const sample of guarding) {
			const where = `${sample.doc}:${sample.line}`;
			expect(sample.example, `${where} guards access: keep it as a file under examples/ and include it (<!-- example: <path> -->)`).toBeDefined();
			expect(exampleTexts[`../../${sample.example}`], `${where}: ${sample.example} does not exist`).toBeDefined();
			expect(body(sample.code).trimEnd(), `${where} differs from ${sample.example}`).toBe(exampleTexts[`../../${sample.example}`]!.trimEnd());
		}
	});

	it("is the Worker the package test installs and runs (test/fixtures/fresh-project)", () => {
		expect(freshProject['../fixtures/fresh-project/src/index.ts']).toBe(exampleTexts['../../examples/host-worker/src/index.ts']);
	});

	const runnable = [...new Set(guarding.map((s) => s.example).filter((path): path is string => path !== undefined && `../../${path}` in exampleModules))];

	it.for(runnable)('%s lets no request in without the right key, also with the key unset', async (path) => {
		const source = exampleTexts[`../../${path}`]!;
		const app = (await exampleModules[`../../${path}`]!()).default;
		// What the sample guards: each mount with shardflow's own check off, by the header and secret it compares.
		const mounts = [...source.matchAll(/\.route\(\s*'([^']+)',\s*createApp\([^)]*auth:\s*'host'/g)].map((m) => m[1]!);
		const header = /\.req\.header\('([^']+)'\)/.exec(source)?.[1];
		const secret = /c\.env\.([A-Z_]+)/.exec(source)?.[1];
		expect(mounts.length, 'the sample mounts the API with auth: host').toBeGreaterThan(0);
		expect(header && secret, 'the sample names the header and the secret it checks').toBeTruthy();
		const key = 'the-right-key-3f9a';
		const ask = (mount: string, route: string, method: string, env: Record<string, string>, headers: Record<string, string> = {}) =>
			app.fetch(new Request(`http://shop.test${mount}${route}`, { method, headers: { 'content-type': 'application/json', ...headers }, ...(method === 'POST' ? { body: '{"type":"greeter","payload":{"name":"x"}}' } : {}) }), env);
		for (const mount of mounts) {
			for (const [route, method] of [['/openapi.json', 'GET'], ['/workflows', 'GET'], ['/workflows', 'POST']] as const) {
				const attempts: [string, Record<string, string>, Record<string, string>][] = [
					['the key unset, no header', {}, {}],
					['the key unset, an empty header', {}, { [header!]: '' }],
					['the key unset, the header "undefined"', {}, { [header!]: 'undefined' }],
					['the key empty, an empty header', { [secret!]: '' }, { [header!]: '' }],
					['no header', { [secret!]: key }, {}],
					['a wrong key', { [secret!]: key }, { [header!]: 'guess' }],
					['the key with a suffix', { [secret!]: key }, { [header!]: `${key}x` }],
				];
				for (const [what, env, headers] of attempts) {
					const res = await ask(mount, route, method, env, headers);
					expect([401, 403], `${method} ${mount}${route} with ${what} answered ${res.status}`).toContain(res.status);
				}
			}
			// And the right key gets in (the guard is not simply closed): the document describes the mount.
			const res = await ask(mount, '/openapi.json', 'GET', { [secret!]: key }, { [header!]: key });
			expect(res.status).toBe(200);
		}
	});
});
