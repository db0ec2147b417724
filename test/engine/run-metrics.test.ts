import { describe, expect, it } from 'vitest';
import { bucketRange, durationBucket, metricsDelta, percentiles, summarizeMetrics } from '../../src/engine/index/run-metrics';

const MIN = 60_000;

describe('what an accepted index entry counts', () => {
	it('counts a first entry as a started run, in the minute it was created', () => {
		expect(metricsDelta(null, { status: 'running', createdAt: 5 * MIN + 10, updatedAt: 6 * MIN })).toEqual({ startedMinute: 5 });
	});

	it('counts one write that carries created..completed (the 20 ms coalescing) as a start and a finish with its duration', () => {
		expect(metricsDelta(null, { status: 'completed', createdAt: 5 * MIN, updatedAt: 5 * MIN + 1500 })).toEqual({
			startedMinute: 5,
			finished: { minute: 5, status: 'completed', durationMs: 1500 },
		});
	});

	it('counts a finish only when the status changes to a finished one', () => {
		const prior = { status: 'waiting', createdAt: 0 };
		expect(metricsDelta(prior, { status: 'errored', createdAt: 0, updatedAt: 3 * MIN })).toEqual({ finished: { minute: 3, status: 'errored', durationMs: 3 * MIN } });
		expect(metricsDelta({ status: 'completed', createdAt: 0 }, { status: 'completed', createdAt: 0, updatedAt: 3 * MIN })).toEqual({});
		expect(metricsDelta(prior, { status: 'sleeping', createdAt: 0, updatedAt: 3 * MIN })).toEqual({});
	});

	it('counts the finish of a restarted run whose restart, start and finish reach the shard as one write (completed -> completed a generation later), and a redelivery of it as nothing', () => {
		const prior = { status: 'completed', createdAt: 0, generation: 0 };
		const again = { status: 'completed', createdAt: 0, updatedAt: 3 * MIN, generation: 1 } as const;
		expect(metricsDelta(prior, again)).toEqual({ finished: { minute: 3, status: 'completed', durationMs: 3 * MIN } });
		expect(metricsDelta({ status: 'errored', createdAt: 0 }, { ...again, status: 'errored' })).toEqual({ finished: { minute: 3, status: 'errored', durationMs: 3 * MIN } });
		// The same finish delivered again (a retry, a backstop): counted once, by the write that brought it.
		expect(metricsDelta({ status: 'completed', createdAt: 0, generation: 1 }, again)).toEqual({});
	});

	it('counts a new incarnation of a deleted id as a new run, and an entry moving back over its own move tombstone as nothing', () => {
		expect(metricsDelta({ status: '__deleted', createdAt: 1 }, { status: 'running', createdAt: 2 * MIN, updatedAt: 2 * MIN })).toEqual({ startedMinute: 2 });
		expect(metricsDelta({ status: '__moved', createdAt: 2 * MIN }, { status: 'completed', createdAt: 2 * MIN, updatedAt: 3 * MIN })).toEqual({});
	});
});

describe('run duration percentiles', () => {
	it('puts each duration in a bucket whose range holds it, ~9 % wide', () => {
		for (const ms of [1, 7, 99, 1500, 60_000, 86_400_000]) {
			const { low, high } = bucketRange(durationBucket(ms));
			expect(ms).toBeGreaterThanOrEqual(low - 1e-9);
			expect(ms).toBeLessThan(high);
			expect(high / low).toBeLessThan(1.1);
		}
		expect(durationBucket(0)).toBe(0);
	});

	it('answers p50, p90 and p99 within 5 % of the true nearest-rank values', () => {
		const durations = Array.from({ length: 1000 }, (_, i) => (i + 1) * 10); // 10 ms .. 10 s
		const histogram: Record<number, number> = {};
		for (const d of durations) histogram[durationBucket(d)] = (histogram[durationBucket(d)] ?? 0) + 1;
		const p = percentiles(histogram, [50, 90, 99]);
		for (const [key, exact] of [['p50', 5000], ['p90', 9000], ['p99', 9900]] as const) expect(Math.abs(p[key]! - exact) / exact).toBeLessThan(0.05);
		expect(percentiles({}, [50])).toEqual({ p50: null });
	});
});

describe('a type\'s metrics from its shards', () => {
	it('sums the shards per minute, fills the last hour with zeros and keeps the day apart from the hour', () => {
		const now = 1000 * MIN + 30_000;
		const minute = (m: number, started: number, completed = 0) => ({ minute: m, started, completed, errored: 0, terminated: 0 });
		const summary = summarizeMetrics('payment', now, [
			{ minutes: [minute(1000, 2, 1)], day: { started: 7, completed: 1, errored: 0, terminated: 0 }, durations: { hour: { [durationBucket(100)]: 1 }, day: { [durationBucket(100)]: 1 } } },
			{ minutes: [minute(1000, 1), minute(999, 0, 4)], day: { started: 1, completed: 4, errored: 0, terminated: 0 }, durations: { hour: { [durationBucket(200)]: 4 }, day: { [durationBucket(200)]: 4 } } },
		]);
		expect(summary.perMinute).toHaveLength(60);
		expect(summary.perMinute.at(-1)).toEqual(minute(1000, 3, 1));
		expect(summary.perMinute.at(-2)).toEqual(minute(999, 0, 4));
		expect(summary.perMinute[0]!.minute).toBe(941);
		expect(summary.hour).toMatchObject({ started: 3, completed: 5 });
		expect(summary.day).toMatchObject({ started: 8, completed: 5 });
		expect(summary.hour.durationMs.runs).toBe(5);
		expect(Math.abs(summary.hour.durationMs.p50! - 200) / 200).toBeLessThan(0.05);
	});
});
