/** The instance's clocks: the outbox's retry schedule, the watchdog and the backoff of passes cut short. */

/** Retry schedule of index deliveries (and of every retried delivery of the engine): 1 s doubling to at most 5 minutes. */
export function outboxBackoffMs(attempts: number): number {
	return Math.min(1000 * 2 ** Math.max(0, attempts - 1), 300_000);
}
/**
 * How long a fresh outbox row may wait for its in-memory delivery before the alarm retries it; also the deadline of the
 * first change not yet delivered, which later changes keep (index/delivery-deadline.ts): the index shows every status
 * within this long of it.
 */
export const OUTBOX_GRACE_MS = 10_000;
/**
 * While a pass runs, the alarm stays armed this far ahead: if the isolate
 * dies mid-step, the alarm brings the instance back and the replay goes on.
 * An alarm that fires while the pass still runs arms the next one, so the
 * watchdog covers a step or a run of any length.
 */
export const WATCHDOG_MS = OUTBOX_GRACE_MS;

/**
 * How long after the n-th pass in a row that was cut short (the isolate died mid-pass) the
 * next may start: the watchdog's 10 s, doubling from the second to at most 5 minutes. A crash
 * is usually a one-off; a pass that a memory or CPU limit kills every time would otherwise
 * restart every 10 s forever, resetting every object of its isolate each time.
 */
export function cutPassBackoffMs(count: number): number {
	return Math.min(WATCHDOG_MS * 2 ** Math.max(0, count - 1), 300_000);
}
/** How long an index update waits for newer transitions to supersede it before it is sent. */
export const INDEX_COALESCE_MS = 20;
/**
 * How long a first pass's `running`, held in memory (kernel.ts `startRunning`), may stay out of the index: a delivery
 * waits this long after it for the pass to end (its outcome is then the entry, and `running` is never written), then
 * writes it and delivers it. A run of short steps ends well within it; a pass that outlasts it shows `running` at most
 * this late.
 */
export const RUNNING_SHOWN_WITHIN_MS = 1000;
