import type { FinishedStatus, ResolvedRetention } from '../definition/registry';
import { FINISHED_STATUSES } from '../support/statuses';

// The index shard expires the finished instances it lists (docs/decisions.md "Retention owned by
// the index shard"): one shard alarm for every run whose retention runs out in the same slot,
// instead of one alarm write per run in each instance. Pure: the times in, the times out.

const HOUR = 3_600_000;
/** The shortest slot: a retention of a few seconds (tests) still groups its runs by the second. */
const MIN_SLOT_MS = 1_000;

/**
 * The precision of a retention of `keepMs` when the shard expires it: a tenth of the retention,
 * at most an hour (a 7-day retention expires within the hour after it runs out). Every run whose
 * expiry falls in one slot is expired by one shard alarm.
 */
export function retentionSlotMs(keepMs: number): number {
	return Math.max(MIN_SLOT_MS, Math.min(HOUR, Math.floor(keepMs / 10)));
}

/** `at` rounded up to the end of its slot: when the shard's alarm for it fires. */
export function slotEnd(at: number, keepMs: number): number {
	const slot = retentionSlotMs(keepMs);
	return Math.ceil(at / slot) * slot;
}

/** When a finished entry (its status and its `updatedAt`) is due to be expired; undefined if its status is kept forever or is not finished. */
export function expiresAt(retention: ResolvedRetention, status: string, updatedAt: number): number | undefined {
	if (!FINISHED_STATUSES.includes(status as FinishedStatus)) return undefined;
	const keep = retention[status as FinishedStatus];
	return keep === null ? undefined : updatedAt + keep;
}

/**
 * When the shard's alarm should fire for its expiries: the slot end of the earliest
 * expiry, given each finished status's oldest `updatedAt` (undefined: none with that status).
 */
export function nextExpiry(retention: ResolvedRetention, oldest: Partial<Record<FinishedStatus, number>>): number | undefined {
	let next: number | undefined;
	for (const status of FINISHED_STATUSES as readonly FinishedStatus[]) {
		const updatedAt = oldest[status];
		const keep = retention[status];
		if (updatedAt === undefined || keep === null) continue;
		const at = slotEnd(updatedAt + keep, keep);
		if (next === undefined || at < next) next = at;
	}
	return next;
}

/**
 * The shard's one alarm: the earliest of its duties' next times (the retention sweep, and any
 * other duty a shard takes on, such as a periodic metrics export), never before `now`.
 */
export function nextShardAlarm(now: number, duties: readonly (number | undefined)[]): number | undefined {
	let next: number | undefined;
	for (const at of duties) if (at !== undefined && (next === undefined || at < next)) next = at;
	return next === undefined ? undefined : Math.max(now, next);
}

/** How long a sweep waits before asking again about instances that did not answer, or are still deleting. */
export function sweepRetryMs(keepMs: number): number {
	return Math.max(retentionSlotMs(keepMs), 60_000);
}
