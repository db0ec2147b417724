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
 * alarm) gives requests the isolate: the next slices are short
 * (`MIN_STEPS_PER_YIELD`), so a client polling meets a 2-step slice at each
 * crossing of the isolate. Short slices are not allowed to starve the run:
 * while others keep arriving, the pass checks its own progress every
 * `RATE_WINDOW_MS` and doubles its contended slice while it made fewer than
 * `MIN_STEPS_PER_MS` (halves it again when it made more), so eight busy
 * clients still leave a long run hundreds of steps a second. A yield with
 * nobody waiting doubles the slice, up to `MAX_STEPS_PER_YIELD`, but only
 * once `CALM_MS` have passed since others last showed up: requests come in
 * bursts, and the next one of a burst must not find a long slice in its way.
 * A lone long run commits every 128 steps.
 */
export const MIN_STEPS_PER_YIELD = 2;
export const MAX_STEPS_PER_YIELD = 128;
/** A pass's first slice, before any yield has said whether others wait: a short run (10 steps) commits once. */
export const FIRST_STEPS_PER_YIELD = 16;
export const CALM_MS = 250;
/** The longest slice in a pass's first `CALM_MS` while nobody else has shown up. */
export const EARLY_MAX_STEPS_PER_YIELD = 32;
/** The least progress a run keeps while others keep the isolate busy (500 steps a second). */
export const MIN_STEPS_PER_MS = 0.5;
export const RATE_WINDOW_MS = 50;

/**
 * What a host's yield reports: whether other work of the isolate ran while
 * the pass was yielding (`undefined`: the host cannot tell, so the pass keeps
 * the short pace).
 */
export type YieldReport = boolean | undefined | void;

export class YieldPacer {
	private interval = FIRST_STEPS_PER_YIELD;
	private sinceYield = 0;
	private othersLastSeen: number;
	/** The slice while others keep arriving; grows when the run falls under `MIN_STEPS_PER_MS`. */
	private contended = MIN_STEPS_PER_YIELD;
	private steps = 0;
	private windowStart: number | undefined;
	private windowSteps = 0;

	/** `startedAt`: when the pass began; slices grow only once `CALM_MS` have passed without others since then. */
	constructor(startedAt = Number.NEGATIVE_INFINITY) {
		this.othersLastSeen = startedAt;
	}

	/** Counts one new step; true when the pass should yield now. */
	stepDone(): boolean {
		this.steps++;
		return ++this.sinceYield >= this.interval;
	}

	/** Adapts the pace to what the yield found; `now` is the clock after the yield. */
	yielded(othersRan: YieldReport, now: number): void {
		this.sinceYield = 0;
		if (othersRan !== false) {
			if (this.windowStart === undefined || now - this.othersLastSeen >= CALM_MS) {
				this.windowStart = now;
				this.windowSteps = this.steps;
			} else if (now - this.windowStart >= RATE_WINDOW_MS) {
				const rate = (this.steps - this.windowSteps) / (now - this.windowStart);
				this.contended = rate < MIN_STEPS_PER_MS ? Math.min(this.contended * 2, MAX_STEPS_PER_YIELD) : Math.max(this.contended / 2, MIN_STEPS_PER_YIELD);
				this.windowStart = now;
				this.windowSteps = this.steps;
			}
			this.interval = this.contended;
			this.othersLastSeen = now;
		} else if (now - this.othersLastSeen >= CALM_MS) {
			this.interval = Math.min(this.interval * 2, MAX_STEPS_PER_YIELD);
		} else if (this.windowStart === undefined) {
			// Nobody seen yet, but the pass is young: grow only to `EARLY_MAX_STEPS_PER_YIELD`, so a request that
			// comes just after a create meets a short slice, not a 128-step one.
			this.interval = Math.min(this.interval * 2, Math.max(this.interval, EARLY_MAX_STEPS_PER_YIELD));
		}
	}
}
