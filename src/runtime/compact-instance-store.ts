import type { HistoryKind, HistoryMeta, HistoryRow, NewHistoryRow } from '../engine/history/history';
import { takeWithinBytes } from '../engine/history/history';
import { historyRecordBytes } from '../engine/definition/instance-limits';
import { UNFINISHED_STEP_STATUSES } from '../engine/support/statuses';
import type { HistoryRange, InstanceRow, InstanceStore, StepRow } from '../engine/storage/store';
import { KV, pack, seqKey, seqOf, unpack } from './compact-keys';
import { findRecords, historyTail, lastStreamMessageIn, toHistoryMeta, toHistoryRow, toStepRow, type CarriedRecord, type StoredRecord, type StoredStep } from './compact-history';
import { removeSteps } from './compact-step-removal';
import { StepIndex } from './compact-step-index';
import { CompactParts } from './compact-parts';
import { foldable, smallRecord, packRow, storedRecord, unpackRow, type InstanceRecord } from './compact-instance-record';
import { recordsInRow } from './step-records';
import { StepWakeups } from './compact-step-wakeups';
import { stepsLastRecordSeq, type StepSource } from './compact-step-queries';
import type { CompactStart } from './compact-format';
import { MAX_HELD_EVENT_CHARS, MAX_HELD_EVENTS, placeSteps, prunedFolded, spillTurnHeld, waitsFor } from './compact-folded-steps';
import { HeldWrites } from './compact-held-writes';
import { leanCopy } from './compact-step-values';
import { fullRecord } from './compact-lean-record';
import { encodeInstance, readInstanceValue } from './compact-record-codec';
import { encodeStep, readStepValue } from './compact-step-codec';

const UNREAD = Symbol('unread');
type Known<T> = T | typeof UNREAD;

/**
 * At most this many records ride in one step's key (each small, or the step's result itself): every put of the step
 * carries them again. Beyond, a record takes a key of its own, as it would have before.
 */
const MAX_CARRIED_RECORDS = 32;

/**
 * `InstanceStore` over the object's synchronous key-value storage (`ctx.storage.kv`): the compact
 * instance layout (docs/decisions.md "The compact instance layout"). A new instance writes no schema
 * (the key-value table costs nothing to create); its record, one key per step and the few records
 * nothing else stands for are 1 row written each. A transaction (`transactionSync` covers key-value
 * storage as it does SQL) writes the instance record once at its end, whatever it changed of it: a
 * status change, its pending index entry and its history record are one put. What only this store
 * writes (the record, the history's tail, the earliest wake-up, the steps' seqs) it keeps, and
 * forgets when a transaction fails.
 */
export class CompactInstanceStore extends CompactParts implements InstanceStore {
	/** A compact instance's retention is its index shard's to run (engine/index/retention-sweep.ts). */
	readonly expiredByIndex = true;
	private record: Known<InstanceRecord | undefined> = UNREAD;
	private depth = 0;
	/** In a transaction: the record changed and is put at its end. */
	private dirty = false;
	/** In a transaction: small records appended before the record exists, folded in when it is written (else given keys at the end). */
	private held: StoredRecord[] = [];
	private lastHistorySeq: number | undefined;
	private tailFrom: number | undefined = 0;
	private tailBytes = 0;
	/** Every step without its value, by seq (undefined: not read yet). */
	private steps: StepIndex | undefined;
	/**
	 * In a transaction: the steps it wrote, put once at its end (a transaction is atomic: a put at its end is the same
	 * write), so that a record appended after its step rides in the step's put instead of a key or a record put of its own.
	 */
	private pendingSteps = new Map<number, StoredStep>();
	/** In a transaction: the seq of the step written last, which the records appended after it may ride with. */
	private lastWritten: number | undefined;
	/** The wake-ups, those its steps bear (format 2) and those under keys of their own (compact-step-wakeups.ts). */
	private readonly allWakeups: StepWakeups;
	/** The steps, and the record's put, waiting for the next write (storage format 5: compact-held-writes.ts); put before the turn ends otherwise. */
	private readonly holds = new HeldWrites(() => this.flushHeld());

	constructor(
		storage: DurableObjectStorage,
		private readonly start: CompactStart = {},
	) {
		super(storage);
		this.allWakeups = new StepWakeups(
			{ index: () => this.stepIndex(), pending: (seq) => this.pendingSteps.get(seq), get: (seq) => this.stepGet(seq), store: (step) => this.storeStep(step) },
			this.wakeups,
			start.format === 2,
		);
		if (start.empty) {
			this.record = undefined;
			this.outbox.startEmpty();
			this.lastHistorySeq = 0;
			this.wakeups.startEmpty();
			this.steps = new StepIndex();
			this.events.startEmpty();
		}
	}

	transaction<T>(fn: () => T): T {
		// Nested: what the outer transaction changed of the record and has not written yet is kept aside, so that a
		// rollback of this one forgets only its own changes (the outer one's are written at its end, as usual).
		const record = this.record;
		// A deferred sleep, a held record's put, are not this transaction's writes: a rollback of it leaves them held still.
		const holds = this.holds.saved();
		const outer: { record: Known<InstanceRecord | undefined>; held: StoredRecord[]; dirty: boolean; steps: Map<number, StoredStep>; lastWritten: number | undefined } | undefined =
			this.depth > 0
				? {
						record: record === UNREAD || record === undefined ? record : { ...record, recs: [...record.recs], ...(record.st ? { st: [...record.st] } : {}), ...(record.ev ? { ev: [...record.ev] } : {}) }, held: [...this.held], dirty: this.dirty,
						steps: new Map([...this.pendingSteps].map(([seq, step]) => [seq, { ...step, ...(step.more ? { more: [...step.more] } : {}) }])), lastWritten: this.lastWritten,
					}
				: undefined;
		try {
			return this.storage.transactionSync(() => {
				this.depth++;
				try {
					const result = fn();
					if (this.depth === 1) this.endTransaction();
					return result;
				} finally {
					this.depth--;
					if (this.depth === 0) {
						this.dirty = false;
						this.held = [];
						this.pendingSteps = new Map();
						this.lastWritten = undefined;
					}
				}
			});
		} catch (error) {
			// What this store remembers of what was written inside may have been rolled back.
			this.outbox.forget();
			this.lastHistorySeq = undefined;
			this.wakeups.forget();
			this.steps = undefined;
			this.events.forget();
			this.holds.restore(holds);
			// The isolate keeps what the record's held put would write.
			this.record = outer ? outer.record : (this.holds.restoredRecord() ?? UNREAD);
			this.held = outer ? outer.held : [];
			this.dirty = outer ? outer.dirty : false;
			this.pendingSteps = outer ? outer.steps : new Map();
			this.lastWritten = outer ? outer.lastWritten : undefined;
			throw error;
		}
	}

	/** The end of a transaction: each step it wrote once, the record once, and the held records the record did not take. */
	private endTransaction(): void {
		const recordHeld = this.holds.recordHeld;
		let consumed = false;
		// Only when there is a step to place: a transaction of other writes builds no step index for it.
		if (this.pendingSteps.size > 0 || this.holds.steps.length > 0) {
			const placed = placeSteps({ fold: this.start.foldSleeps === true, index: this.stepIndex(), pending: this.pendingSteps, record: this.readRecord(), dirty: this.dirty, deferred: this.holds.steps });
			this.dirty = placed.dirty;
			this.holds.steps = placed.deferred;
			consumed = placed.consumed;
		}
		const keys = this.pendingSteps.size > 0 || this.held.length > 0;
		this.flushSteps();
		for (const record of this.held) this.putRecordKey(record);
		this.held = [];
		// A wait's consumption of the event the record held, no status staged, nothing else put: the put waits for its turn's next write (compact-held-writes.ts).
		if (this.dirty && consumed && !keys && this.holds.mayHold(this.readRecord()!)) this.holds.holdRecord(this.readRecord()!);
		else if (this.dirty || (recordHeld && keys)) {
			this.holds.releaseRecord();
			this.putInstance();
		}
		this.holds.armIfTurn();
		this.dirty = false;
	}

	/** Puts what waits for the next write: the held steps where `placeSteps` puts them, the held record (and what it takes of them). */
	private flushHeld(): void {
		this.transaction(() => {
			if (this.holds.recordHeld) this.dirty = true;
		});
	}

	protected readRecord(): InstanceRecord | undefined {
		if (this.record === UNREAD) this.holds.storedVersion = (this.record = fullRecord(readInstanceValue(this.kv.get(KV.instance))))?.row.version;
		return this.record;
	}

	protected changed(): void {
		if (this.depth > 0) this.dirty = true;
		// A deferred sleep rides in the record's put (compact-folded-steps.ts).
		else if (this.holds.any()) this.transaction(() => void (this.dirty = true));
		else this.putInstance();
	}

	/** A write outside a transaction goes after a deferred sleep's, never before it (compact-folded-steps.ts). */
	protected override put(key: string, value: unknown): void {
		if (this.depth === 0 && this.holds.any()) this.flushHeld();
		super.put(key, value);
	}

	protected mayHoldEvent(name: string, payload: string | null): boolean {
		const record = this.readRecord();
		if (!this.start.foldSleeps || this.depth === 0 || record?.row.status !== 'waiting' || (payload?.length ?? 4) > MAX_HELD_EVENT_CHARS || (record.ev?.length ?? 0) >= MAX_HELD_EVENTS) return false;
		return (record.st ?? []).some((step) => waitsFor(step, name));
	}

	protected acknowledged(): void {
		if (this.depth > 0) this.dirty = true;
	}

	private putInstance(): void {
		const record = this.readRecord();
		if (!record) return;
		prunedFolded(record, this.steps);
		this.holds.storedVersion = record.row.version;
		if (!this.start.foldSleeps) return this.put(KV.instance, record);
		// A record grown past its page lets the steps held for their turn go to their own keys (compact-folded-steps.ts).
		spillTurnHeld(record, this.steps, (step) => this.putStepKey(step.seq, step));
		this.put(KV.instance, encodeInstance(record));
	}

	readInstance(): InstanceRow | undefined {
		const record = this.readRecord();
		return record && unpackRow(record.row);
	}

	writeInstance(row: InstanceRow): void {
		const before = this.readRecord();
		const record: InstanceRecord = { row: packRow(row), pending: before?.pending ?? null, recs: before?.recs ?? [], ...(before?.st ? { st: before.st } : {}), ...(before?.ev ? { ev: before.ev } : {}) };
		this.record = record;
		// Records appended earlier in this transaction, before any record existed (a create's), join it.
		for (const held of this.held.splice(0)) {
			if (foldable(held, record)) record.recs.push(held);
			else this.putRecordKey(held);
		}
		this.changed();
	}

	// ---- steps ----

	private stepIndex(): StepIndex {
		return (this.steps ??= this.readIndex());
	}

	/** The index as storage holds it, with this isolate's writes not put yet (this transaction's, the deferred sleep) over it. */
	private readIndex(values?: Map<number, StoredStep>): StepIndex {
		const index = StepIndex.read(this.kv, this.readRecord()?.st, values);
		for (const step of [...this.pendingSteps.values(), ...this.holds.steps.filter((held) => !this.pendingSteps.has(held.seq))]) {
			index.set(step.seq, step);
			values?.set(step.seq, step);
			// A held step may carry the step before it, whose only copy is then in it (compact-folded-steps.ts).
			if (step.prior && !this.pendingSteps.has(step.prior.seq)) {
				index.set(step.prior.seq, step.prior, step.seq);
				values?.set(step.prior.seq, step.prior);
			}
		}
		return index;
	}

	/** A step's value as this isolate left it (this transaction's, put at its end; the deferred sleep) or as storage holds it. */
	private stepGet(seq: number): StoredStep | undefined {
		const written = this.pendingSteps.get(seq) ?? this.holds.find(seq);
		if (written) return written;
		const home = this.stepIndex().get(seq)?.home;
		if (home === 'i') return this.readRecord()?.st?.find((step) => step.seq === seq);
		if (typeof home === 'number') {
			const prior = this.stepGet(home)?.prior;
			return prior?.seq === seq ? prior : undefined;
		}
		const stored = this.kv.get<StoredStep>(seqKey(KV.step, seq));
		return stored && readStepValue(stored, 0);
	}

	/** Puts the steps this transaction wrote under their own keys, at its end. */
	private flushSteps(): void {
		if (this.pendingSteps.size === 0) return;
		for (const [seq, step] of this.pendingSteps) {
			this.putStepKey(seq, step);
			this.steps?.move(seq, 'own');
		}
		this.pendingSteps = new Map();
	}

	/** A step under its own key: in the compact encoding at storage format 5 (compact-step-codec.ts), as before otherwise. */
	private putStepKey(seq: number, step: StoredStep): void {
		this.put(seqKey(KV.step, seq), this.start.foldSleeps ? encodeStep(step, 0) : step);
	}

	private storeStep(step: StoredStep): void {
		// Outside a transaction, in one of its own: where the step goes is decided at its end (compact-folded-steps.ts).
		if (this.depth === 0) return this.transaction(() => this.storeStep(step));
		// Format 5 keeps the step lean (compact-step-values.ts), as a copy: its fields are read again at every put that carries it.
		const stored = this.start.foldSleeps ? leanCopy(step) : step;
		// A finished step waits for nothing: its wake-up goes with the write that finishes it (no row of its own).
		if (stored.wk !== undefined && !UNFINISHED_STEP_STATUSES.includes(stored.status)) delete stored.wk;
		// Counted once a step may have two copies (format 5, or a step format 5 wrote): the later copy is read (compact-step-index.ts).
		const before = this.stepIndex().get(stored.seq);
		if (this.start.foldSleeps || before?.v !== undefined) stored.v = (before?.v ?? 0) + 1;
		this.stepIndex().set(stored.seq, stored);
		this.pendingSteps.set(stored.seq, stored);
		this.lastWritten = stored.seq;
	}

	private putStep(row: StepRow, rec: [number, number, number] | undefined, more?: CarriedRecord[]): void {
		// The wake-up the step bears stays with it until deleted or the step finishes (compact-step-wakeups.ts).
		const held = this.stepIndex().get(row.seq);
		const wk = held?.key === row.key ? held.wk : undefined;
		// The completed sleep its key carries stays with it (compact-folded-steps.ts).
		const prior = held?.hosts !== undefined ? this.stepGet(row.seq)?.prior : undefined;
		this.storeStep({ ...row, result: pack(row.result), ...(rec ? { rec } : {}), ...(more?.length ? { more } : {}), ...(wk !== undefined ? { wk } : {}), ...(prior ? { prior } : {}) });
	}

	/** The records step `seq` carries, kept when it is written again (with their values if its result changes). */
	private carriedBy(seq: number, result: string | null): CarriedRecord[] | undefined {
		if (!this.stepIndex().get(seq)?.carried) return undefined;
		const before = this.stepGet(seq);
		if (!before?.more) return undefined;
		if (unpack(before.result) === result) return before.more;
		return before.more.map(({ res, ...record }) => (res ? { ...record, value: before.result } : record));
	}

	/**
	 * Appends `row` to the step written last in this transaction, if it is the step above every other (so the steps'
	 * records still ascend with their seqs) and has room: the record rides in the step's put, 1 row for both where a key
	 * of its own (or the instance record's put) would be a second. A record whose value is the step's result keeps no copy.
	 */
	private carry(row: NewHistoryRow, seq: number): boolean {
		const at = this.lastWritten;
		const step = at === undefined ? undefined : this.pendingSteps.get(at);
		if (!step || at !== this.stepIndex().highest || (step.more?.length ?? 0) >= MAX_CARRIED_RECORDS) return false;
		const isResult = row.value !== null && (typeof step.result === 'string' ? row.value === step.result : step.result !== null && unpack(step.result) === row.value);
		if (!isResult && !smallRecord({ value: row.value, detail: row.detail })) return false;
		const record: CarriedRecord = isResult ? { ...storedRecord(seq, { ...row, value: null }), res: 1 } : storedRecord(seq, row);
		step.more = [...(step.more ?? []), record];
		this.stepIndex().set(at, step);
		return true;
	}

	readSteps(): StepRow[] {
		// One listing of every value, which builds the index again on the way.
		const values = new Map<number, StoredStep>();
		this.steps = this.readIndex(values);
		return this.steps.seqs().map((seq) => toStepRow(values.get(seq)!));
	}

	writeStep(row: StepRow): void {
		// A step is keyed by its seq; a seq that holds another step's row is a bug to fail on, not a row to overwrite.
		const held = this.stepIndex().get(row.seq);
		if (held && held.key !== row.key) throw new Error(`step "${row.key}" was given seq ${row.seq}, which holds another step's row`);
		this.putStep(row, held?.rec, this.carriedBy(row.seq, row.result));
	}

	writeStepWithRecord(row: StepRow, record: NewHistoryRow): void {
		// In one transaction, so the record may ride in the step's put (a step's completion after its start was written).
		this.transaction(() => {
			this.writeStep(row);
			this.appendHistory(record);
		});
	}

	insertStep(row: StepRow, records: readonly NewHistoryRow[]): void {
		// Only a step above every other keeps records, so they ascend with the steps' seqs (compact-history.ts).
		const inRow = row.seq > this.stepIndex().highest ? recordsInRow(row, records) : 0;
		const write = () => {
			if (inRow === 0) this.writeStep(row);
			else {
				this.putStep(row, [this.lastSeq() + 1, inRow, records[0]!.generation]);
				for (const record of records.slice(0, inRow)) this.appended(record);
				if (records.length > 0) this.start.historyAppended?.();
			}
			for (const record of records.slice(inRow)) this.appendHistory(record);
		};
		// The records the row cannot stand for ride in its put (`carry`), in one transaction with it.
		if (records.length > inRow && this.depth === 0) this.transaction(write);
		else write();
	}

	/** Gives the records of the steps `which` picks keys of their own, then deletes the steps: the history keeps them. */
	private removeStepsWhere(which: (step: StoredStep) => boolean): void {
		for (const held of this.holds.steps) if (!this.pendingSteps.has(held.seq)) this.pendingSteps.set(held.seq, held);
		this.holds.steps = [];
		this.flushSteps();
		const values = new Map<number, StoredStep>();
		const index = this.readIndex(values);
		if (removeSteps({ kv: this.kv, index, values, record: this.readRecord(), which, putRecordKey: (record) => this.putRecordKey(record), putStep: (seq, step) => this.putStepKey(seq, step) })) this.changed();
		this.steps = undefined;
	}

	deleteSteps(): void {
		this.removeStepsWhere(() => true);
		this.steps = new StepIndex();
	}

	cancelUnfinishedSteps(at: number): void {
		const index = this.stepIndex();
		for (const [seq, { status }] of [...index.entries()]) {
			if (!UNFINISHED_STEP_STATUSES.includes(status)) continue;
			const step = this.stepGet(seq);
			if (!step) continue;
			this.storeStep({ ...step, status: 'cancelled', finishedAt: at, wakeAt: null });
		}
	}

	keepStepsBefore(seq: number): void {
		this.removeStepsWhere((step) => step.kind === 'rollback' || step.seq >= seq);
	}

	/** The step queries' view of this store (compact-step-queries.ts, through compact-parts.ts). */
	protected readonly stepSource: StepSource = { index: () => this.stepIndex(), get: (seq) => this.stepGet(seq) };

	protected stepWakeups(): StepWakeups {
		return this.allWakeups;
	}

	// ---- history ----

	/** The records folded into the record, and those held for it in this transaction. */
	private inlineRecords(): StoredRecord[] {
		const folded = this.readRecord()?.recs ?? [];
		return this.held.length === 0 ? folded : [...folded, ...this.held];
	}

	appendHistory(row: NewHistoryRow): void {
		if (this.depth > 0 && this.carry(row, this.lastSeq() + 1)) {
			this.appended(row);
			this.start.historyAppended?.();
			return;
		}
		const record = storedRecord(this.lastSeq() + 1, row);
		const into = this.depth > 0 ? this.readRecord() : undefined;
		// In a transaction a small record rides with the record's put at its end (1 row for the status change and its record).
		if (into && foldable(row, into)) {
			into.recs.push(record);
			this.dirty = true;
		} else if (this.depth > 0 && !into && smallRecord(row)) {
			this.held.push(record);
		} else this.putRecordKey(record);
		this.appended(row);
		this.start.historyAppended?.();
	}

	private putRecordKey(record: StoredRecord): void {
		this.put(seqKey(KV.history, record.seq), record);
	}

	private lastSeq(): number {
		if (this.lastHistorySeq === undefined) {
			this.lastHistorySeq = this.readLastSeq();
			this.tailFrom = undefined;
		}
		return this.lastHistorySeq;
	}

	private stepsLastSeq(): number {
		return stepsLastRecordSeq(this.stepIndex());
	}

	/** The history's last seq, of every source, read from storage. */
	private readLastSeq(): number {
		let last = this.stepsLastSeq();
		for (const [key] of this.kv.list({ prefix: KV.history, reverse: true, limit: 1 })) last = Math.max(last, seqOf(key, KV.history));
		for (const record of this.inlineRecords()) last = Math.max(last, record.seq);
		return last;
	}

	/** `historyTail` over this store's sources: the steps' values read are only those with records after `afterSeq`. */
	private tail(afterSeq: number): { bytes: number; lastSeq: number } {
		return historyTail(this.kv, this.inlineRecords(), afterSeq, this.stepIndex().withRecordsAfter((seq) => this.stepGet(seq), afterSeq), this.stepsLastSeq());
	}

	private records(query: { afterSeq: number; limit: number; generation?: number; kinds?: readonly HistoryKind[] }): StoredRecord[] {
		return findRecords(this.kv, this.inlineRecords(), query, this.stepIndex().withRecordsAfter((seq) => this.stepGet(seq), query.afterSeq));
	}

	private appended(row: NewHistoryRow): void {
		if (this.lastHistorySeq === undefined) return;
		this.lastHistorySeq++;
		this.tailBytes += historyRecordBytes(row);
	}

	readHistoryMeta(range: HistoryRange): HistoryMeta[] {
		return this.records(range).map(toHistoryMeta);
	}

	readHistory(range: HistoryRange): HistoryRow[] {
		return this.records(range).map(toHistoryRow);
	}

	readHistoryOfKinds(query: { afterSeq: number; limit: number; kinds: readonly HistoryKind[]; maxBytes?: number }): HistoryRow[] {
		return takeWithinBytes(this.records(query).map(toHistoryRow), query.maxBytes);
	}

	lastStreamMessageIndex(generation: number): number {
		return lastStreamMessageIn(this.kv, this.inlineRecords(), generation);
	}

	historySize(afterSeq: number): { bytes: number; lastSeq: number } {
		if (this.lastHistorySeq !== undefined) {
			if (afterSeq === this.lastHistorySeq) {
				this.tailFrom = afterSeq;
				this.tailBytes = 0;
			}
			if (afterSeq === this.tailFrom) return { bytes: this.tailBytes, lastSeq: this.lastHistorySeq };
		}
		const tail = this.tail(afterSeq);
		this.lastHistorySeq = tail.lastSeq;
		this.tailFrom = afterSeq;
		this.tailBytes = tail.bytes;
		return tail;
	}

	historyLastSeq(): number {
		return this.lastHistorySeq ?? this.readLastSeq();
	}
}
