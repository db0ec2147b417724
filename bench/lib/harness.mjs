// The production-limits harness (test/harness/): the real engine, Drizzle store and
// schema on plain Node over node:sqlite, in a child Node whose heap is capped as an
// isolate's is in production. Bundled once with esbuild (TypeScript, .sql as text).
// Used by the benchmark and by test/tooling/production-limits-harness.test.ts.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';

const root = resolve(import.meta.dirname, '../..');
/** @type {Promise<string> | undefined} */
let bundled;

/** @returns {Promise<string>} the path of the bundled replay harness */
function bundle() {
	bundled ??= (async () => {
		const outfile = join(mkdtempSync(join(tmpdir(), 'shardflow-harness-')), 'replay-capped-heap.mjs');
		await build({
			entryPoints: [join(root, 'test/harness/replay-capped-heap.ts')],
			bundle: true,
			platform: 'node',
			format: 'esm',
			target: 'node22',
			outfile,
			loader: { '.sql': 'text' },
			logLevel: 'warning',
		});
		return outfile;
	})();
	return bundled;
}

/**
 * Writes `results` step results of `bytes` characters, crashes, and replays them all, in a
 * Node whose heap is capped at `heapMiB`.
 * @param {{ heapMiB: number, results: number, bytes: number }} options
 * @returns {Promise<{ code: number | null, died: string, result: { written: string, status: string, output: number, heapBeforeReplayMiB: number, peakHeapMiB: number, archive: { deleted: boolean, objects: number, bytes: number, largestObjectBytes: number, peakHeapMiB: number } } | undefined }>}
 */
export async function runReplayHarness({ heapMiB, results, bytes }) {
	const harness = await bundle();
	const run = spawnSync(process.execPath, [`--max-old-space-size=${heapMiB}`, harness, String(results), String(bytes)], { encoding: 'utf8', timeout: 240_000 });
	const line = run.stdout.trim().split('\n').at(-1) ?? '';
	return {
		code: run.status,
		died: /heap out of memory/i.test(run.stderr) ? 'heap out of memory' : run.stderr.slice(-400),
		result: line.startsWith('{') ? JSON.parse(line) : undefined,
	};
}
