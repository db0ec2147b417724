import { durationBucket, type FinishedStatus, type MetricsDelta, type MinuteCounts } from './run-metrics';

/**
 * Run metrics not yet rolled up into the shard's minute rows, kept on the entry row the delivery
 * writes anyway (`index_entries.pending_metrics`), so counting a run costs no row of its own
 * (docs/decisions.md "Run metrics rolled up once a minute per shard"). The shard rolls the marks
 * up once a minute: every entry changed since the last rollup (the watermark) has `updated_at >= watermark`,
 * and the shard keeps in memory which entries it marked (runtime/index-marked-entries.ts).
 *
 * A mark is counted by the rollup that passes its `u`, the `updated_at` of the write that merged it:
 * it counts while `u` is at or past the watermark. Its row's `updated_at` says which rollup finds it,
 * and is `u` unless a build that does not know the column (a deploy rolled back) rewrote the row:
 * that build kept the column, counted its own write directly, and left the mark uncounted, so the
 * mark still counts, once, if no rollup passed `u` before the rewrite; one that did has `u` below the
 * watermark and is skipped.
 *
 * This module is pure: the mark's shape, merging, and summing marks into minutes.
 */
export interface PendingMetrics {
	/** The `updated_at` of the entry write that merged this mark. */
	u: number;
	/** Minutes in which runs started (one per incarnation that landed). */
	s?: number[];
	/** Finishes: [minute, status letter, duration ms]. */
	f?: [number, FinishedLetter, number][];
}

type FinishedLetter = 'c' | 'e' | 't';
const LETTER: Record<FinishedStatus, FinishedLetter> = { completed: 'c', errored: 'e', terminated: 't' };
const STATUS: Record<FinishedLetter, FinishedStatus> = { c: 'completed', e: 'errored', t: 'terminated' };

/** Counters and duration histogram (bucket -> runs) of one minute. */
export interface MinuteSums {
	counts: MinuteCounts;
	histogram: Record<string, number>;
}

/** Whether a delta counts anything. */
export function isEmptyDelta(delta: MetricsDelta): boolean {
	return delta.startedMinute === undefined && delta.finished === undefined;
}

/** The mark stored in a row (null or unreadable: none). */
export function parsePending(text: string | null | undefined): PendingMetrics | undefined {
	if (!text) return undefined;
	try {
		const mark = JSON.parse(text) as PendingMetrics;
		return typeof mark?.u === 'number' ? mark : undefined;
	} catch {
		return undefined;
	}
}

/** The mark of a row if no rollup counted it yet: its `u` at or past the watermark (see the module's note). */
export function uncountedPending(row: { pendingMetrics: string | null }, watermark: number): PendingMetrics | undefined {
	const mark = parsePending(row.pendingMetrics);
	return mark && mark.u >= watermark ? mark : undefined;
}

/** `carried` (a mark not rolled up yet, or none) plus `delta`, stamped with the write's `updatedAt`; undefined when it counts nothing. */
export function mergePending(carried: PendingMetrics | undefined, delta: MetricsDelta, updatedAt: number): PendingMetrics | undefined {
	const s = [...(carried?.s ?? [])];
	const f = [...(carried?.f ?? [])];
	if (delta.startedMinute !== undefined) s.push(delta.startedMinute);
	if (delta.finished) f.push([delta.finished.minute, LETTER[delta.finished.status], delta.finished.durationMs]);
	if (s.length === 0 && f.length === 0) return undefined;
	const mark: PendingMetrics = { u: updatedAt };
	if (s.length) mark.s = s;
	if (f.length) mark.f = f;
	return mark;
}

/** Adds marks (or deltas as marks) into minutes, the way the minute rows count them (a terminated run has no duration bucket). */
export function sumPending(marks: Iterable<PendingMetrics>, into: Map<number, MinuteSums> = new Map()): Map<number, MinuteSums> {
	const minute = (m: number): MinuteSums => {
		let sums = into.get(m);
		if (!sums) into.set(m, (sums = { counts: { minute: m, started: 0, completed: 0, errored: 0, terminated: 0 }, histogram: {} }));
		return sums;
	};
	for (const mark of marks) {
		for (const m of mark.s ?? []) minute(m).counts.started++;
		for (const [m, letter, durationMs] of mark.f ?? []) {
			const sums = minute(m);
			const status = STATUS[letter];
			sums.counts[status]++;
			if (status !== 'terminated') {
				const bucket = String(durationBucket(durationMs));
				sums.histogram[bucket] = (sums.histogram[bucket] ?? 0) + 1;
			}
		}
	}
	return into;
}

/** How far behind the shard's clock a rollup stops: deliveries in flight, and clock skew between objects. */
export const ROLLUP_MARGIN_MS = 10_000;

/**
 * Where a rollup at `now` may move the watermark: the start of the minute `ROLLUP_MARGIN_MS` ago, so
 * each rollup takes whole minutes of writes (one row per minute touched, not one per rollup).
 */
export function rollupBound(now: number): number {
	return Math.floor((now - ROLLUP_MARGIN_MS) / 60_000) * 60_000;
}
