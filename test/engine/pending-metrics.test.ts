import { describe, expect, it } from 'vitest';
import { mergePending, parsePending, rollupBound, sumPending, uncountedPending, ROLLUP_MARGIN_MS } from '../../src/engine/index/pending-metrics';
import { durationBucket } from '../../src/engine/index/run-metrics';

const MIN = 60_000;

describe("an index entry's run-metrics mark", () => {
	it('merges what a write counts into the mark it carries, stamped with the write, and is none when nothing counts', () => {
		const first = mergePending(undefined, { startedMinute: 5, finished: { minute: 5, status: 'completed', durationMs: 1500 } }, 5 * MIN + 1500);
		expect(first).toEqual({ u: 5 * MIN + 1500, s: [5], f: [[5, 'c', 1500]] });
		// A restart that errors before the rollup: both finishes are kept.
		const again = mergePending(first, { finished: { minute: 6, status: 'errored', durationMs: 61_000 } }, 6 * MIN + 1000);
		expect(again).toEqual({ u: 6 * MIN + 1000, s: [5], f: [[5, 'c', 1500], [6, 'e', 61_000]] });
		expect(mergePending(undefined, {}, 7 * MIN)).toBeUndefined();
		// A write that counts nothing carries the mark forward under its own time.
		expect(mergePending(again, {}, 7 * MIN)).toEqual({ ...again, u: 7 * MIN });
	});

	it('sums marks per minute as the minute rows count them: a terminated run has no duration', () => {
		const sums = sumPending([
			{ u: 1, s: [5], f: [[5, 'c', 1500]] },
			{ u: 2, s: [5], f: [[6, 't', 90_000]] },
			{ u: 3, f: [[6, 'e', 40]] },
		]);
		expect([...sums.values()]).toEqual([
			{ counts: { minute: 5, started: 2, completed: 1, errored: 0, terminated: 0 }, histogram: { [durationBucket(1500)]: 1 } },
			{ counts: { minute: 6, started: 0, completed: 0, errored: 1, terminated: 1 }, histogram: { [durationBucket(40)]: 1 } },
		]);
	});

	it('counts a mark only while its own write is at or past the watermark, and reads a broken one as none', () => {
		const row = { pendingMetrics: JSON.stringify({ u: 10 * MIN, s: [10] }) };
		expect(uncountedPending(row, 10 * MIN)).toEqual({ u: 10 * MIN, s: [10] });
		expect(uncountedPending(row, 10 * MIN + 1)).toBeUndefined();
		expect(parsePending('{not json')).toBeUndefined();
		expect(parsePending(null)).toBeUndefined();
	});

	it('rolls up to the start of the minute the margin ago: whole minutes, none still taking deliveries', () => {
		expect(rollupBound(11 * MIN + ROLLUP_MARGIN_MS)).toBe(11 * MIN);
		expect(rollupBound(11 * MIN + ROLLUP_MARGIN_MS - 1)).toBe(10 * MIN);
	});
});
