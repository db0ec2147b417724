import type { IndexEntry } from './index-entry';
import { OUTBOX_GRACE_MS } from '../support/timing';

/**
 * When an instance's pending index entry must reach its shard, and whether it may wait until then
 * (docs/decisions.md "A status that ends before its delivery is due is not sent alone").
 *
 * Every status change stages its entry in the instance's outbox with a deadline: the time by which
 * it is delivered whatever happens (the alarm is armed by then, so a crash or an evicted isolate
 * delays it at most that long). The deadline belongs to the first change since the last delivery:
 * a later change of an entry still unsent keeps it, so a run that changes status every second is
 * listed within `OUTBOX_GRACE_MS` of its first unsent change, never pushed back by the next one.
 */

/** The pending entry as the outbox holds it (storage's `OutboxRow`: read, not imported, as `index/` sits below `storage/`). */
export interface PendingDelivery {
	entry: IndexEntry;
	/** Failed deliveries in a row; above 0 the deadline is the backoff's next attempt. */
	attempts: number;
	nextAttemptAt: number;
}

/**
 * The deadline of an entry staged at `now`: the pending one's when an entry is still pending (unsent,
 * or backing off after failed deliveries), else `now + OUTBOX_GRACE_MS`. A pending entry whose
 * deadline has passed keeps it too: it is due, and the new entry is sent at once.
 */
export function deliveryDeadline(pending: PendingDelivery | undefined, now: number): number {
	return pending ? pending.nextAttemptAt : now + OUTBOX_GRACE_MS;
}

/**
 * Whether an entry is left pending rather than sent now, because its status ends before its deadline:
 * a `sleeping` instance (a sleep or a retry's delay) whose next wake-up is at or before the deadline.
 * The pass that wake-up starts writes the next status, which supersedes this entry in the outbox (as
 * the 20 ms coalescing supersedes the statuses of a busy moment); if it does not, the alarm sends
 * the entry at the deadline. Not `waiting`: its wake-up may be a poll for a child or the timeout of
 * one wait among others, which end nothing, and its usual end, an event, is not scheduled. Not an
 * entry whose deadline has come, nor a removal.
 */
export function endsBeforeDeadline(entry: IndexEntry, wakeAt: number | undefined, deadline: number, now: number): boolean {
	return entry.status === 'sleeping' && entry.removed !== true && wakeAt !== undefined && wakeAt <= deadline && now < deadline;
}
