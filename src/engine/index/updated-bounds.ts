import type { ListPosition, ListOrder } from './index-query';

/**
 * The `created_at` bound a condition on `updated_at` implies. An index shard keeps no index that
 * leads with `updated_at` (drizzle/0023: every delivery moves it, so such an index was a row
 * written per delivery); what asks by `updated_at` walks `(status, created_at, id)` instead, and
 * `created_at <= updated_at` holds for every entry (an instance changes after it is created; the
 * shard stores `max(updatedAt, createdAt)` so a clock stepping back cannot break it:
 * `storedUpdatedAt`). So:
 * - `updatedBefore: u` (exclusive) keeps only entries created before `u`;
 * - a page of the `updatedAt` order after `(at, id)` holds only entries updated at or before
 *   `at`, so created at or before it;
 * - the entries last changed at or before `t` (the retention's due entries) were created at or
 *   before `t`.
 * Nothing bounds `created_at` from below: an entry created a week ago may have changed a moment ago.
 */
export function createdAtMost(filters: { updatedBefore?: number | undefined }, order?: ListOrder, after?: ListPosition): number | undefined {
	let bound: number | undefined;
	if (filters.updatedBefore !== undefined) bound = filters.updatedBefore - 1;
	if (order === 'updatedAt' && after) bound = bound === undefined ? after.at : Math.min(bound, after.at);
	return bound;
}

/** The `updated_at` a shard stores for an entry: never before its `created_at` (see `createdAtMost`). */
export function storedUpdatedAt(entry: { createdAt: number; updatedAt: number }): number {
	return Math.max(entry.createdAt, entry.updatedAt);
}
