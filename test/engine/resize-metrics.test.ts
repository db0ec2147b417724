import { describe, expect, it } from 'vitest';
import { resizeMetricsDelta, type PriorRow } from '../../src/engine/index/resize-metrics';

const MIN = 60_000;
const row = (status: string, version: number, generation = 0, createdAt = 0): PriorRow => ({ status, createdAt, version, generation });
const entry = (status: 'running' | 'completed' | 'errored' | 'terminated' | 'waiting', version: number, generation = 0) =>
	({ status, createdAt: 0, updatedAt: 2 * MIN, version, generation }) as const;

describe('what a write counts in its new home shard while its type is resized', () => {
	it('counts nothing for a run the previous layout\'s shard already counted, delivered again to a home shard that has no row of it', () => {
		expect(resizeMetricsDelta(null, row('completed', 3), entry('completed', 3))).toEqual({});
		expect(resizeMetricsDelta(null, row('errored', 5), entry('errored', 5))).toEqual({});
		// An older delivery arriving late: the previous shard holds newer, so nothing is news.
		expect(resizeMetricsDelta(null, row('completed', 5), entry('running', 4))).toEqual({});
	});

	it('counts a real change against the previous shard\'s row: a waiting run terminated after the deploy finishes once and does not start again', () => {
		expect(resizeMetricsDelta(null, row('waiting', 2), entry('terminated', 4))).toEqual({ finished: { minute: 2, status: 'terminated', durationMs: 2 * MIN } });
		expect(resizeMetricsDelta(null, row('completed', 3, 0), entry('completed', 6, 1))).toEqual({ finished: { minute: 2, status: 'completed', durationMs: 2 * MIN } });
		// Back over its own move tombstone (resized 4 -> 8 -> 4): the previous shard's live row says what it was.
		expect(resizeMetricsDelta(row('__moved', 2), row('running', 2), entry('completed', 3))).toEqual({ finished: { minute: 2, status: 'completed', durationMs: 2 * MIN } });
	});

	it('counts a run that starts under the new layout (no row anywhere) as started, and a home row as the shard always did', () => {
		expect(resizeMetricsDelta(null, null, entry('completed', 3))).toEqual({ startedMinute: 0, finished: { minute: 2, status: 'completed', durationMs: 2 * MIN } });
		expect(resizeMetricsDelta(row('running', 2), row('running', 1), entry('completed', 3))).toEqual({ finished: { minute: 2, status: 'completed', durationMs: 2 * MIN } });
		expect(resizeMetricsDelta(row('completed', 3), null, entry('completed', 3))).toEqual({});
	});
});
