import type { WorkflowStatus } from '../support/statuses';

/**
 * Per-type run metrics, counted by the index shards as entries land and rolled up once a minute (docs/dashboard.md,
 * "Where the metrics come from"). A shard never counts its rows to answer them: it keeps
 * one row of counters per minute and a duration histogram per minute, so a read costs the
 * same for a hundred instances as for millions (at most a day of minutes per shard).
 *
 * This module is the pure part: which change of an entry counts as what, the histogram's
 * buckets, and percentiles from merged histograms.
 */

/** Counters per minute: runs that started, and runs that reached each finished status. */
export interface MinuteCounts {
	/** Minute number: `Math.floor(ms / 60_000)`. */
	minute: number;
	started: number;
	completed: number;
	errored: number;
	terminated: number;
}

/** What one accepted entry adds to its shard's metrics. */
export interface MetricsDelta {
	/** The minute the run started in (its `createdAt`), when the entry is a new run. */
	startedMinute?: number;
	/** The minute the run finished in (its `updatedAt`) and how, when the entry finished it. */
	finished?: { minute: number; status: FinishedStatus; durationMs: number };
}

export type FinishedStatus = 'completed' | 'errored' | 'terminated';
const FINISHED: readonly string[] = ['completed', 'errored', 'terminated'];

/** A shard row's state before a write: enough to tell what the write changed. */
export interface PriorEntry {
	status: string;
	createdAt: number;
	/** The run of the incarnation the row is of (absent: 0; a row written before drizzle/0022 has 0). */
	generation?: number;
}

/** How long metrics are kept: a day, plus an hour so "the last day" is always whole. */
export const METRICS_RETENTION_MS = 25 * 3_600_000;

export const minuteOf = (ms: number): number => Math.floor(ms / 60_000);

/**
 * What a write the shard kept means for the metrics. `prior` is the row before the write
 * (null: the shard had none); tombstone statuses start with `__`.
 * - A run starts when its entry first lands: no row, or a row of another incarnation
 *   (a deleted id created again). The 20 ms coalescing of deliveries can make created,
 *   running and completed one write; that write starts and finishes the run.
 * - A run finishes when the entry reaches completed, errored or terminated from another
 *   status, or from the same one of an earlier generation, of the same incarnation: a restart
 *   that ends again is a second finish, even when its restart, start and finish reach the
 *   shard as one write (completed -> completed, a generation apart: the 20 ms coalescing).
 *   The same status of the same generation is the finish already counted (a redelivery).
 * - A move tombstone of the same incarnation says nothing of the status it hid: an entry
 *   that moves back counts nothing.
 */
export function metricsDelta(
	prior: PriorEntry | null,
	next: { status: WorkflowStatus; createdAt: number; updatedAt: number; generation?: number | undefined },
): MetricsDelta {
	const newRun = prior === null || prior.createdAt !== next.createdAt;
	const delta: MetricsDelta = {};
	if (newRun) delta.startedMinute = minuteOf(next.createdAt);
	const sameState = prior !== null && prior.status === next.status && (prior.generation ?? 0) === (next.generation ?? 0);
	const changed = newRun || (!prior!.status.startsWith('__') && !sameState);
	if (changed && FINISHED.includes(next.status)) {
		delta.finished = { minute: minuteOf(next.updatedAt), status: next.status as FinishedStatus, durationMs: Math.max(0, next.updatedAt - next.createdAt) };
	}
	return delta;
}

/** Histogram buckets per doubling of a duration: bucket bounds grow by 2^(1/8) (~9 %). */
const BUCKETS_PER_DOUBLING = 8;

/** The histogram bucket of a duration in ms: 0 for under 1 ms, then log-scaled. */
export function durationBucket(ms: number): number {
	if (!(ms >= 1)) return 0;
	return 1 + Math.floor(Math.log2(ms) * BUCKETS_PER_DOUBLING);
}

/** The range of durations a bucket holds, [low, high) in ms. */
export function bucketRange(bucket: number): { low: number; high: number } {
	if (bucket <= 0) return { low: 0, high: 1 };
	return { low: 2 ** ((bucket - 1) / BUCKETS_PER_DOUBLING), high: 2 ** (bucket / BUCKETS_PER_DOUBLING) };
}

/** Percentiles (0-100) of a histogram `{bucket: count}`, each the geometric middle of its bucket (within ~5 %); null when empty. */
export function percentiles(histogram: Record<number, number>, wanted: readonly number[]): Record<string, number | null> {
	const buckets = Object.entries(histogram)
		.map(([b, n]) => [Number(b), n] as const)
		.filter(([, n]) => n > 0)
		.sort((a, b) => a[0] - b[0]);
	const total = buckets.reduce((sum, [, n]) => sum + n, 0);
	const result: Record<string, number | null> = {};
	for (const p of wanted) {
		if (total === 0) {
			result[`p${p}`] = null;
			continue;
		}
		// The nearest-rank percentile: the smallest value with at least p % of the runs at or below it.
		const rank = Math.max(1, Math.ceil((p / 100) * total));
		let seen = 0;
		for (const [bucket, n] of buckets) {
			seen += n;
			if (seen >= rank) {
				const { low, high } = bucketRange(bucket);
				result[`p${p}`] = bucket === 0 ? 0 : Math.round(Math.sqrt(low * high));
				break;
			}
		}
	}
	return result;
}

/** Adds histograms (shards' answers) into one. */
export function mergeHistograms(histograms: Iterable<Record<number, number>>): Record<number, number> {
	const merged: Record<number, number> = {};
	for (const h of histograms) for (const [b, n] of Object.entries(h)) merged[Number(b)] = (merged[Number(b)] ?? 0) + n;
	return merged;
}

/** What one shard answers: its minutes of the last hour, its sums over the last day, and its duration histograms of both. */
export interface ShardMetrics {
	/** The last 60 minutes that have counts (minutes with none are left out). */
	minutes: MinuteCounts[];
	/** Sums over the last 1,440 minutes (one row, summed in SQL: a day of minutes never crosses RPC). */
	day: Omit<MinuteCounts, 'minute'>;
	durations: { hour: Record<number, number>; day: Record<number, number> };
}

/** A type's metrics as the API serves them (`GET /types/:type/metrics`). */
export interface TypeMetrics {
	type: string;
	/** The time the numbers were read at (ms). */
	at: number;
	/** The last 60 minutes, oldest first, the current (partial) minute last; minutes with nothing are zeros. */
	perMinute: MinuteCounts[];
	hour: WindowMetrics;
	day: WindowMetrics;
}

export interface WindowMetrics {
	started: number;
	completed: number;
	errored: number;
	terminated: number;
	/** Durations from creation to completed or errored (terminated runs are left out: an operator chose when they ended), in ms. */
	durationMs: { p50: number | null; p90: number | null; p99: number | null; runs: number };
}

/** Sums the shards' answers into the type's metrics at `now`. */
export function summarizeMetrics(type: string, now: number, shards: ShardMetrics[]): TypeMetrics {
	const current = minuteOf(now);
	const byMinute = new Map<number, MinuteCounts>();
	for (const shard of shards) {
		for (const m of shard.minutes) {
			const sum = byMinute.get(m.minute) ?? { minute: m.minute, started: 0, completed: 0, errored: 0, terminated: 0 };
			sum.started += m.started;
			sum.completed += m.completed;
			sum.errored += m.errored;
			sum.terminated += m.terminated;
			byMinute.set(m.minute, sum);
		}
	}
	const perMinute: MinuteCounts[] = [];
	for (let minute = current - 59; minute <= current; minute++) perMinute.push(byMinute.get(minute) ?? { minute, started: 0, completed: 0, errored: 0, terminated: 0 });
	const windowOf = (sums: Omit<MinuteCounts, 'minute'>, histogram: Record<number, number>): WindowMetrics => {
		const runs = Object.values(histogram).reduce((a, b) => a + b, 0);
		const p = percentiles(histogram, [50, 90, 99]);
		return { ...sums, durationMs: { p50: p.p50 ?? null, p90: p.p90 ?? null, p99: p.p99 ?? null, runs } };
	};
	return {
		type,
		at: now,
		perMinute,
		hour: windowOf(sumCounts(perMinute), mergeHistograms(shards.map((s) => s.durations.hour))),
		day: windowOf(sumCounts(shards.map((s) => s.day)), mergeHistograms(shards.map((s) => s.durations.day))),
	};
}

function sumCounts(rows: Iterable<Omit<MinuteCounts, 'minute'>>): Omit<MinuteCounts, 'minute'> {
	const sums = { started: 0, completed: 0, errored: 0, terminated: 0 };
	for (const r of rows) {
		sums.started += r.started;
		sums.completed += r.completed;
		sums.errored += r.errored;
		sums.terminated += r.terminated;
	}
	return sums;
}
