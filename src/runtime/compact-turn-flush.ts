/**
 * How long a completed step's put may wait for the next write of the pass (storage format 5: compact-folded-steps.ts
 * `isTurnHeld`): this many microtask turns, then it is put on its own. All of them run before the event loop turns, so
 * the put is in the same implicit transaction (the same commit, behind the same output gate) as it would have been
 * written at once: a step's result is never held across I/O, a timer or a yield (docs/decisions.md "The last step
 * rides in the outcome").
 *
 * The number covers what the engine does between a step's completion and its next write when the workflow's code
 * goes on at once: the step's promise settling through the step API's async frames, the next step's attempt settling
 * within its own turns (attempt.ts SETTLE_TURNS), or the run's end and its outcome (measured: test/runtime/rows-written.test.ts
 * "the last step rides in the outcome"). Code that takes more turns gets the put it always had, one row more.
 */
export const TURN_FLUSH_MICROTASKS = 64;

/**
 * A promise already settled: a reaction on it (`then`) is queued at once, one microtask turn away, in V8's own queue.
 * The chain below ticks through it rather than `queueMicrotask`, which queues a task in the same queue at the same place
 * (the same turns counted, the same flushes) but, in workerd, through a native call that wraps each callback in a new
 * function with the current async context: measured, with a step held through most of a long run (the chain ticks at
 * every turn of the engine's, ~10 per step), those ticks took ~15 µs of a sequential step's ~52 µs of workerd CPU
 * (bench/results/profile-format5-vs-def7611.md).
 */
const SETTLED = Promise.resolve();

/**
 * Runs `flush` after `TURN_FLUSH_MICROTASKS` microtask turns from the last `arm()`, unless `pending()` says by then that
 * the held put went with another write. One chain at a time: arming again while it runs restarts its count.
 */
export class TurnFlush {
	private turns = 0;
	private running = false;

	constructor(
		private readonly pending: () => boolean,
		private readonly flush: () => void,
	) {}

	arm(): void {
		this.turns = 0;
		if (this.running) return;
		this.running = true;
		void SETTLED.then(this.tick);
	}

	private readonly tick = (): void => {
		if (!this.pending()) {
			this.running = false;
			return;
		}
		if (++this.turns < TURN_FLUSH_MICROTASKS) {
			void SETTLED.then(this.tick);
			return;
		}
		this.running = false;
		try {
			this.flush();
		} catch {
			// A failed write keeps the step held (the store's transaction rolls back to it): the next write of the pass takes
			// it, as it takes any write that failed; nothing is lost that a crash here would not lose too.
		}
	};
}
