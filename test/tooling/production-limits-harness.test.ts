import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The production-limits harness (README "Production limits"): the real engine,
// Drizzle store and schema on plain Node over node:sqlite, with the heap capped
// at the 128 MB an isolate gets in production. workerd has no memory limit, so
// only this shows that a replay fits; every statement also goes through the
// store's SQL limits (100 bound parameters, 2 MB rows).
const root = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'shardflow-harness-build-'));
const harness = join(dir, 'replay-capped-heap.mjs');

beforeAll(async () => {
	await build({
		entryPoints: [join(root, 'test/harness/replay-capped-heap.ts')],
		bundle: true,
		platform: 'node',
		format: 'esm',
		target: 'node22',
		outfile: harness,
		loader: { '.sql': 'text' },
		logLevel: 'warning',
	});
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the harness in a Node with a heap of `heapMiB`; its JSON line, or how it died. */
function runCapped(heapMiB: number, results: number, bytes: number) {
	const run = spawnSync(process.execPath, [`--max-old-space-size=${heapMiB}`, harness, String(results), String(bytes)], { encoding: 'utf8', timeout: 240_000 });
	const line = run.stdout.trim().split('\n').at(-1) ?? '';
	return { code: run.status, died: /heap out of memory/i.test(run.stderr) ? 'heap out of memory' : run.stderr.slice(-400), result: line.startsWith('{') ? JSON.parse(line) : undefined };
}

describe('the production-limits harness (Node, heap capped at 128 MB)', () => {
	it('replays 1000 step results of 100 KiB (~100 MiB of history) after a crash without running out of heap', () => {
		const { code, died, result } = runCapped(128, 1000, 100 * 1024);
		expect(code, died).toBe(0);
		expect(result).toMatchObject({ written: 'sleeping', status: 'completed', output: 1000 * 100 * 1024 });
		expect(result.peakHeapMiB).toBeLessThan(100);
	}, 240_000);
});
