/**
 * How long an instance's alarm handler waits for the work its alarm started (the pass it woke, that
 * pass's index delivery, the publishing of children that ran inline) before it returns and leaves the
 * rest to run on detached, as every alarm's work did before.
 *
 * Why wait at all: Workers tracing closes an invocation's spans when the invocation ends, and a Durable
 * Object's `ctx.waitUntil` does not extend it. A pass the alarm did not await lost its spans' attributes
 * (cut at the alarm's end, with no step name or outcome) and the spans it started later (further steps,
 * a child's RPC, index deliveries) became caller-less roots (docs/decisions.md "An alarm waits for its pass").
 *
 * Why 10 minutes: an alarm handler has 15 minutes of wall time (Durable Objects limits); a pass ends
 * itself after the invocation budget (15 s by default, invocation-budget.ts) at its next step boundary,
 * so only a single step running for minutes reaches this bound. It leaves the handler 5 minutes of margin
 * so that the runtime never cancels it (a cancelled handler is retried as a failure).
 */
export const ALARM_HOLDS_WORK_MS = 10 * 60_000;

/**
 * `work`, or `ms` of wall time, whichever ends first; the timer goes as soon as the work ends (a pending
 * timer would keep the object awake). A failure of the work is not the alarm's: the engine logs and retries it.
 */
export async function holdFor(work: Promise<unknown>, ms: number = ALARM_HOLDS_WORK_MS): Promise<void> {
	let timer: ReturnType<typeof setTimeout> | undefined;
	try {
		await Promise.race([work.then(() => undefined, () => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
	} finally {
		if (timer !== undefined) clearTimeout(timer);
	}
}
