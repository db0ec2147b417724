import type { MinuteCounts } from './run-metrics';

/**
 * The run metrics an index shard writes to Workers Analytics Engine, once per minute that saw
 * runs start or finish (docs/operations.md "Analytics Engine"): the pure part, the data point's
 * layout and which minutes are due. The layout is versioned by `blob3`; a new layout gets a new
 * version and keeps the old columns' meaning.
 *
 * | column | what |
 * |---|---|
 * | `index1` | the workflow type (the sampling key: a type's points are sampled together) |
 * | `blob1` | the workflow type |
 * | `blob2` | the index shard, `n` of `__index:<type>:<n>`, as text |
 * | `blob3` | the layout, `shardflow.run_metrics.v1` |
 * | `double1` | the minute the counts are for: its start, ms since the epoch |
 * | `double2`-`double5` | runs started, completed, errored and terminated in that minute (a start counts in the minute the run was created, an end in the minute it ended) |
 * | `double6`-`double20` | runs that completed or errored in that minute, by run time (creation to end): `double6` under 1 ms, then one column per factor of 4 up to 4^13 ms (18.6 hours): `double(6+j)` holds [4^(j-1), 4^j) ms for j = 1..13, and `double20` 4^13 ms and more |
 *
 * Sum the doubles over points (a type's shards, several minutes); a sampled point stands for
 * `_sample_interval` points (the Analytics Engine's own column).
 */
export interface AnalyticsDataPoint {
	indexes: [string];
	blobs: [string, string, string];
	doubles: number[];
}

export const EXPORT_LAYOUT = 'shardflow.run_metrics.v1';

/** The run-time columns: `COARSE_BUCKETS` of them, each a factor of 4 wide (16 of the shards' fine buckets, 8 per doubling). */
export const COARSE_BUCKETS = 15;
const FINE_PER_COARSE = 16;

/**
 * A minute is written once it has been closed this long: what the index delivers late (a delivery
 * waits 20 ms to coalesce, then one RPC) still counts in it. A delivery later than this (one
 * retried from the outbox's backoff) is in the shard's own metrics but not in the point already written.
 */
export const EXPORT_GRACE_MS = 5_000;

/** At most this many minutes written per export (Workers allow 250 data points per invocation); the rest at the next. */
export const EXPORT_BATCH = 60;

/** When the minutes up to and including `minute` may be written: once `minute` has closed and its grace passed. */
export function exportDueAt(minute: number): number {
	return (minute + 1) * 60_000 + EXPORT_GRACE_MS;
}

/** The last minute that may be written at `now`. */
export function lastExportableMinute(now: number): number {
	return Math.floor((now - EXPORT_GRACE_MS) / 60_000) - 1;
}

/** The run-time column (0-based among the 15) of one of the shards' fine buckets (run-metrics.ts `durationBucket`). */
export function coarseBucket(fine: number): number {
	if (fine <= 0) return 0;
	return Math.min(COARSE_BUCKETS - 1, Math.ceil(fine / FINE_PER_COARSE));
}

/** One minute of one shard as a data point. `histogram`: the minute's fine duration buckets -> runs. */
export function dataPoint(type: string, shard: number, counts: MinuteCounts, histogram: Record<string, number>): AnalyticsDataPoint {
	const runTimes = new Array<number>(COARSE_BUCKETS).fill(0);
	for (const [fine, runs] of Object.entries(histogram)) runTimes[coarseBucket(Number(fine))]! += runs;
	return {
		indexes: [type],
		blobs: [type, String(shard), EXPORT_LAYOUT],
		doubles: [counts.minute * 60_000, counts.started, counts.completed, counts.errored, counts.terminated, ...runTimes],
	};
}
