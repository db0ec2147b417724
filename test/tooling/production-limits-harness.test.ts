import { describe, expect, it } from 'vitest';
import { runListingHarness, runReplayHarness } from '../../bench/lib/harness.mjs';

// The production-limits harness (docs/deploying.md "Production limits"): the real engine,
// Drizzle store and schema on plain Node over node:sqlite, with the heap capped
// at the 128 MB an isolate gets in production. workerd has no memory limit, so
// only this shows that a replay fits; every statement also goes through the
// store's SQL limits (100 bound parameters, 2 MB rows).
describe('the production-limits harness (Node, heap capped at 128 MB)', () => {
	it('replays 1000 step results of 100 KiB (~100 MiB of history) after a crash, then archives and deletes it, without running out of heap', async () => {
		const { code, died, result } = await runReplayHarness({ heapMiB: 128, results: 1000, bytes: 100 * 1024 });
		expect(code, died).toBe(0);
		expect(result).toMatchObject({ written: 'sleeping', status: 'completed', output: 1000 * 100 * 1024 });
		// The archive goes out in bounded parts: every record of ~100 MiB, no object over a chunk.
		expect(result!.archive).toMatchObject({ deleted: true });
		expect(result!.archive.bytes).toBeGreaterThan(100 * 1024 * 1024);
		expect(result!.archive.largestObjectBytes).toBeLessThanOrEqual(4.5 * 1024 * 1024);
		// With room to spare: the same run fits in half the production heap. (The peak heap sampled under the
		// 128 MB cap counts garbage V8 has not collected yet: 66 or 97-100 MiB for the archive from one run to
		// the next, the same code, so it cannot say whether the live memory grew; running out of a smaller heap can.)
		const half = await runReplayHarness({ heapMiB: 64, results: 1000, bytes: 100 * 1024 });
		expect(half.code, half.died).toBe(0);
		expect(half.result).toMatchObject({ status: 'completed', archive: { deleted: true } });
	}, 240_000);

	it('lists a page of 1000 over 256 shards of 1000 entries each taking under 16 MiB of heap (the code before: 256,000 rows, ~111 MiB)', async () => {
		const { code, died, result } = await runListingHarness({ shards: 256, perShard: 1000, limit: 1000 });
		expect(code, died).toBe(0);
		expect(result!.items).toBe(1000);
		expect(result!.rowsRequested).toBeLessThanOrEqual(2 * 1000 + 4 * 256);
		expect(result!.heapMiB).toBeLessThan(16);
	}, 240_000);

	it('leaves the bench driver free while it runs (a driver blocked for minutes sent its next request on a socket wrangler dev had closed)', async () => {
		await runListingHarness({ shards: 4, perShard: 10, limit: 10 }); // bundled once; the run below is the child alone
		let turns = 0;
		const timer = setInterval(() => turns++, 5);
		try {
			const { code, died } = await runListingHarness({ shards: 64, perShard: 100, limit: 100 });
			expect(code, died).toBe(0);
		} finally {
			clearInterval(timer);
		}
		// A child Node starts in tens of milliseconds at least: a driver not blocked meanwhile ran its timers.
		expect(turns).toBeGreaterThan(0);
	}, 240_000);
});
