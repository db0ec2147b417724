import { UNFINISHED_STEP_STATUSES } from '../engine/support/statuses';
import type { StoredStep } from './compact-history';
import type { StepIndex } from './compact-step-index';
import type { CompactWakeups } from './compact-wakeups';

/** What the step-borne wake-ups need of the compact store (compact-instance-store.ts). */
export interface StepWakeupHost {
	index(): StepIndex;
	/** The step as this transaction left it, if this transaction wrote it (its put is still to come). */
	pending(seq: number): StoredStep | undefined;
	/** The step as this transaction left it or as storage holds it. */
	get(seq: number): StoredStep | undefined;
	/** Writes the step (at the transaction's end when in one). */
	store(step: StoredStep): void;
}

/**
 * The compact layout's format 2 (runtime/compact-format.ts): a wake-up of a step that the same transaction writes
 * (a sleep, a retry's delay, an event's timeout) is kept in the step's own value (`wk`) instead of a `w:` key of its
 * own, so setting it costs no row (the step's put carries it) and the step's finishing write clears it at no cost
 * (a finished step never waits: `storeStep` drops it). Every other wake-up (a continuation, the child cascade, one set
 * apart from its step's write) keeps its `w:` key (compact-wakeups.ts). The two are one set of wake-ups: a key has
 * one or the other, never both, and the earliest is the smaller of the two sources' (docs/decisions.md "Wake-ups in
 * their steps' keys"). Each write of it is in the caller's transaction, so a crash keeps both or neither.
 */
export class StepWakeups {
	constructor(
		private readonly host: StepWakeupHost,
		private readonly keyed: CompactWakeups,
		/** Format 2: a wake-up of a step this transaction writes goes in the step's key. Format 1 reads those, sets none. */
		private readonly inSteps: boolean,
	) {}

	set(key: string, at: number): void {
		const index = this.host.index();
		const seq = index.seqOfKey(key);
		const step = seq === undefined ? undefined : this.host.pending(seq);
		if (this.inSteps && seq !== undefined && step && UNFINISHED_STEP_STATUSES.includes(step.status)) {
			step.wk = at;
			index.set(seq, step);
			// One source per key: an older wake-up of the key under `w:` goes (no row unless there was one).
			this.keyed.deleteWakeup(key);
			return;
		}
		this.clear(key);
		this.keyed.setWakeup(key, at);
	}

	delete(key: string): void {
		this.clear(key);
		this.keyed.deleteWakeup(key);
	}

	take(key: string): boolean {
		const borne = this.clear(key);
		return this.keyed.takeWakeup(key) || borne;
	}

	deleteDue(now: number, spare: ReadonlySet<string>): void {
		this.keyed.deleteWakeupsDue(now, spare);
		for (const [seq, step] of this.bearing()) if (step.wk! <= now && !spare.has(step.key)) this.clearAt(seq);
	}

	deleteAll(): void {
		this.keyed.deleteAllWakeups();
		for (const [seq] of this.bearing()) this.clearAt(seq);
	}

	earliest(): number | undefined {
		let earliest = this.keyed.earliestWakeup();
		for (const [, step] of this.bearing()) if (earliest === undefined || step.wk! < earliest) earliest = step.wk;
		return earliest;
	}

	/** The steps that bear a wake-up, by seq (copied: clearing one changes the index). */
	private bearing() {
		return [...this.host.index().bearing()];
	}

	/** Clears the wake-up step `key` bears; true when it bore one. */
	private clear(key: string): boolean {
		const seq = this.host.index().seqOfKey(key);
		return seq !== undefined && this.clearAt(seq);
	}

	/** A step rewritten without its wake-up: free when this transaction writes it anyway, else 1 row (as a `w:` delete). */
	private clearAt(seq: number): boolean {
		if (this.host.index().get(seq)?.wk === undefined) return false;
		const step = this.host.get(seq);
		if (!step) return false;
		const { wk: _wk, ...rest } = step;
		this.host.store(rest);
		return true;
	}
}
