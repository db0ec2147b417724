/**
 * When a run of new steps gives the isolate back to other work (start-gate.ts asks it
 * whether a step may begin, and yields when it says the slice is used up).
 *
 * A yield is not free in a Durable Object: the writes made since the last one
 * commit as one implicit transaction when the event loop turns, so a yield
 * every few CPU-light steps costs a commit each time (about 1 ms on the
 * benchmark machines, several times the steps themselves). Yielding rarely
 * keeps other requests of the isolate waiting. workerd freezes the clock
 * during synchronous work, so a slice is counted in steps, and sized by time
 * after the fact: the clock does move across a yield, so each yield tells how
 * long the round since the previous one took (the slice and its commit).
 *
 * While nobody else shows up, a slice doubles while its round took under half
 * of `SLICE_MS` and halves once it took more than `SLICE_MS`, from
 * `FIRST_STEPS_PER_YIELD` (a 10-step instance commits once) up to
 * `MAX_STEPS_PER_YIELD`: CPU-light steps commit every few hundred, a costly
 * step gets a slice of its own, and no request of the isolate waits for more
 * than about `SLICE_MS` of our work. A yield during which other work of the
 * isolate began (a request, an RPC, an alarm) gives requests the isolate: the
 * next slices are short (`MIN_STEPS_PER_YIELD`), so a client polling meets a
 * 2-step slice at each crossing of the isolate. Short slices are not allowed
 * to starve the run: while others keep arriving, the pass checks its own
 * progress every `RATE_WINDOW_MS` and doubles its contended slice while it
 * made fewer than `MIN_STEPS_PER_MS` (halves it again when it made more), so
 * eight busy clients still leave a long run hundreds of steps a second. Slices
 * grow by time again only once `CALM_MS` have passed since others last showed
 * up: requests come in bursts, and the next one of a burst must not find a
 * long slice in its way.
 */
export const MIN_STEPS_PER_YIELD = 2;
export const MAX_STEPS_PER_YIELD = 1024;
/** A pass's first slice, before any yield has said how long a round takes: a short run (10 steps) commits once. */
export const FIRST_STEPS_PER_YIELD = 16;
/** The longest a round of our own work (a slice and its commit) should keep others of the isolate waiting. */
export const SLICE_MS = 10;
export const CALM_MS = 250;
/** The least progress a run keeps while others keep the isolate busy (500 steps a second). */
export const MIN_STEPS_PER_MS = 0.5;
export const RATE_WINDOW_MS = 50;

export type YieldReport = boolean | undefined | void;

export class YieldPacer {
	private interval = FIRST_STEPS_PER_YIELD;
	private sinceYield = 0;
	private othersLastSeen = Number.NEGATIVE_INFINITY;
	/** The clock after the last yield (or when the pass began): a round is the time from it to the next yield's end. */
	private lastYieldAt: number;
	/** The slice while others keep arriving; grows when the run falls under `MIN_STEPS_PER_MS`. */
	private contended = MIN_STEPS_PER_YIELD;
	private steps = 0;
	private windowStart: number | undefined;
	private windowSteps = 0;

	/** `startedAt`: when the pass began (its first round starts then). */
	constructor(startedAt = 0) {
		this.lastYieldAt = startedAt;
	}

	/** A new step begins: counts it and answers true while the slice has room for it, else false (the pass must yield first). */
	take(): boolean {
		if (this.sinceYield >= this.interval) return false;
		this.steps++;
		this.sinceYield++;
		return true;
	}

	/** Whether the slice is used up: the pass should yield now. */
	full(): boolean {
		return this.sinceYield >= this.interval;
	}

	/** Adapts the pace to what the yield found; `now` is the clock after the yield. */
	yielded(othersRan: YieldReport, now: number): void {
		const round = now - this.lastYieldAt;
		this.lastYieldAt = now;
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
			// Nobody for a while (or yet): the slice follows the time its rounds take.
			if (round > SLICE_MS) this.interval = Math.max(Math.floor(this.interval / 2), MIN_STEPS_PER_YIELD);
			else if (round * 2 <= SLICE_MS) this.interval = Math.min(this.interval * 2, MAX_STEPS_PER_YIELD);
		}
	}
}
