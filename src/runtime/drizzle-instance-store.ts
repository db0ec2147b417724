import { and, asc, count, desc, eq, getTableColumns, gt, inArray, lte, min, sql } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import * as schema from '../db/schema';
import type { IndexEntry } from '../engine/index-entry';
import type { HistoryMeta, HistoryRow, NewHistoryRow } from '../engine/history';
import type { DeletionRow, EventKeyRow, EventRow, HistoryRange, InstanceRow, InstanceStore, OutboxRow, StepMeta, StepRange, StepRow } from '../engine/store';
import type { StepKind, StepStatus } from '../engine/types';

const { instance, steps, history, wakeups, events, outbox, eventKeys, droppedEvents, deletion } = schema;
const { result: _result, record: _record, ...stepColumns } = getTableColumns(steps);
/** A step row as the engine knows it: `record` only ever travels from a write to the trigger. */
const stepRowColumns = { ...stepColumns, result: steps.result };
// octet_length reads the size from the record header, not the (up to 1 MiB) value.
const stepMetaColumns = { ...stepColumns, resultBytes: sql<number>`coalesce(octet_length(${steps.result}), 0)`.as('result_bytes') };
const p = sql.placeholder;
const OUTBOX_SLOT = 1;
const UNREAD = Symbol('unread');
const DROPPED_SLOT = 1;
const DELETION_SLOT = 1;

/**
 * `InstanceStore` over Drizzle's durable-sqlite driver. The statements on
 * the replay path are prepared once per object, so a step costs a bound
 * statement, not a query build.
 */
export class DrizzleInstanceStore implements InstanceStore {
	private readonly q;
	/** The instance's generation as this store last read or wrote it (what the trigger will read). */
	private generation: number | undefined;
	/**
	 * The outbox row as this store last read or wrote it. Only this store writes it, and the
	 * engine reads it on every status change, delivery and alarm: a copy saves a query each
	 * time. Forgotten when a transaction fails (its writes may be gone).
	 */
	private outboxRow: OutboxRow | undefined | typeof UNREAD = UNREAD;

	constructor(
		private readonly db: DrizzleSqliteDODatabase<typeof schema>,
		private readonly storage: DurableObjectStorage,
	) {
		const stepValues = {
			key: p('key'), name: p('name'), kind: p('kind'), status: p('status'), attempts: p('attempts'),
			result: p('result'), errorName: p('errorName'), errorMessage: p('errorMessage'), errorStack: p('errorStack'), errorCode: p('errorCode'),
			startedAt: p('startedAt'), finishedAt: p('finishedAt'), wakeAt: p('wakeAt'), seq: p('seq'), record: p('record'),
		};
		this.q = {
			readSteps: db.select(stepRowColumns).from(steps).orderBy(asc(steps.seq)).prepare(),
			writeStep: db
				.insert(steps)
				.values(stepValues as never)
				.onConflictDoUpdate({
					target: steps.key,
					set: {
						status: sql`excluded.status`, attempts: sql`excluded.attempts`, result: sql`excluded.result`,
						errorName: sql`excluded.error_name`, errorMessage: sql`excluded.error_message`, errorStack: sql`excluded.error_stack`, errorCode: sql`excluded.error_code`,
						startedAt: sql`excluded.started_at`, finishedAt: sql`excluded.finished_at`, wakeAt: sql`excluded.wake_at`,
						record: sql`excluded.record`,
					},
				})
				.prepare(),
			readOutbox: db.select().from(outbox).where(eq(outbox.slot, OUTBOX_SLOT)).prepare(),
			appendHistory: db
				.insert(history)
				.values({
					generation: p('generation'), at: p('at'), kind: p('kind'), step: p('step'), attempt: p('attempt'), value: p('value'), detail: p('detail'),
				} as never)
				.prepare(),
		};
	}

	transaction<T>(fn: () => T): T {
		try {
			return this.storage.transactionSync(fn);
		} catch (error) {
			// What this store remembers of rows written inside may have been rolled back.
			this.generation = undefined;
			this.outboxRow = UNREAD;
			throw error;
		}
	}

	readInstance(): InstanceRow | undefined {
		const row = this.db.select().from(instance).get() as InstanceRow | undefined;
		this.generation = row?.generation;
		return row;
	}

	writeInstance(row: InstanceRow): void {
		this.generation = row.generation;
		const { id, ...rest } = row;
		this.db.insert(instance).values(row).onConflictDoUpdate({ target: instance.id, set: rest }).run();
	}

	readSteps(): StepRow[] {
		return this.q.readSteps.all() as StepRow[];
	}

	writeStep(row: StepRow): void {
		this.q.writeStep.run({ ...row, record: null } as never);
	}

	writeStepWithRecord(row: StepRow, record: NewHistoryRow): void {
		if (recordFollowsFromRow(row, record, this.generation)) {
			this.q.writeStep.run({ ...row, record: record.kind } as never);
		} else {
			this.writeStep(row);
			this.appendHistory(record);
		}
	}

	deleteSteps(): void {
		this.db.delete(steps).run();
	}

	readStepMeta(range: StepRange): StepMeta[] {
		const select = this.db.select(stepMetaColumns).from(steps);
		if ('last' in range) return (select.orderBy(desc(steps.seq)).limit(range.last).all() as StepMeta[]).reverse();
		return select.where(gt(steps.seq, range.afterSeq)).orderBy(asc(steps.seq)).limit(range.limit).all() as StepMeta[];
	}

	readStepResults(keys: string[]): Map<string, string | null> {
		const results = new Map<string, string | null>();
		if (keys.length === 0) return results;
		for (const row of this.db.select({ key: steps.key, result: steps.result }).from(steps).where(inArray(steps.key, keys)).all()) {
			results.set(row.key, row.result);
		}
		return results;
	}

	readStep(key: string): StepRow | undefined {
		return this.db.select(stepRowColumns).from(steps).where(eq(steps.key, key)).get() as StepRow | undefined;
	}

	readStepsOfKind(kind: StepKind, status?: StepStatus): StepRow[] {
		const where = status === undefined ? eq(steps.kind, kind) : and(eq(steps.kind, kind), eq(steps.status, status));
		return this.db.select(stepRowColumns).from(steps).where(where).orderBy(asc(steps.seq)).all() as StepRow[];
	}

	countSteps(): Partial<Record<StepStatus, number>> {
		const rows = this.db.select({ status: steps.status, n: count() }).from(steps).groupBy(steps.status).all();
		return Object.fromEntries(rows.map((r) => [r.status, r.n]));
	}

	setWakeup(key: string, at: number): void {
		this.db.insert(wakeups).values({ key, at }).onConflictDoUpdate({ target: wakeups.key, set: { at } }).run();
	}

	deleteWakeup(key: string): void {
		this.db.delete(wakeups).where(eq(wakeups.key, key)).run();
	}

	deleteWakeupsDue(now: number): void {
		this.db.delete(wakeups).where(lte(wakeups.at, now)).run();
	}

	deleteAllWakeups(): void {
		this.db.delete(wakeups).run();
	}

	earliestWakeup(): number | undefined {
		return this.db.select({ at: min(wakeups.at) }).from(wakeups).get()?.at ?? undefined;
	}

	appendEvent(name: string, payload: string | null, receivedAt: number): void {
		this.db.insert(events).values({ name, payload, receivedAt }).run();
	}

	oldestEvent(name: string): EventRow | undefined {
		return this.db
			.select({ seq: events.seq, name: events.name, payload: events.payload, receivedAt: events.receivedAt })
			.from(events)
			.where(eq(events.name, name))
			.orderBy(asc(events.seq))
			.limit(1)
			.get();
	}

	deleteEvent(seq: number): void {
		this.db.delete(events).where(eq(events.seq, seq)).run();
	}

	deleteAllEvents(): void {
		this.db.delete(events).run();
	}

	eventBuffer(name?: string): { count: number; bytes: number } {
		// octet_length reads each size from the record header, not the payloads themselves.
		const select = this.db.select({ count: count(), bytes: sql<number>`coalesce(sum(octet_length(${events.payload})), 0)` }).from(events);
		const row = (name === undefined ? select : select.where(eq(events.name, name))).get();
		return { count: row?.count ?? 0, bytes: row?.bytes ?? 0 };
	}

	dropEvents(): number {
		const { count: n } = this.eventBuffer();
		if (n === 0) return 0;
		this.db.delete(events).run();
		this.db
			.insert(droppedEvents)
			.values({ slot: DROPPED_SLOT, count: n })
			.onConflictDoUpdate({ target: droppedEvents.slot, set: { count: sql`${droppedEvents.count} + ${n}` } })
			.run();
		return n;
	}

	droppedEvents(): number {
		return this.db.select({ count: droppedEvents.count }).from(droppedEvents).where(eq(droppedEvents.slot, DROPPED_SLOT)).get()?.count ?? 0;
	}

	readEventKey(key: string): EventKeyRow | undefined {
		return this.db.select({ key: eventKeys.key, name: eventKeys.name, digest: eventKeys.digest }).from(eventKeys).where(eq(eventKeys.key, key)).get();
	}

	writeEventKey(row: EventKeyRow, at: number, keep: number): void {
		this.db.insert(eventKeys).values({ ...row, at }).onConflictDoNothing().run();
		this.db.run(sql`DELETE FROM ${eventKeys} WHERE ${eventKeys.seq} <= (SELECT max(${eventKeys.seq}) FROM ${eventKeys}) - ${keep}`);
	}

	appendHistory(row: NewHistoryRow): void {
		this.q.appendHistory.run(row as never);
	}

	readHistoryMeta(range: HistoryRange): HistoryMeta[] {
		// octet_length reads the sizes from the record header, not the (up to 1 MiB) values.
		return this.db
			.select({ seq: history.seq, bytes: sql<number>`coalesce(octet_length(${history.value}), 0) + coalesce(octet_length(${history.detail}), 0)` })
			.from(history)
			.where(and(gt(history.seq, range.afterSeq), eq(history.generation, range.generation)))
			.orderBy(asc(history.seq))
			.limit(range.limit)
			.all();
	}

	readHistory(range: HistoryRange): HistoryRow[] {
		return this.db
			.select()
			.from(history)
			.where(and(gt(history.seq, range.afterSeq), eq(history.generation, range.generation)))
			.orderBy(asc(history.seq))
			.limit(range.limit)
			.all() as HistoryRow[];
	}

	historySize(afterSeq: number): { bytes: number; lastSeq: number } {
		// A range of the rowid from the last counted record: only the records since the last
		// status change, and octet_length reads their sizes from the record headers.
		const row = this.db
			.select({
				bytes: sql<number>`coalesce(sum(coalesce(octet_length(${history.value}), 0) + coalesce(octet_length(${history.detail}), 0)), 0)`,
				lastSeq: sql<number | null>`max(${history.seq})`,
			})
			.from(history)
			.where(gt(history.seq, afterSeq))
			.get();
		return { bytes: row?.bytes ?? 0, lastSeq: row?.lastSeq ?? afterSeq };
	}

	writeOutbox(row: OutboxRow): void {
		const values = { entry: JSON.stringify(row.entry), version: row.entry.version, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt };
		this.db.insert(outbox).values({ slot: OUTBOX_SLOT, ...values }).onConflictDoUpdate({ target: outbox.slot, set: values }).run();
		// The backlog mark survives a newer entry (see OutboxRow).
		const before = this.outboxRow;
		this.outboxRow = before === UNREAD ? UNREAD : { entry: row.entry, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt, backloggedSince: before?.backloggedSince ?? null };
	}

	readOutbox(): OutboxRow | undefined {
		if (this.outboxRow === UNREAD) {
			const row = this.q.readOutbox.get();
			this.outboxRow = row && { entry: JSON.parse(row.entry) as IndexEntry, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt, backloggedSince: row.backloggedSince };
		}
		return this.outboxRow && { ...this.outboxRow };
	}

	ackOutbox(version: number): void {
		this.db.delete(outbox).where(and(eq(outbox.slot, OUTBOX_SLOT), eq(outbox.version, version))).run();
		if (this.outboxRow !== UNREAD && this.outboxRow?.entry.version === version) this.outboxRow = undefined;
	}

	deferOutbox(version: number, attempts: number, nextAttemptAt: number): void {
		this.db.update(outbox).set({ attempts, nextAttemptAt }).where(and(eq(outbox.slot, OUTBOX_SLOT), eq(outbox.version, version))).run();
		if (this.outboxRow !== UNREAD && this.outboxRow?.entry.version === version) this.outboxRow = { ...this.outboxRow, attempts, nextAttemptAt };
	}

	markOutboxBacklogged(since: number | null): void {
		this.db.update(outbox).set({ backloggedSince: since }).where(eq(outbox.slot, OUTBOX_SLOT)).run();
		if (this.outboxRow !== UNREAD && this.outboxRow) this.outboxRow = { ...this.outboxRow, backloggedSince: since };
	}

	readDeletion(): DeletionRow | undefined {
		const row = this.db.select().from(deletion).where(eq(deletion.slot, DELETION_SLOT)).get();
		if (!row) return undefined;
		const { slot: _slot, ...rest } = row;
		return { ...rest, reason: rest.reason as DeletionRow['reason'], archive: rest.archive === 1 };
	}

	writeDeletion(row: DeletionRow): void {
		const values = { ...row, archive: row.archive ? 1 : 0 };
		this.db.insert(deletion).values({ slot: DELETION_SLOT, ...values }).onConflictDoUpdate({ target: deletion.slot, set: values }).run();
	}
}

/** Whether the `steps_record_*` triggers (drizzle/0007) would append exactly `record` for this write. */
function recordFollowsFromRow(row: StepRow, record: NewHistoryRow, generation: number | undefined): boolean {
	if (generation === undefined || record.generation !== generation || record.detail !== null) return false;
	if (record.step !== row.name || record.attempt !== row.attempts) return false;
	if (record.kind === 'step.started') return record.at === row.startedAt && record.value === null;
	if (record.kind === 'step.completed') return record.at === row.finishedAt && record.value === row.result;
	return false;
}
