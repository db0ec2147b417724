// The production-limits harness (test/harness/): the real engine, Drizzle store and
// schema on plain Node over node:sqlite, in a child Node whose heap is capped as an
// isolate's is in production. Bundled once with esbuild (TypeScript, .sql as text).
// Used by the benchmark and by test/tooling/production-limits-harness.test.ts. The listing
// harness measures one list request's heap over many index shards the same way.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';

const root = resolve(import.meta.dirname, '../..');
/** @type {Map<string, Promise<string>>} */
const bundled = new Map();

/**
 * @param {string} name a file of test/harness/, without `.ts`
 * @returns {Promise<string>} the path of its bundle
 */
function bundle(name) {
	let out = bundled.get(name);
	if (!out) {
		out = (async () => {
			const outfile = join(mkdtempSync(join(tmpdir(), 'shardflow-harness-')), `${name}.mjs`);
			await build({
				entryPoints: [join(root, `test/harness/${name}.ts`)],
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
		bundled.set(name, out);
	}
	return out;
}

/**
 * Runs a harness script in a child Node with the given flags; its last line parsed as JSON.
 * Asynchronously: the bench driver talks to a wrangler dev server meanwhile, and a driver blocked
 * for minutes (the 1000 MiB replay) neither drains wrangler's output nor sees the server close
 * its idle keep-alive connections, so its next request went out on a closed socket ("fetch failed").
 * @param {string} name
 * @param {string[]} flags
 * @param {string[]} args
 * @returns {Promise<{ code: number | null, died: string, result: any }>}
 */
async function runHarness(name, flags, args) {
	const script = await bundle(name);
	const child = spawn(process.execPath, [...flags, script, ...args], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 240_000 });
	let stdout = '';
	let stderr = '';
	child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
	child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
	/** @type {number | null} */
	const code = await new Promise((resolve, reject) => child.on('error', reject).on('close', (status) => resolve(status)));
	const line = stdout.trim().split('\n').at(-1) ?? '';
	return {
		code,
		died: /heap out of memory/i.test(stderr) ? 'heap out of memory' : stderr.slice(-400),
		result: line.startsWith('{') ? JSON.parse(line) : undefined,
	};
}

/**
 * One list request of `limit` over `shards` index shards of `perShard` entries each, held in
 * memory behind the shard RPC: rows asked and answered, rounds, and the heap the listing took.
 * @param {{ shards: number, perShard: number, limit: number }} options
 * @returns {Promise<{ code: number | null, died: string, result: { items: number, rowsRequested: number, rowsReturned: number, rounds: number, heapMiB: number } | undefined }>}
 */
export function runListingHarness({ shards, perShard, limit }) {
	return runHarness('listing-heap', ['--expose-gc'], [String(shards), String(perShard), String(limit)]);
}

/**
 * Writes `results` step results of `bytes` characters, crashes, and replays them all, in a
 * Node whose heap is capped at `heapMiB`.
 * @param {{ heapMiB: number, results: number, bytes: number }} options
 * @returns {Promise<{ code: number | null, died: string, result: { written: string, status: string, output: number, heapBeforeReplayMiB: number, peakHeapMiB: number, archive: { deleted: boolean, objects: number, bytes: number, largestObjectBytes: number, peakHeapMiB: number } } | undefined }>}
 */
export function runReplayHarness({ heapMiB, results, bytes }) {
	return runHarness('replay-capped-heap', [`--max-old-space-size=${heapMiB}`], [String(results), String(bytes)]);
}
