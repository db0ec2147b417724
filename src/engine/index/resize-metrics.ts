import { compareEntries } from './index-entry';
import { metricsDelta, type MetricsDelta, type PriorEntry } from './run-metrics';

/** Options of an index shard's write (`indexWrite`). */
export interface IndexWriteOptions {
	/** Copies a rebalance moves here: counted where they first landed, so not again. */
	moved?: boolean;
	/**
	 * While the type is resized: the live rows the previous layout's shard holds for these ids (null: none), read
	 * before this write, which the run metrics count against when this shard has no row of the id.
	 */
	previous?: Record<string, PriorRow | null>;
}

/** A row of an index shard as the run metrics compare a write against it: its state and its position. */
export type PriorRow = PriorEntry & { version: number };

/**
 * What a write counts in its home shard while its type is resized (`previousShards` set, the id's shard
 * changed): `home` is the home shard's row (null: none), `previous` the live row the previous layout's
 * shard holds for the id (null: none there, or a tombstone), read before the write.
 *
 * A home shard with no row of the entry (or only a move tombstone of an earlier resize) cannot tell a new
 * run from one the previous shard already counted: a redelivery of a run that finished before the deploy
 * (a compact run's backstop delivers once more, since it does not store its acknowledgement) would count
 * its start, finish and duration a second time. So it counts against the previous shard's row: nothing
 * if that row is this state or newer (counted there), the change from it otherwise. A home row that is
 * an entry (or a deletion tombstone) is what the shard counted against already, and stays the prior.
 */
export function resizeMetricsDelta(
	home: PriorRow | null,
	previous: PriorRow | null | undefined,
	next: Parameters<typeof metricsDelta>[1] & { version: number },
): MetricsDelta {
	const homeKnows = home !== null && home.status !== '__moved';
	if (homeKnows || !previous) return metricsDelta(home, next);
	if (compareEntries(next, previous) <= 0) return {};
	return metricsDelta(previous, next);
}
