import type { CutPasses, DeletionRow, EventKeyRow, EventRow, InlineRow, InstanceStore, OutboxRow, StepCount, StepMeta, StepRange, StepRef, StepRow } from '../engine/storage/store';
import type { StepKind } from '../engine/support/step-kinds';
import type { StepStatus } from '../engine/support/statuses';
import { stepCountsIn, stepMetaIn, stepResultsIn, stepRowAt, stepsOfKindIn, type StepSource } from './compact-step-queries';
import { CompactEvents } from './compact-events';
import { CompactInlineChildren } from './compact-inline-children';
import type { InstanceRecord } from './compact-instance-record';
import { checkValue, KV } from './compact-keys';
import { CompactOutbox } from './compact-outbox';
import { CompactWakeups } from './compact-wakeups';
import type { StepWakeups } from './compact-step-wakeups';

/** The same key as the table layout's store: the cut passes were kept in key-value storage already. */
const CUT_PASSES_KEY = 'shardflow:cut-passes';

/**
 * The parts of a compact instance that keep to keys of their own (compact-instance-store.ts builds on it):
 * wake-ups, buffered events and event keys, inline children's rows, the step queries, the pending index entry (in the instance
 * record, through the store), the cut passes and the deletion. Every put is checked against production's
 * limit of a key and value (compact-keys.ts `checkValue`).
 */
export abstract class CompactParts implements Pick<InstanceStore, 'setWakeup'> {
	protected readonly kv: SyncKvStorage;
	protected readonly wakeups: CompactWakeups;
	protected readonly events: CompactEvents;
	protected readonly inline: CompactInlineChildren;
	protected readonly outbox: CompactOutbox;

	constructor(protected readonly storage: DurableObjectStorage) {
		this.kv = storage.kv;
		const put = (key: string, value: unknown) => this.put(key, value);
		this.wakeups = new CompactWakeups(this.kv, put);
		this.events = new CompactEvents(this.kv, put, {
			held: () => this.readRecord()?.ev ?? [],
			mayHold: (name, payload) => this.mayHoldEvent(name, payload),
			hold: (event) => {
				const record = this.readRecord()!;
				record.ev = [...(record.ev ?? []), event];
				this.changed();
			},
			release: (seq) => {
				const record = this.readRecord();
				if (!record?.ev?.some((event) => event.seq === seq)) return false;
				record.ev = record.ev.filter((event) => event.seq !== seq);
				if (record.ev.length === 0) delete record.ev;
				this.changed();
				return true;
			},
		});
		this.inline = new CompactInlineChildren(this.kv, put);
		this.outbox = new CompactOutbox(this.kv, put, { read: () => this.readRecord(), changed: () => this.changed(), acknowledged: () => this.acknowledged() });
	}

	/** The instance record, read once. */
	protected abstract readRecord(): InstanceRecord | undefined;
	/** The record changed: put now, or at the transaction's end. */
	protected abstract changed(): void;
	/** An acknowledgement changed the record: put at the transaction's end when in one, else with its next put. */
	protected abstract acknowledged(): void;
	/**
	 * May an event that arrives now ride in the record's put (storage format 5)? Only in a transaction that puts the
	 * record anyway (its `event.received` record), for the wait the instance is in (the pass it wakes consumes it at
	 * once: an event that comes early keeps its key), and small: until consumed, every put of the record carries it.
	 */
	protected abstract mayHoldEvent(name: string, payload: string | null): boolean;

	protected put(key: string, value: unknown): void {
		checkValue(key, value);
		this.kv.put(key, value);
	}

	// ---- wake-ups, events (compact-wakeups.ts, compact-events.ts) ----

	/** The wake-ups: those its steps bear (format 2) and those under keys of their own (compact-step-wakeups.ts over `wakeups`). */
	protected abstract stepWakeups(): StepWakeups;

	setWakeup(key: string, at: number): void {
		this.stepWakeups().set(key, at);
	}

	deleteWakeup(key: string): void {
		this.stepWakeups().delete(key);
	}

	takeWakeup(key: string): boolean {
		return this.stepWakeups().take(key);
	}

	deleteWakeupsDue(now: number, spare: ReadonlySet<string>): void {
		this.stepWakeups().deleteDue(now, spare);
	}

	deleteAllWakeups(): void {
		this.stepWakeups().deleteAll();
	}

	earliestWakeup(): number | undefined {
		return this.stepWakeups().earliest();
	}

	appendEvent(name: string, payload: string | null, receivedAt: number): void {
		this.events.appendEvent(name, payload, receivedAt);
	}

	oldestEvent(name: string): EventRow | undefined {
		return this.events.oldestEvent(name);
	}

	deleteEvent(seq: number): void {
		this.events.deleteEvent(seq);
	}

	deleteAllEvents(): void {
		this.events.deleteAllEvents();
	}

	eventBuffer(name?: string): { count: number; bytes: number } {
		return this.events.eventBuffer(name);
	}

	dropEvents(): number {
		return this.events.dropEvents();
	}

	eventCounts(): { buffered: number; dropped: number } {
		return this.events.eventCounts();
	}

	readEventKey(key: string): EventKeyRow | undefined {
		return this.events.readEventKey(key);
	}

	writeEventKey(row: EventKeyRow, at: number, keep: number): void {
		this.events.writeEventKey(row, at, keep);
	}

	// ---- step queries (compact-step-queries.ts, over the store's index and values) ----

	protected abstract readonly stepSource: StepSource;

	readStepMeta(range: StepRange): StepMeta[] {
		return stepMetaIn(this.stepSource, range);
	}

	readStepResults(refs: readonly StepRef[]): Map<string, string | null> {
		return stepResultsIn(this.stepSource, refs);
	}

	countSteps(): StepCount[] {
		return stepCountsIn(this.stepSource);
	}

	readStep(key: string): StepRow | undefined {
		const seq = this.stepSource.index().seqOfKey(key);
		return seq === undefined ? undefined : stepRowAt(this.stepSource, seq);
	}

	readStepsOfKind(kind: StepKind, status?: StepStatus): StepRow[] {
		return stepsOfKindIn(this.stepSource, kind, status);
	}

	// ---- the outbox: in the instance record, or under `o` while there is none (compact-outbox.ts) ----

	writeOutbox(row: OutboxRow): void {
		this.outbox.writeOutbox(row);
	}

	readOutbox(): OutboxRow | undefined {
		return this.outbox.readOutbox();
	}

	ackOutbox(version: number): void {
		this.outbox.ackOutbox(version);
	}

	deferOutbox(version: number, attempts: number, nextAttemptAt: number): void {
		this.outbox.deferOutbox(version, attempts, nextAttemptAt);
	}

	markOutboxBacklogged(since: number | null): void {
		this.outbox.markOutboxBacklogged(since);
	}

	// ---- the rest: one key each (inline children: compact-inline-children.ts) ----

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

	writeInlineRow(childId: string, row: InlineRow): void {
		this.inline.writeInlineRow(childId, row);
	}

	readInlineRows(childId: string): InlineRow[] {
		return this.inline.readInlineRows(childId);
	}

	deleteInline(childId: string): void {
		this.inline.deleteInline(childId);
	}

	inlinePublishes(): { childId: string; publishAt: number }[] {
		return this.inline.inlinePublishes();
	}

	deleteUnpublishedInline(): void {
		this.inline.deleteUnpublishedInline();
	}
}
