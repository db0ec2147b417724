import { build, type Metafile } from 'esbuild';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rawText } from '../../scripts/raw-text.mjs';

const root = resolve(import.meta.dirname, '../..');

/**
 * Bundles an entry the way a Worker build would and lists what it pulls in:
 * every module bundled and every import left external (`cloudflare:*`).
 */
async function importGraph(entry: string, alias: Record<string, string> = {}): Promise<string[]> {
	const result = await build({
		absWorkingDir: root,
		entryPoints: [entry],
		bundle: true,
		write: false,
		metafile: true,
		format: 'esm',
		platform: 'neutral',
		mainFields: ['module', 'main'],
		conditions: ['workerd', 'worker', 'import'],
		external: ['cloudflare:*'],
		loader: { '.sql': 'text' },
		plugins: [rawText],
		alias,
		logLevel: 'silent',
	});
	const metafile: Metafile = result.metafile;
	const inputs = Object.keys(metafile.inputs);
	const externals = Object.values(metafile.inputs).flatMap((input) => input.imports.filter((i) => i.external).map((i) => i.path));
	return [...inputs, ...externals];
}

const HOST_ONLY = [/(^|\/)node_modules\/drizzle-orm\//, /(^|\/)node_modules\/hono\//, /(^|\/)node_modules\/@hono\//, /^cloudflare:/];
const hostOnly = (graph: string[]) => graph.filter((path) => HOST_ONLY.some((pattern) => pattern.test(path)));

describe('entry points', () => {
	it.for([
		'src/authoring.ts',
		'src/client.ts',
		'examples/demo/workflows/payment-workflow.ts',
		'examples/demo/workflows/test-workflow.ts',
		'examples/demo/workflows/registry.ts',
		'test/worker/workflows.ts',
		'bench/workflows.ts',
		'src/testing/index.ts',
	])('%s pulls in no cloudflare:*, Drizzle or Hono', async (entry) => {
		expect(hostOnly(await importGraph(entry))).toEqual([]);
	});

	it.for(['src/client.ts', 'src/authoring.ts'])('%s pulls in no zod (the HTTP schemas are the host\'s: src/operations/http.ts)', async (entry) => {
		expect((await importGraph(entry)).filter((path) => /(^|\/)node_modules\/(zod|@hono\/zod|@asteasolutions)/.test(path))).toEqual([]);
	});

	it('the caller example (shardflow/client, as its wrangler alias resolves it) bundles no engine, Drizzle or workflow code', async () => {
		const graph = await importGraph('examples/caller-worker/src/index.ts', { 'shardflow/client': './src/client.ts' });
		expect(graph).toContain('src/client.ts');
		expect(graph.filter((path) => /drizzle|src\/(runtime|db|api|testing)\/|examples\/demo\/|instance-engine|step-context|^cloudflare:/.test(path))).toEqual([]);
	});

	it('the deployed Worker (wrangler main) bundles nothing of the test kit', async () => {
		const graph = await importGraph('examples/demo/index.ts');
		expect(graph.filter((path) => path.includes('src/testing/'))).toEqual([]);
		expect(graph.some((path) => path.includes('src/engine/instance/instance-engine.ts'))).toBe(true);
	});

	it('the host entry does pull them in (so the check above can see them)', async () => {
		const found = hostOnly(await importGraph('src/host.ts'));
		expect(found.some((path) => path.includes('drizzle-orm'))).toBe(true);
		expect(found.some((path) => path.includes('hono'))).toBe(true);
		expect(found).toContain('cloudflare:workers');
	});
});
