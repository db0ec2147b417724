/**
 * When a run of new steps gives the isolate back to other work.
 *
 * A yield is not free in a Durable Object: the writes made since the last one
 * commit as one implicit transaction when the event loop turns, so a yield
 * every few CPU-light steps costs a commit each time (1-3 ms on the benchmark
 * machines, several times the steps themselves). Yielding rarely keeps other
 * requests of the isolate waiting. workerd freezes the clock during synchronous
 * work, so the pace is counted in steps and adapts to what the yields find:
 * a yield during which other work of the isolate ran (a request, an RPC, an
 * alarm) sets the pace back to `MIN_STEPS_PER_YIELD`; a yield with nobody
 * waiting doubles it, up to `MAX_STEPS_PER_YIELD`, but only once
 * `CALM_MS` have passed since others last showed up: requests come in
 * bursts (a client polling, a page loading), and the next one of a burst
 * must not find a long slice in its way. A lone long run commits every few
 * hundred steps; a run with a poller keeps its slices short.
 */
export const MIN_STEPS_PER_YIELD = 2;
export const MAX_STEPS_PER_YIELD = 128;
/** A pass's first slice, before any yield has said whether others wait: a short run (10 steps) commits once. */
export const FIRST_STEPS_PER_YIELD = 16;
export const CALM_MS = 250;

/**
 * What a host's yield reports: whether other work of the isolate ran while
 * the pass was yielding (`undefined`: the host cannot tell, so the pass keeps
 * the short pace).
 */
export type YieldReport = boolean | undefined | void;

export class YieldPacer {
	private interval = FIRST_STEPS_PER_YIELD;
	private sinceYield = 0;
	private othersLastSeen = Number.NEGATIVE_INFINITY;

	/** Counts one new step; true when the pass should yield now. */
	stepDone(): boolean {
		return ++this.sinceYield >= this.interval;
	}

	/** Adapts the pace to what the yield found; `now` is the clock after the yield. */
	yielded(othersRan: YieldReport, now: number): void {
		this.sinceYield = 0;
		if (othersRan !== false) {
			this.interval = MIN_STEPS_PER_YIELD;
			this.othersLastSeen = now;
		} else if (now - this.othersLastSeen >= CALM_MS) {
			this.interval = Math.min(this.interval * 2, MAX_STEPS_PER_YIELD);
		}
	}
}
