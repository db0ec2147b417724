import type { HistoryKind, HistoryMeta, HistoryRow, NewHistoryRow } from '../engine/history/history';
import { takeWithinBytes } from '../engine/history/history';
import { historyRecordBytes } from '../engine/instance/instance-limits';
import { SMALL_RESULT_BYTES } from '../engine/support/limits';
import { UNFINISHED_STEP_STATUSES, type StepKind, type StepStatus } from '../engine/definition/types';
import type { CutPasses, DeletionRow, EventKeyRow, EventRow, HistoryRange, InlineRow, InstanceRow, InstanceStore, OutboxRow, StepCount, StepMeta, StepRange, StepRef, StepRow } from '../engine/storage/store';
import { checkValue, inlinePrefix, KV, pack, packedBytes, seqKey, seqOf, unpack, type Packed } from './compact-keys';
import { findRecords, historyTail, stepRecords, toHistoryMeta, toHistoryRow, type StoredRecord, type StoredStep } from './compact-history';
import { foldable, smallRecord, packRow, storedRecord, unpackRow, type InstanceRecord } from './compact-instance-record';
import { recordsInRow } from './step-records';

const UNREAD = Symbol('unread');
type Known<T> = T | typeof UNREAD;
/** The same key as the table layout's store: the cut passes were kept in key-value storage already. */
const CUT_PASSES_KEY = 'shardflow:cut-passes';

type StoredEvent = { name: string; payload: Packed; receivedAt: number };
type StoredEventKey = { name: string; digest: string; at: number; n: number };
type StoredInline = { body: Packed; result: Packed; publishAt: number | null };

/** What the compact store knows of its object before reading it. */
export interface CompactStart {
	/** A new object: nothing is stored, so the first reads need no storage call. */
	empty?: boolean;
	/** Told after every history write (the instance's stream, roles/instance-stream-feed.ts). */
	historyAppended?: () => void;
}

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
export class CompactInstanceStore implements InstanceStore {
	private readonly kv: SyncKvStorage;
	private record: Known<InstanceRecord | undefined> = UNREAD;
	/** The pending entry under `o` (written while no record exists). */
	private looseOutbox: Known<OutboxRow | undefined> = UNREAD;
	private depth = 0;
	/** In a transaction: the record changed and is put at its end. */
	private dirty = false;
	/** In a transaction: small records appended before the record exists, folded in when it is written (else given keys at the end). */
	private held: StoredRecord[] = [];
	private lastHistorySeq: number | undefined;
	private tailFrom: number | undefined = 0;
	private tailBytes = 0;
	private earliest: Known<number | undefined> = UNREAD;
	/** Each step's key and the records it stands for, by seq, when every step is known (undefined: not read). */
	private steps: Map<number, { key: string; rec?: [number, number, number] }> | undefined;
	private lastEventSeq: Known<number> = UNREAD;
	private noEvents = false;
	private dropped: Known<number> = UNREAD;

	constructor(
		private readonly storage: DurableObjectStorage,
		private readonly start: CompactStart = {},
	) {
		this.kv = storage.kv;
		if (start.empty) {
			this.record = undefined;
			this.looseOutbox = undefined;
			this.lastHistorySeq = 0;
			this.earliest = undefined;
			this.steps = new Map();
			this.lastEventSeq = 0;
			this.noEvents = true;
			this.dropped = 0;
		}
	}

	transaction<T>(fn: () => T): T {
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
					}
				}
			});
		} catch (error) {
			// What this store remembers of what was written inside may have been rolled back.
			this.record = UNREAD;
			this.looseOutbox = UNREAD;
			this.lastHistorySeq = undefined;
			this.earliest = UNREAD;
			this.steps = undefined;
			this.lastEventSeq = UNREAD;
			this.noEvents = false;
			this.dropped = UNREAD;
			throw error;
		}
	}

	/** The end of a transaction: the record once, and the held records the record did not take. */
	private endTransaction(): void {
		for (const record of this.held) this.putRecordKey(record);
		this.held = [];
		if (this.dirty) this.putInstance();
		this.dirty = false;
	}

	private put(key: string, value: unknown): void {
		checkValue(key, value);
		this.kv.put(key, value);
	}

	private readRecord(): InstanceRecord | undefined {
		if (this.record === UNREAD) this.record = this.kv.get<InstanceRecord>(KV.instance);
		return this.record;
	}

	/** The record changed: put now, or at the transaction's end. */
	private changed(): void {
		if (this.depth > 0) this.dirty = true;
		else this.putInstance();
	}

	private putInstance(): void {
		const record = this.readRecord();
		if (record) this.put(KV.instance, record);
	}

	readInstance(): InstanceRow | undefined {
		const record = this.readRecord();
		return record && unpackRow(record.row);
	}

	writeInstance(row: InstanceRow): void {
		const before = this.readRecord();
		const record: InstanceRecord = { row: packRow(row), pending: before?.pending ?? null, recs: before?.recs ?? [] };
		this.record = record;
		// Records appended earlier in this transaction, before any record existed (a create's), join it.
		for (const held of this.held.splice(0)) {
			if (foldable(held, record)) record.recs.push(held);
			else this.putRecordKey(held);
		}
		this.changed();
	}

	// ---- steps ----

	private stepIndex(): Map<number, { key: string; rec?: [number, number, number] }> {
		if (!this.steps) {
			this.steps = new Map();
			for (const [key, step] of this.kv.list<StoredStep>({ prefix: KV.step })) this.steps.set(seqOf(key, KV.step), { key: step.key, ...(step.rec ? { rec: step.rec } : {}) });
		}
		return this.steps;
	}

	private putStep(row: StepRow, rec: [number, number, number] | undefined): void {
		const stored: StoredStep = { ...row, result: pack(row.result), ...(rec ? { rec } : {}) };
		this.put(seqKey(KV.step, row.seq), stored);
		this.stepIndex().set(row.seq, { key: row.key, ...(rec ? { rec } : {}) });
	}

	readSteps(): StepRow[] {
		const rows: StepRow[] = [];
		const index = new Map<number, { key: string; rec?: [number, number, number] }>();
		for (const [key, step] of this.kv.list<StoredStep>({ prefix: KV.step })) {
			rows.push(toStepRow(step));
			index.set(seqOf(key, KV.step), { key: step.key, ...(step.rec ? { rec: step.rec } : {}) });
		}
		this.steps = index;
		return rows;
	}

	writeStep(row: StepRow): void {
		// A step is keyed by its seq; a seq that holds another step's row is a bug to fail on, not a row to overwrite.
		const held = this.stepIndex().get(row.seq);
		if (held && held.key !== row.key) throw new Error(`step "${row.key}" was given seq ${row.seq}, which holds another step's row`);
		this.putStep(row, held?.rec);
	}

	writeStepWithRecord(row: StepRow, record: NewHistoryRow): void {
		this.writeStep(row);
		this.appendHistory(record);
	}

	insertStep(row: StepRow, records: readonly NewHistoryRow[]): void {
		const index = this.stepIndex();
		const highest = index.size === 0 ? 0 : Math.max(...index.keys());
		// Only a step above every other keeps records, so they ascend with the steps' seqs (compact-history.ts).
		const inRow = row.seq > highest ? recordsInRow(row, records) : 0;
		if (inRow === 0) this.writeStep(row);
		else {
			this.putStep(row, [this.lastSeq() + 1, inRow, records[0]!.generation]);
			for (const record of records.slice(0, inRow)) this.appended(record);
			if (records.length > 0) this.start.historyAppended?.();
		}
		for (const record of records.slice(inRow)) this.appendHistory(record);
	}

	/** Gives the records of the steps `which` picks keys of their own, then deletes the steps: the history keeps them. */
	private removeSteps(which: (step: StoredStep) => boolean): void {
		for (const [key, step] of [...this.kv.list<StoredStep>({ prefix: KV.step })]) {
			if (!which(step)) continue;
			for (const record of stepRecords(step)) this.putRecordKey(record);
			this.kv.delete(key);
		}
		this.steps = undefined;
	}

	deleteSteps(): void {
		this.removeSteps(() => true);
		this.steps = new Map();
	}

	cancelUnfinishedSteps(at: number): void {
		for (const [key, step] of [...this.kv.list<StoredStep>({ prefix: KV.step })]) {
			if (UNFINISHED_STEP_STATUSES.includes(step.status)) this.put(key, { ...step, status: 'cancelled', finishedAt: at, wakeAt: null });
		}
	}

	keepStepsBefore(seq: number): void {
		this.removeSteps((step) => step.kind === 'rollback' || step.seq >= seq);
	}

	readStepMeta(range: StepRange): StepMeta[] {
		const listed = 'last' in range ? [...this.kv.list<StoredStep>({ prefix: KV.step, reverse: true, limit: range.last })].reverse() : [...this.kv.list<StoredStep>({ prefix: KV.step, start: seqKey(KV.step, range.afterSeq + 1), limit: range.limit })];
		return listed.map(([, step]) => {
			const { result, rec: _rec, ...rest } = step;
			const resultBytes = packedBytes(result);
			return { ...rest, resultBytes, ...(resultBytes <= SMALL_RESULT_BYTES ? { smallResult: unpack(result) } : {}) };
		});
	}

	readStepResults(refs: readonly StepRef[]): Map<string, string | null> {
		const results = new Map<string, string | null>();
		for (const ref of refs) {
			const step = this.kv.get<StoredStep>(seqKey(KV.step, ref.seq));
			if (step && step.key === ref.key) results.set(ref.key, unpack(step.result));
		}
		return results;
	}

	countSteps(): StepCount[] {
		const counts = new Map<string, StepCount>();
		for (const [, { kind, status }] of this.kv.list<StoredStep>({ prefix: KV.step })) {
			const count = counts.get(`${kind} ${status}`);
			if (count) count.n++;
			else counts.set(`${kind} ${status}`, { kind, status, n: 1 });
		}
		return [...counts.values()];
	}

	readStep(key: string): StepRow | undefined {
		for (const [seq, step] of this.stepIndex()) if (step.key === key) return this.stepAt(seq);
		return undefined;
	}

	private stepAt(seq: number): StepRow | undefined {
		const step = this.kv.get<StoredStep>(seqKey(KV.step, seq));
		return step && toStepRow(step);
	}

	readStepsOfKind(kind: StepKind, status?: StepStatus): StepRow[] {
		const rows: StepRow[] = [];
		for (const [, step] of this.kv.list<StoredStep>({ prefix: KV.step })) if (step.kind === kind && (status === undefined || step.status === status)) rows.push(toStepRow(step));
		return rows;
	}

	// ---- wake-ups ----

	setWakeup(key: string, at: number): void {
		this.put(KV.wakeup + key, at);
		this.earliest = this.earliest === undefined ? at : UNREAD;
	}

	deleteWakeup(key: string): void {
		if (this.earliest === undefined) return;
		if (this.kv.delete(KV.wakeup + key)) this.earliest = UNREAD;
	}

	takeWakeup(key: string): boolean {
		if (this.earliest === undefined) return false;
		const taken = this.kv.delete(KV.wakeup + key);
		if (taken) this.earliest = UNREAD;
		return taken;
	}

	deleteWakeupsDue(now: number, spare: ReadonlySet<string>): void {
		if (this.earliest === undefined || (this.earliest !== UNREAD && this.earliest > now)) return;
		for (const [key, at] of [...this.kv.list<number>({ prefix: KV.wakeup })]) if (at <= now && !spare.has(key.slice(KV.wakeup.length))) this.kv.delete(key);
		this.earliest = UNREAD;
	}

	deleteAllWakeups(): void {
		if (this.earliest !== undefined) for (const [key] of [...this.kv.list({ prefix: KV.wakeup })]) this.kv.delete(key);
		this.earliest = undefined;
	}

	earliestWakeup(): number | undefined {
		if (this.earliest === UNREAD) {
			let earliest: number | undefined;
			for (const [, at] of this.kv.list<number>({ prefix: KV.wakeup })) if (earliest === undefined || at < earliest) earliest = at;
			this.earliest = earliest;
		}
		return this.earliest;
	}

	// ---- events ----

	appendEvent(name: string, payload: string | null, receivedAt: number): void {
		if (this.lastEventSeq === UNREAD) {
			this.lastEventSeq = 0;
			for (const [key] of this.kv.list({ prefix: KV.event, reverse: true, limit: 1 })) this.lastEventSeq = seqOf(key, KV.event);
		}
		this.lastEventSeq++;
		this.put(seqKey(KV.event, this.lastEventSeq), { name, payload: pack(payload), receivedAt } satisfies StoredEvent);
		this.noEvents = false;
	}

	private *bufferedEvents(): Iterable<[string, StoredEvent]> {
		if (!this.noEvents) yield* this.kv.list<StoredEvent>({ prefix: KV.event });
	}

	oldestEvent(name: string): EventRow | undefined {
		for (const [key, event] of this.bufferedEvents()) if (event.name === name) return { seq: seqOf(key, KV.event), name, payload: unpack(event.payload), receivedAt: event.receivedAt };
		return undefined;
	}

	deleteEvent(seq: number): void {
		this.kv.delete(seqKey(KV.event, seq));
	}

	deleteAllEvents(): void {
		for (const [key] of [...this.bufferedEvents()]) this.kv.delete(key);
		this.noEvents = true;
	}

	eventBuffer(name?: string): { count: number; bytes: number } {
		let count = 0;
		let bytes = 0;
		for (const [, event] of this.bufferedEvents()) {
			if (name !== undefined && event.name !== name) continue;
			count++;
			bytes += packedBytes(event.payload);
		}
		if (name === undefined && count === 0) this.noEvents = true;
		return { count, bytes };
	}

	dropEvents(): number {
		let n = 0;
		for (const [key] of [...this.bufferedEvents()]) {
			this.kv.delete(key);
			n++;
		}
		this.noEvents = true;
		if (n === 0) return 0;
		const dropped = this.droppedCount() + n;
		this.put(KV.dropped, dropped);
		this.dropped = dropped;
		return n;
	}

	private droppedCount(): number {
		if (this.dropped === UNREAD) this.dropped = this.kv.get<number>(KV.dropped) ?? 0;
		return this.dropped;
	}

	eventCounts(): { buffered: number; dropped: number } {
		return { buffered: this.eventBuffer().count, dropped: this.droppedCount() };
	}

	readEventKey(key: string): EventKeyRow | undefined {
		const found = this.kv.get<StoredEventKey>(KV.eventKey + key);
		return found && { key, name: found.name, digest: found.digest };
	}

	writeEventKey(row: EventKeyRow, at: number, keep: number): void {
		const kept = [...this.kv.list<StoredEventKey>({ prefix: KV.eventKey })];
		if (!kept.some(([key]) => key === KV.eventKey + row.key)) {
			const n = kept.reduce((max, [, value]) => Math.max(max, value.n), 0) + 1;
			this.put(KV.eventKey + row.key, { name: row.name, digest: row.digest, at, n } satisfies StoredEventKey);
			kept.push([KV.eventKey + row.key, { name: row.name, digest: row.digest, at, n }]);
		}
		// The `keep` most recently remembered stay.
		if (kept.length > keep) for (const [key] of kept.sort((a, b) => a[1].n - b[1].n).slice(0, kept.length - keep)) this.kv.delete(key);
	}

	// ---- history ----

	/** The records folded into the record, and those held for it in this transaction. */
	private inlineRecords(): StoredRecord[] {
		const folded = this.readRecord()?.recs ?? [];
		return this.held.length === 0 ? folded : [...folded, ...this.held];
	}

	appendHistory(row: NewHistoryRow): void {
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
			this.lastHistorySeq = historyTail(this.kv, this.inlineRecords(), 0).lastSeq;
			this.tailFrom = undefined;
		}
		return this.lastHistorySeq;
	}

	private appended(row: NewHistoryRow): void {
		if (this.lastHistorySeq === undefined) return;
		this.lastHistorySeq++;
		this.tailBytes += historyRecordBytes(row);
	}

	readHistoryMeta(range: HistoryRange): HistoryMeta[] {
		return findRecords(this.kv, this.inlineRecords(), range).map(toHistoryMeta);
	}

	readHistory(range: HistoryRange): HistoryRow[] {
		return findRecords(this.kv, this.inlineRecords(), range).map(toHistoryRow);
	}

	readHistoryOfKinds(query: { afterSeq: number; limit: number; kinds: readonly HistoryKind[]; maxBytes?: number }): HistoryRow[] {
		return takeWithinBytes(findRecords(this.kv, this.inlineRecords(), query).map(toHistoryRow), query.maxBytes);
	}

	lastStreamMessageIndex(generation: number): number {
		const isMessage = (record: StoredRecord) => record.kind === 'stream.message' && record.generation === generation;
		const folded = this.inlineRecords().filter(isMessage).at(-1);
		for (const [, record] of this.kv.list<StoredRecord>({ prefix: KV.history, reverse: true })) {
			if (folded && record.seq < folded.seq) break;
			if (isMessage(record)) return record.attempt ?? 0;
		}
		return folded?.attempt ?? 0;
	}

	historySize(afterSeq: number): { bytes: number; lastSeq: number } {
		if (this.lastHistorySeq !== undefined) {
			if (afterSeq === this.lastHistorySeq) {
				this.tailFrom = afterSeq;
				this.tailBytes = 0;
			}
			if (afterSeq === this.tailFrom) return { bytes: this.tailBytes, lastSeq: this.lastHistorySeq };
		}
		const tail = historyTail(this.kv, this.inlineRecords(), afterSeq);
		this.lastHistorySeq = tail.lastSeq;
		this.tailFrom = afterSeq;
		this.tailBytes = tail.bytes;
		return tail;
	}

	historyLastSeq(): number {
		return this.lastHistorySeq ?? historyTail(this.kv, this.inlineRecords(), 0).lastSeq;
	}

	// ---- the outbox: in the instance record, or under `o` while there is none ----

	private loose(): OutboxRow | undefined {
		if (this.looseOutbox === UNREAD) this.looseOutbox = this.kv.get<OutboxRow>(KV.outbox);
		return this.looseOutbox;
	}

	writeOutbox(row: OutboxRow): void {
		const record = this.readRecord();
		const loose = this.loose();
		const backloggedSince = record?.pending?.backloggedSince ?? loose?.backloggedSince ?? null;
		const pending: OutboxRow = { entry: row.entry, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt, backloggedSince };
		if (record) {
			record.pending = pending;
			this.changed();
			if (loose) this.dropLoose();
		} else {
			this.put(KV.outbox, pending);
			this.looseOutbox = pending;
		}
	}

	private dropLoose(): void {
		this.kv.delete(KV.outbox);
		this.looseOutbox = undefined;
	}

	readOutbox(): OutboxRow | undefined {
		const pending = this.readRecord()?.pending ?? undefined;
		const loose = this.loose();
		const newer = pending && loose ? (pending.entry.version >= loose.entry.version ? pending : loose) : (pending ?? loose);
		return newer && { ...newer, backloggedSince: newer.backloggedSince ?? null };
	}

	/**
	 * An acknowledgement outside a transaction (a delivery's) is not written on its own: the record's next put
	 * carries it (a status change, a deferral). An object that stops before then reads the entry as pending
	 * when it starts again and delivers it once more, which the shard's keep-the-highest-version makes
	 * harmless: a row written fewer per delivery (docs/decisions.md "The compact instance layout").
	 */
	ackOutbox(version: number): void {
		const record = this.readRecord();
		if (record?.pending && record.pending.entry.version <= version) {
			record.pending = null;
			if (this.depth > 0) this.dirty = true;
		}
		const loose = this.loose();
		if (loose && loose.entry.version <= version) this.dropLoose();
	}

	deferOutbox(version: number, attempts: number, nextAttemptAt: number): void {
		const record = this.readRecord();
		if (record?.pending && record.pending.entry.version === version) {
			record.pending = { ...record.pending, attempts, nextAttemptAt };
			this.changed();
		}
		const loose = this.loose();
		if (loose && loose.entry.version === version) {
			this.looseOutbox = { ...loose, attempts, nextAttemptAt };
			this.put(KV.outbox, this.looseOutbox);
		}
	}

	markOutboxBacklogged(since: number | null): void {
		const record = this.readRecord();
		if (record?.pending) {
			record.pending = { ...record.pending, backloggedSince: since };
			this.changed();
		}
		const loose = this.loose();
		if (loose) {
			this.looseOutbox = { ...loose, backloggedSince: since };
			this.put(KV.outbox, this.looseOutbox);
		}
	}

	// ---- the rest: one key each ----

	readCutPasses(): CutPasses | undefined {
		return this.kv.get<CutPasses>(CUT_PASSES_KEY);
	}

	writeCutPasses(value: CutPasses | undefined): void {
		if (value) this.put(CUT_PASSES_KEY, value);
		else this.kv.delete(CUT_PASSES_KEY);
	}

	readDeletion(): DeletionRow | undefined {
		return this.kv.get<DeletionRow>(KV.deletion);
	}

	writeDeletion(row: DeletionRow): void {
		this.put(KV.deletion, { ...row });
	}

	writeInlineRow(childId: string, { key, body, result, publishAt }: InlineRow): void {
		this.put(inlinePrefix(childId) + key, { body: pack(body), result: pack(result), publishAt } satisfies StoredInline);
	}

	readInlineRows(childId: string): InlineRow[] {
		const prefix = inlinePrefix(childId);
		return [...this.kv.list<StoredInline>({ prefix })].map(([key, row]) => ({ key: key.slice(prefix.length), body: unpack(row.body) ?? '', result: unpack(row.result), publishAt: row.publishAt }));
	}

	deleteInline(childId: string): void {
		for (const [key] of [...this.kv.list({ prefix: inlinePrefix(childId) })]) this.kv.delete(key);
	}

	/** Each inline row's child and key, and the row. */
	private *inlineRows(): Iterable<{ key: string; childId: string; rowKey: string; row: StoredInline }> {
		for (const [key, row] of this.kv.list<StoredInline>({ prefix: KV.inline })) {
			const rest = key.slice(KV.inline.length);
			const at = rest.indexOf(':');
			yield { key, childId: decodeURIComponent(rest.slice(0, at)), rowKey: rest.slice(at + 1), row };
		}
	}

	inlinePublishes(): { childId: string; publishAt: number }[] {
		const publishes: { childId: string; publishAt: number }[] = [];
		for (const { childId, rowKey, row } of this.inlineRows()) if (rowKey === '' && row.publishAt !== null) publishes.push({ childId, publishAt: row.publishAt });
		return publishes;
	}

	deleteUnpublishedInline(): void {
		const publishing = new Set(this.inlinePublishes().map((p) => p.childId));
		for (const { key, childId } of [...this.inlineRows()]) if (!publishing.has(childId)) this.kv.delete(key);
	}
}

function toStepRow(step: StoredStep): StepRow {
	return {
		key: step.key, name: step.name, kind: step.kind, status: step.status, attempts: step.attempts, result: unpack(step.result), errorName: step.errorName, errorMessage: step.errorMessage,
		errorStack: step.errorStack, errorCode: step.errorCode, startedAt: step.startedAt, finishedAt: step.finishedAt, wakeAt: step.wakeAt, seq: step.seq, sensitive: step.sensitive,
	};
}
