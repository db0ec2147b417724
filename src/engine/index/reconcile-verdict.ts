import { compareEntries, type IndexEntry } from './index-entry';

/**
 * What reconciling one listed entry against its instance finds:
 * - `unchanged`: the shard holds exactly the instance's entry.
 * - `stale`: the instance has moved on (higher version, or a later incarnation of the id), or the entry differs at the
 *   same version, or the instance has another type: write the instance's entry.
 * - `orphan`: no instance has this id: the entry is removed (a tombstone at its version,
 *   so a late delivery of that version cannot bring it back, while a newer one still can).
 * - `ahead`: the shard holds a higher version than the instance has. The engine never
 *   produces this (versions only grow and shards keep the highest); it is reported and
 *   left alone, since overwriting a newer version would defeat versioned upserts.
 */
export type ReconcileVerdict = 'unchanged' | 'stale' | 'orphan' | 'ahead';

export function reconcileVerdict(listed: IndexEntry, truth: IndexEntry | null, type: string): ReconcileVerdict {
	if (truth === null) return 'orphan';
	if (truth.type !== type) return 'stale';
	// A later incarnation of the id (deleted, then created again) is newer whatever its version.
	const order = compareEntries(truth, listed);
	if (order < 0) return 'ahead';
	if (order > 0) return 'stale';
	const same =
		listed.status === truth.status &&
		listed.updatedAt === truth.updatedAt &&
		listed.type === truth.type;
	return same ? 'unchanged' : 'stale';
}
