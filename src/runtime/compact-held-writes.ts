import type { StoredStep } from './compact-history';
import type { InstanceRecord } from './compact-instance-record';
import { isTurnHeld } from './compact-folded-steps';
import { TurnFlush } from './compact-turn-flush';

/**
 * The writes a compact instance at storage format 5 holds for a later one (compact-instance-store.ts):
 * - steps whose put waits for the next write (compact-folded-steps.ts `placeSteps`): a sleep or a wait for the record's
 *   next put (its `sleeping` or `waiting` status), and a completed step for the next write of its turn; a completed
 *   step and the sleep or wait set right after it wait together, so both ride in the status's put;
 * - the instance record's put, when the transaction that changed it consumed the event a wait held in the record
 *   (the wait completed, the event taken out, `event.consumed`): it waits for the next write of its turn (the run's
 *   next step, its outcome), as a completed step does. Storage keeps the event and the waiting wait until that put.
 * Whatever is held for the turn is put by a microtask chain before the event loop turns (compact-turn-flush.ts), so it
 * commits with the turn's other writes, as it did when it was put at once (docs/decisions.md "A compact encoding of
 * format 5").
 */
export class HeldWrites {
	/** Steps whose put waits for the next write, in seq order. */
	steps: StoredStep[] = [];
	/** The version of the instance row storage holds (read or put last): a put that writes a newer one stages a status. */
	storedVersion: number | undefined;
	/** The record as its held put would write it, kept to restore it when a later transaction of the turn fails. */
	private record: InstanceRecord | undefined;
	private readonly flush: TurnFlush;

	constructor(flush: () => void) {
		this.flush = new TurnFlush(() => this.inTurn(), flush);
	}

	/** Something waits for a write. */
	any(): boolean {
		return this.steps.length > 0 || this.record !== undefined;
	}

	get recordHeld(): boolean {
		return this.record !== undefined;
	}

	/**
	 * The record's put may wait: it writes no newer row than storage holds, so it stages no index entry whose delivery
	 * could go out before the put is issued (a status change is put at once, as always).
	 */
	mayHold(record: InstanceRecord): boolean {
		return record.row.version === this.storedVersion;
	}

	holdRecord(record: InstanceRecord): void {
		this.record = structuredClone(record);
	}

	/** The record's put went (or goes in this transaction). */
	releaseRecord(): void {
		this.record = undefined;
	}

	/** The record as its held put would write it (a transaction after it failed: what the isolate keeps goes back to it). */
	restoredRecord(): InstanceRecord | undefined {
		return this.record && structuredClone(this.record);
	}

	/** What is held now, to go back to when a transaction fails (`restore`). */
	saved(): { steps: StoredStep[]; record: InstanceRecord | undefined } {
		return { steps: [...this.steps], record: this.record };
	}

	restore(saved: { steps: StoredStep[]; record: InstanceRecord | undefined }): void {
		this.steps = saved.steps;
		this.record = saved.record;
		this.armIfTurn();
	}

	find(seq: number): StoredStep | undefined {
		return this.steps.find((step) => step.seq === seq);
	}

	/** Arms the flush when something is held for the turn: a completed step, or the record's put. */
	armIfTurn(): void {
		if (this.inTurn()) this.flush.arm();
	}

	private inTurn(): boolean {
		return this.record !== undefined || this.steps.some(isTurnHeld);
	}
}
