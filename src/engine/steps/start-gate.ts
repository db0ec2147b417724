import { YieldPacer, type YieldReport } from './yield-pacer';

/**
 * Which new steps of a pass may begin now, and when the pass gives the isolate back.
 *
 * Each new step (a `do` attempt, a sleep, a wait, a child, a webhook, ...) takes a place
 * in the pacer's slice as it begins; once the slice is used up, the pass yields to the
 * event loop (see yield-pacer.ts for how long a slice is). Sequential steps yield after
 * the step that filled the slice completes, as they always did. Steps begun in one turn
 * (a `Promise.all` over thousands of `step.do`) used to begin together, every attempt
 * started and its row written before anything else of the isolate ran; now those past
 * the slice wait here, in the order they were called, and each yield lets the next
 * slice of them begin. The order in which steps begin (their seqs, their records) is the
 * order of the calls, as before; only turns of the event loop come between slices.
 */
export class StartGate {
	private readonly pacer: YieldPacer;
	/** Steps waiting for a place in a slice, in the order they were called (`next` is the first still waiting). */
	private readonly waiting: (() => void)[] = [];
	private next = 0;
	/** The yield under way, shared by every step that needs one now. */
	private yielding: Promise<void> | undefined;

	constructor(
		private readonly hooks: { now(): number; yieldToEventLoop(): Promise<YieldReport> },
		/** True once the pass stops beginning steps (a signal, a fatal error, run() settled): those waiting go at once, to be refused. */
		private readonly stopped: () => boolean,
	) {
		this.pacer = new YieldPacer(hooks.now());
	}

	/**
	 * A new step asks to begin: undefined when it may begin now (it took a place in the slice),
	 * else a promise that resolves when its turn comes, after one or more yields.
	 */
	admit(): Promise<void> | undefined {
		if (this.next === this.waiting.length && this.pacer.take()) return undefined;
		const turn = new Promise<void>((resolve) => this.waiting.push(resolve));
		void this.yieldNow();
		return turn;
	}

	/** A step completed: a promise of the yield when the slice is used up (sequential steps yield here), else undefined. */
	stepDone(): Promise<void> | undefined {
		return this.pacer.full() ? this.yieldNow() : undefined;
	}

	private yieldNow(): Promise<void> {
		return (this.yielding ??= this.hooks.yieldToEventLoop().then((report) => {
			this.yielding = undefined;
			this.pacer.yielded(report, this.hooks.now());
			this.release();
		}));
	}

	/** After a yield: the next slice of waiting steps begins (all of them when the pass stopped); more wait for the next yield. */
	private release(): void {
		const stopped = this.stopped();
		while (this.next < this.waiting.length && (stopped || this.pacer.take())) this.waiting[this.next++]!();
		if (this.next < this.waiting.length) void this.yieldNow();
		else {
			this.waiting.length = 0;
			this.next = 0;
		}
	}
}
