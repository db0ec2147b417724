import type { StepRow } from '../storage/store';
import type { StepKind } from '../support/step-kinds';

/** Where the code and the recorded steps parted: the engine stores it with status `diverged`. */
export interface Divergence {
	/** How many recorded steps the code reached, in order, before it parted (0-based position of `recorded`). */
	position: number;
	/** The first recorded step the code did not reach; null if every recorded step was reached. */
	recorded: { kind: StepKind; name: string } | null;
	/** What the code asked for instead: a step, or `end` when `run()` settled first. */
	requested: { kind: StepKind | 'end'; name: string };
}

/**
 * Divergence tracking of one pass: which steps the code reached (claimed), how many of
 * the steps recorded before the pass that makes, and whether a new step may be recorded
 * now. A step with no record while recorded steps remain unreached means the code
 * changed under the instance (or a step name is not deterministic): nothing new runs.
 */
export class ReplayFrontier {
	/** Steps this pass reached (asked for), by key. */
	private readonly claimed = new Set<string>();
	/** Steps recorded before this pass (patch markers aside), and how many of them this pass reached. */
	private readonly recorded: ReadonlySet<string>;
	private readonly recordedBefore: readonly StepRow[];
	private reached = 0;

	constructor(
		rows: Iterable<StepRow>,
		private readonly yieldToEventLoop: () => Promise<unknown>,
	) {
		const recorded = new Set<string>();
		const before: StepRow[] = [];
		for (const row of rows) {
			before.push(row);
			if (row.kind !== 'patch') recorded.add(row.key);
		}
		this.recorded = recorded;
		this.recordedBefore = before;
	}

	/** Steps recorded before the pass (patch markers aside). */
	get recordedCount(): number {
		return this.recorded.size;
	}

	/** How many steps the pass reached so far. */
	get claimedCount(): number {
		return this.claimed.size;
	}

	/** Whether the pass reached the step `key`. */
	has(key: string): boolean {
		return this.claimed.has(key);
	}

	/** The pass reaches `key`: false if it already had (a step name used twice). */
	claim(key: string): boolean {
		if (this.claimed.has(key)) return false;
		this.claimed.add(key);
		if (this.recorded.has(key)) this.reached++;
		return true;
	}

	/** A recorded step asked for after run() settled: not run, but reached, so it is no divergence. */
	reachAfterClose(key: string): void {
		if (this.recorded.has(key)) this.claim(key);
	}

	/** Some recorded steps are not reached yet in this pass. */
	behind(): boolean {
		return this.reached < this.recorded.size;
	}

	/**
	 * Whether this pass has reached every recorded step. Parallel branches replay in
	 * microtask rounds, so a branch may ask for a new step while a sibling has yet to
	 * reach its recorded ones: turns of the event loop let every cached step answer first.
	 */
	async atFrontier(): Promise<boolean> {
		while (this.behind()) {
			const reached = this.reached;
			await this.yieldToEventLoop();
			// A sibling that moved (a long replay yields every REPLAYED_STEPS_PER_YIELD steps) gets
			// another turn; once a turn passes with no recorded step reached, the rest is not coming.
			if (this.reached === reached) return !this.behind();
		}
		return true;
	}

	/** The code asked for a new step `kind` `name`: undefined when it may be recorded, else where the code parted. */
	async divergenceAt(kind: StepKind, name: string): Promise<Divergence | undefined> {
		if (await this.atFrontier()) return undefined;
		return { ...this.firstUnreached(), requested: { kind, name } };
	}

	/**
	 * The steps `run()` never reached although they were recorded, when it settled
	 * without a suspension: the code dropped a step the history has.
	 */
	async unreachedAtEnd(): Promise<Divergence | undefined> {
		if (!this.behind()) return undefined;
		// Branches still replaying (say, the losers of a Promise.race) get their turn first.
		if (await this.atFrontier()) return undefined;
		return { ...this.firstUnreached(), requested: { kind: 'end', name: 'run() settled' } };
	}

	/**
	 * The first recorded step (by seq) this pass did not reach, and its position: its index
	 * among every step recorded before the pass, patch markers included (as `replayHistory`
	 * and `GET /workflows/:id/steps` count).
	 */
	private firstUnreached(): { position: number; recorded: { kind: StepKind; name: string } | null } {
		const before = [...this.recordedBefore].sort((a, b) => a.seq - b.seq);
		const index = before.findIndex((row) => this.recorded.has(row.key) && !this.claimed.has(row.key));
		if (index < 0) return { position: before.length, recorded: null };
		const row = before[index]!;
		return { position: index, recorded: { kind: row.kind, name: row.name } };
	}
}
