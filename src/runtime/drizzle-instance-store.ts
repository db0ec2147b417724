import { and, asc, count, desc, eq, getTableColumns, getTableName, gte, inArray, lte, min, or, sql } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import * as schema from '../db/schema';
import type { IndexEntry } from '../engine/index/index-entry';
import type { HistoryKind, HistoryMeta, HistoryRow, NewHistoryRow } from '../engine/history/history';
import { takeWithinBytes } from '../engine/history/history';
import { historyRecordBytes } from '../engine/definition/instance-limits';
import { SMALL_RESULT_BYTES } from '../engine/support/limits';
import type { CutPasses, DeletionRow, EventKeyRow, EventRow, HistoryRange, InlineRow, InstanceRow, InstanceStore, OutboxRow, StepCount, StepMeta, StepRange, StepRef, StepRow } from '../engine/storage/store';
import type { StepKind } from '../engine/support/step-kinds';
import { UNFINISHED_STEP_STATUSES, type StepStatus } from '../engine/support/statuses';
import { checkStatement } from './sql-limits';
import { EVERY_TABLE, type TablePresence } from './first-write-tables';
import { HISTORY_TAIL_SQL, INSERT_COMPLETED_DO_STEP_SQL, INSERT_STEP_SQL, isPlainCompletedDoStep, materialiseSql, recordMetaQuery, recordsInRow, recordsQuery, toHistoryMeta, toHistoryRow } from './step-records';

const { instance, steps, history, wakeups, events, outbox, eventKeys, droppedEvents, deletion, inlineChildren } = schema;
const { result: _result, recordSeq: _recordSeq, recordCount: _recordCount, recordGeneration: _recordGeneration, ...stepColumns } = getTableColumns(steps);
/** A step row as the engine knows it: the records it stands for are the history's (step-records.ts). */
const stepRowColumns = { ...stepColumns, result: steps.result };
// `pending` is the store's own (the outbox in the row, see `outboxInRow`), never part of an `InstanceRow`.
const { pending: _pending, ...instanceColumns } = getTableColumns(instance);
/**
 * A step's upsert, by hand (see `upsertStep`): the columns of `steps` the engine writes. The
 * records a row stands for (`record_*`) are set by its first write only (`INSERT_STEP_SQL`) and
 * never changed by this one.
 */
const UPSERT_STEP_SQL =
	'INSERT INTO steps (seq, key, name, kind, status, attempts, result, error_name, error_message, error_stack, error_code, started_at, finished_at, wake_at, sensitive) ' +
	'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (seq) DO UPDATE SET ' +
	'status = excluded.status, attempts = excluded.attempts, result = excluded.result, error_name = excluded.error_name, error_message = excluded.error_message, ' +
	'error_stack = excluded.error_stack, error_code = excluded.error_code, started_at = excluded.started_at, finished_at = excluded.finished_at, wake_at = excluded.wake_at, ' +
	'sensitive = excluded.sensitive WHERE steps.key = excluded.key';
const p = sql.placeholder;
const OUTBOX_SLOT = 1;
const UNREAD = Symbol('unread');
const DROPPED_SLOT = 1;
const DELETION_SLOT = 1;
const CUT_PASSES_KEY = 'shardflow:cut-passes';
/**
 * The writes of every status change (the instance row, its history record, the index outbox) and of an
 * index delivery's ack, by hand like the step's (docs/decisions.md "Hand-written SQL on a create's and
 * a transition's path"): their text is built once per isolate from the schema's columns, not prepared
 * by Drizzle once per object, and every workflow instance is a new object.
 */
const instanceKeys = Object.keys(instanceColumns) as (keyof InstanceRow & keyof typeof instanceColumns)[];
const instanceColumn = (key: keyof typeof instanceColumns) => `"${instanceColumns[key].name}"`;
const WRITE_INSTANCE_SQL =
	`INSERT INTO instance (${instanceKeys.map(instanceColumn).join(', ')}) VALUES (${instanceKeys.map(() => '?').join(', ')}) ` +
	`ON CONFLICT (id) DO UPDATE SET ${instanceKeys.filter((key) => key !== 'id').map((key) => `${instanceColumn(key)} = excluded.${instanceColumn(key)}`).join(', ')}`;
const APPEND_HISTORY_SQL = 'INSERT INTO history (seq, generation, at, kind, step, attempt, value, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';
// The backlog mark survives a newer entry (see OutboxRow): the update leaves `backlogged_since` alone.
const WRITE_OUTBOX_SQL =
	`INSERT INTO outbox (slot, entry, version, attempts, next_attempt_at) VALUES (${OUTBOX_SLOT}, ?, ?, ?, ?) ` +
	'ON CONFLICT (slot) DO UPDATE SET entry = excluded.entry, version = excluded.version, attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at';
const READ_OUTBOX_SQL = `SELECT entry, attempts, next_attempt_at, backlogged_since FROM outbox WHERE slot = ${OUTBOX_SLOT}`;
// `<=`: an entry acknowledged supersedes an older one pending in the other place (see `readOutbox`).
const ACK_OUTBOX_SQL = `DELETE FROM outbox WHERE slot = ${OUTBOX_SLOT} AND version <= ?`;
/**
 * The outbox in the instance row (`outboxInRow`): the pending entry is the row's `pending` JSON,
 * written by the same upsert as the row on a status change (1 row written, not 2). The backlog
 * mark survives a newer entry here too: the update keeps the old JSON's `backloggedSince`.
 */
const KEEP_BACKLOG = `json_set(?, '$.backloggedSince', json_extract(instance.pending, '$.backloggedSince'))`;
const WRITE_INSTANCE_PENDING_SQL =
	`INSERT INTO instance (${instanceKeys.map(instanceColumn).join(', ')}, pending) VALUES (${instanceKeys.map(() => '?').join(', ')}, ?) ` +
	`ON CONFLICT (id) DO UPDATE SET ${instanceKeys.filter((key) => key !== 'id').map((key) => `${instanceColumn(key)} = excluded.${instanceColumn(key)}`).join(', ')}, ` +
	`pending = ${KEEP_BACKLOG.replace('?', 'excluded.pending')}`;
const WRITE_PENDING_SQL = `UPDATE instance SET pending = ${KEEP_BACKLOG}`;
const READ_PENDING_SQL = 'SELECT pending FROM instance';
const ACK_PENDING_SQL = "UPDATE instance SET pending = NULL WHERE pending IS NOT NULL AND json_extract(pending, '$.entry.version') <= ?";
const DEFER_PENDING_SQL =
	"UPDATE instance SET pending = json_set(pending, '$.attempts', ?, '$.nextAttemptAt', ?) WHERE pending IS NOT NULL AND json_extract(pending, '$.entry.version') = ?";
const MARK_PENDING_SQL = "UPDATE instance SET pending = json_set(pending, '$.backloggedSince', ?) WHERE pending IS NOT NULL";
/**
 * What a status and a pass read of the steps, by hand too: a status reads them on every call, and a
 * prepared Drizzle select costs a new object its building and every call its row mapping. A step's
 * metadata is its columns without the result and the records it stands for (step-records.ts), read
 * back with each column's own Drizzle mapping; octet_length reads the result's size from the record
 * header, not the (up to 1 MiB) value; small results come along.
 */
const stepMetaKeys = Object.keys(stepColumns) as (keyof typeof stepColumns)[];
const STEP_META_SELECT =
	`SELECT ${stepMetaKeys.map((key) => `"${stepColumns[key].name}"`).join(', ')}, coalesce(octet_length(result), 0) AS result_bytes, ` +
	`CASE WHEN coalesce(octet_length(result), 0) <= ${SMALL_RESULT_BYTES} THEN result END AS small_result FROM steps`;
const LAST_STEP_META_SQL = `${STEP_META_SELECT} ORDER BY seq DESC LIMIT ?`;
const STEP_META_AFTER_SQL = `${STEP_META_SELECT} WHERE seq > ? ORDER BY seq ASC LIMIT ?`;
const COUNT_STEPS_SQL = 'SELECT kind, status, count(*) AS n FROM steps GROUP BY kind, status';

/** A row of `STEP_META_SELECT` as the engine knows it: a small result only when it is small. */
function toStepMeta(raw: SqlStorageValue[]): StepMeta {
	const meta: Record<string, unknown> = {};
	stepMetaKeys.forEach((key, i) => {
		const value = raw[i];
		meta[key] = value === null || value === undefined ? null : stepColumns[key].mapFromDriverValue(value);
	});
	const resultBytes = Number(raw[stepMetaKeys.length]);
	meta.resultBytes = resultBytes;
	if (resultBytes <= SMALL_RESULT_BYTES) meta.smallResult = raw[stepMetaKeys.length + 1] as string | null;
	return meta as StepMeta;
}

/** What a store knows of its object's tables before reading them. */
export interface StoreStart {
	/** The schema was created just now: every table is empty, so the first reads need no query. */
	empty?: boolean;
	/** Which tables created on their first write exist (default: every table does). */
	tables?: TablePresence;
	/**
	 * A status change writes its index entry into the instance row instead of the outbox table
	 * (`SHARDFLOW_OUTBOX_IN_ROW`): 1 row written per change, not 2. Off by default: a build
	 * before drizzle/0019 reads only the outbox table, so only once no deploy can roll back to
	 * one may it be on (docs/decisions.md "The outbox in the instance row"). Either way the
	 * store reads, acknowledges and retries an entry from both places.
	 */
	outboxInRow?: boolean;
}

/** The instance's tables created on their first write (db/role-tables.ts `FIRST_WRITE_TABLES`). */
const EVENTS = getTableName(events);
const EVENT_KEYS = getTableName(eventKeys);
const DROPPED_EVENTS = getTableName(droppedEvents);
const DELETION = getTableName(deletion);
const WAKEUPS = getTableName(wakeups);
const INLINE_CHILDREN = getTableName(inlineChildren);

/**
 * `InstanceStore` over Drizzle's durable-sqlite driver. The writes of a status
 * change and of a step are hand-written SQL whose text is built once per isolate;
 * the other statements of a pass, a status and an index delivery are prepared
 * once per object, so each costs a bound statement, not a query build; and what only this store
 * writes (the outbox row, the history's tail, the earliest wake-up) it keeps,
 * so reading it back costs nothing. Under `wrangler dev` every storage call is
 * the unit of cost (docs/decisions.md), so a short instance's calls are counted.
 */
export class DrizzleInstanceStore implements InstanceStore {
	private readonly q;
	/** Whether the instance row is known to be absent without a read (a new object). */
	private instanceAbsent: boolean;
	/**
	 * The history's last seq (of `history` rows and of the records step rows stand for,
	 * step-records.ts), and the bytes of its records after `tailFrom` (undefined: not counted),
	 * as this store counted them (undefined: not known, read before the next append). Only this
	 * store assigns seqs and nothing deletes a record, so each append is the last seq plus one.
	 */
	private lastHistorySeq: number | undefined;
	private tailFrom: number | undefined = 0;
	private tailBytes = 0;
	/** The earliest wake-up (undefined: none) as this store knows it, or UNREAD. */
	private earliest: number | undefined | typeof UNREAD = UNREAD;
	/** Whether the steps table is known to be empty (a new object, or after `deleteSteps`). */
	private noSteps = false;
	/** The highest `seq` of the steps table as this store wrote it (0: none), or UNREAD. */
	private lastStepSeq: number | typeof UNREAD = UNREAD;
	/** Whether no event is known to be buffered, and the dropped count if known. */
	private noEvents = false;
	private dropped: number | typeof UNREAD = UNREAD;
	/**
	 * The outbox row as this store last read or wrote it. Only this store writes it, and the
	 * engine reads it on every status change, delivery and alarm: a copy saves a query each
	 * time. Forgotten when a transaction fails (its writes may be gone).
	 */
	private outboxRow: OutboxRow | undefined | typeof UNREAD = UNREAD;
	/** The pending entry in each place (the outbox table, the instance row), as last read or written; `outboxRow` is the newer. */
	private tableOutbox: OutboxRow | undefined | typeof UNREAD = UNREAD;
	private rowOutbox: OutboxRow | undefined | typeof UNREAD = UNREAD;
	private readonly outboxInRow: boolean;
	/**
	 * In a transaction, with the outbox in the row: the instance row written and not yet sent,
	 * so that the entry the same change stages goes into the same statement. Sent at the
	 * transaction's end, or before anything reads the row.
	 */
	private heldInstance: InstanceRow | undefined;
	private transactionDepth = 0;
	/** The tables created on their first write that exist: a read of one that does not finds nothing, a write creates it. */
	private readonly tables: TablePresence;

	constructor(
		private readonly db: DrizzleSqliteDODatabase,
		private readonly storage: DurableObjectStorage,
		start: StoreStart = {},
	) {
		this.tables = start.tables ?? EVERY_TABLE;
		this.instanceAbsent = start.empty === true;
		this.outboxInRow = start.outboxInRow === true;
		if (start.empty) {
			this.outboxRow = undefined;
			this.tableOutbox = undefined;
			this.rowOutbox = undefined;
			this.lastHistorySeq = 0;
			this.earliest = undefined;
			this.noSteps = true;
			this.lastStepSeq = 0;
			this.noEvents = true;
			this.dropped = 0;
		}
		this.q = preparedOnce({
			readSteps: () => db.select(stepRowColumns).from(steps).orderBy(asc(steps.seq)).prepare(),
			readInstance: () => db.select(instanceColumns).from(instance).prepare(),
			earliestWakeup: () => db.select({ at: min(wakeups.at) }).from(wakeups).prepare(),
			deleteWakeupsDue: () =>
				db
					.delete(wakeups)
					.where(and(lte(wakeups.at, p('now')), sql`${wakeups.key} NOT IN (SELECT value FROM json_each(${p('spare')}))`))
					.prepare(),
			// One bound statement for any number of steps: their seqs (the rowid; no index on key) travel as one JSON array.
			stepResults: () =>
				db
					.select({ key: steps.key, result: steps.result })
					.from(steps)
					.where(sql`${steps.seq} IN (SELECT value FROM json_each(${p('seqs')}))`)
					.prepare(),
			bufferedEvents: () => db.select({ buffered: count() }).from(events).prepare(),
			droppedEvents: () => db.select({ dropped: sql<number>`coalesce(max(${droppedEvents.count}), 0)` }).from(droppedEvents).prepare(),
		});
	}

	transaction<T>(fn: () => T): T {
		try {
			return this.storage.transactionSync(() => {
				this.transactionDepth++;
				try {
					const result = fn();
					if (this.transactionDepth === 1) this.sendHeldInstance();
					return result;
				} finally {
					this.transactionDepth--;
					if (this.transactionDepth === 0) this.heldInstance = undefined;
				}
			});
		} catch (error) {
			// What this store remembers of rows written inside may have been rolled back.
			this.instanceAbsent = false;
			this.outboxRow = UNREAD;
			this.tableOutbox = UNREAD;
			this.rowOutbox = UNREAD;
			this.lastHistorySeq = undefined;
			this.earliest = UNREAD;
			this.noSteps = false;
			this.lastStepSeq = UNREAD;
			this.noEvents = false;
			this.dropped = UNREAD;
			this.tables.resync();
			throw error;
		}
	}

	readInstance(): InstanceRow | undefined {
		this.sendHeldInstance();
		return this.instanceAbsent ? undefined : (this.q.readInstance.get() as InstanceRow | undefined);
	}

	writeInstance(row: InstanceRow): void {
		this.instanceAbsent = false;
		const full: InstanceRow = { ...row, historyBytes: row.historyBytes ?? 0, historySeq: row.historySeq ?? 0 };
		if (this.outboxInRow && this.transactionDepth > 0) this.heldInstance = full;
		else this.exec(WRITE_INSTANCE_SQL, instanceKeys.map((key) => full[key] ?? null));
	}

	/** Writes the instance row held back for its entry (see `heldInstance`), without one. */
	private sendHeldInstance(): void {
		const held = this.heldInstance;
		if (!held) return;
		this.heldInstance = undefined;
		this.exec(WRITE_INSTANCE_SQL, instanceKeys.map((key) => held[key] ?? null));
	}

	readSteps(): StepRow[] {
		return this.noSteps ? [] : (this.q.readSteps.all() as StepRow[]);
	}

	writeStep(row: StepRow): void {
		this.upsertStep(row);
	}

	writeStepWithRecord(row: StepRow, record: NewHistoryRow): void {
		this.writeStep(row);
		this.appendHistory(record);
	}

	/**
	 * A new step's first write: one INSERT whose row stands for the records that follow from it
	 * (step-records.ts), at the next seqs; a record that does not (a sensitive step's
	 * marker, a retry's start) is appended as a `history` row.
	 */
	insertStep(row: StepRow, records: readonly NewHistoryRow[]): void {
		// Only a row above every other keeps records, so they ascend with the rowid (step-records.ts).
		const inRow = row.seq > this.highestStepSeq() ? recordsInRow(row, records) : 0;
		if (inRow === 0) {
			this.writeStep(row);
		} else {
			const seq = this.lastSeq() + 1;
			if (isPlainCompletedDoStep(row, inRow)) this.exec(INSERT_COMPLETED_DO_STEP_SQL, [row.seq, row.name, row.result, row.startedAt, row.finishedAt, seq, records[0]!.generation]);
			else this.exec(INSERT_STEP_SQL, [...stepBindings(row), seq, inRow, records[0]!.generation]);
			this.stepWritten(row);
			for (const record of records.slice(0, inRow)) this.appended(record);
		}
		for (const record of records.slice(inRow)) this.appendHistory(record);
	}

	private highestStepSeq(): number {
		if (this.lastStepSeq === UNREAD) this.lastStepSeq = Number(this.exec('SELECT coalesce(max(seq), 0) AS seq FROM steps', []).one().seq);
		return this.lastStepSeq;
	}

	private stepWritten(row: StepRow): void {
		this.noSteps = false;
		if (this.lastStepSeq !== UNREAD) this.lastStepSeq = Math.max(this.lastStepSeq, row.seq);
	}

	/**
	 * The hot path of a step: hand-written SQL with positional bindings straight to
	 * `sql.exec` (workerd caches the statement by its text), not a Drizzle prepared query,
	 * whose placeholder filling and driver layers cost more than the write itself
	 * (docs/decisions.md "Hand-written SQL on a step's hot path"). Checked against
	 * production's SQL limits like every other statement.
	 */
	private upsertStep(row: StepRow): void {
		// A row is keyed by its seq (the rowid: no index on key since drizzle/0016); a seq that holds another
		// step's row writes nothing, and is a bug to fail on, not a row to overwrite.
		if (this.exec(UPSERT_STEP_SQL, stepBindings(row)).rowsWritten === 0) {
			throw new Error(`step "${row.key}" was given seq ${row.seq}, which holds another step's row`);
		}
		this.stepWritten(row);
	}

	private exec(query: string, bindings: SqlStorageValue[]): SqlStorageCursor<Record<string, SqlStorageValue>> {
		checkStatement(query, bindings);
		return this.storage.sql.exec(query, ...bindings);
	}

	deleteSteps(): void {
		// The records the rows stand for go into `history` first: the old generation keeps them.
		this.exec(materialiseSql('1'), []);
		this.db.delete(steps).run();
		this.noSteps = true;
		this.lastStepSeq = 0;
	}

	cancelUnfinishedSteps(at: number): void {
		if (this.noSteps) return;
		this.db.update(steps).set({ status: 'cancelled', finishedAt: at, wakeAt: null }).where(inArray(steps.status, [...UNFINISHED_STEP_STATUSES])).run();
	}

	keepStepsBefore(seq: number): void {
		this.exec(materialiseSql("kind = 'rollback' OR seq >= ?"), [seq, seq]);
		this.db.delete(steps).where(or(eq(steps.kind, 'rollback'), gte(steps.seq, seq))).run();
		this.lastStepSeq = UNREAD;
	}

	readStepMeta(range: StepRange): StepMeta[] {
		if (this.noSteps) return [];
		const rows = 'last' in range ? [...this.exec(LAST_STEP_META_SQL, [range.last]).raw()].reverse() : [...this.exec(STEP_META_AFTER_SQL, [range.afterSeq, range.limit]).raw()];
		return rows.map(toStepMeta);
	}

	readStepResults(refs: readonly StepRef[]): Map<string, string | null> {
		const results = new Map<string, string | null>();
		if (refs.length === 0) return results;
		const wanted = new Set(refs.map((ref) => ref.key));
		for (const row of this.q.stepResults.all({ seqs: JSON.stringify(refs.map((ref) => ref.seq)) })) if (wanted.has(row.key)) results.set(row.key, row.result);
		return results;
	}

	readStep(key: string): StepRow | undefined {
		return this.db.select(stepRowColumns).from(steps).where(eq(steps.key, key)).get() as StepRow | undefined;
	}

	readStepsOfKind(kind: StepKind, status?: StepStatus): StepRow[] {
		const where = status === undefined ? eq(steps.kind, kind) : and(eq(steps.kind, kind), eq(steps.status, status));
		return this.db.select(stepRowColumns).from(steps).where(where).orderBy(asc(steps.seq)).all() as StepRow[];
	}

	countSteps(): StepCount[] {
		if (this.noSteps) return [];
		return this.exec(COUNT_STEPS_SQL, []).toArray().map((row) => ({ kind: row.kind as StepKind, status: row.status as StepStatus, n: Number(row.n) }));
	}

	setWakeup(key: string, at: number): void {
		this.tables.ensure(WAKEUPS);
		this.db.insert(wakeups).values({ key, at }).onConflictDoUpdate({ target: wakeups.key, set: { at } }).run();
		// Into an empty table the earliest is this one; otherwise an update may have moved the earliest later.
		this.earliest = this.earliest === undefined ? at : UNREAD;
	}

	deleteWakeup(key: string): void {
		if (this.earliest === undefined || !this.tables.has(WAKEUPS)) return;
		this.db.delete(wakeups).where(eq(wakeups.key, key)).run();
		this.earliest = UNREAD;
	}

	takeWakeup(key: string): boolean {
		if (this.earliest === undefined || !this.tables.has(WAKEUPS)) return false;
		const taken = this.db.delete(wakeups).where(eq(wakeups.key, key)).returning({ key: wakeups.key }).all().length > 0;
		if (taken) this.earliest = UNREAD;
		return taken;
	}

	deleteWakeupsDue(now: number, spare: ReadonlySet<string>): void {
		if (this.earliest === undefined || (this.earliest !== UNREAD && this.earliest > now) || !this.tables.has(WAKEUPS)) return;
		this.q.deleteWakeupsDue.run({ now, spare: JSON.stringify([...spare]) });
		this.earliest = UNREAD;
	}

	deleteAllWakeups(): void {
		if (this.tables.has(WAKEUPS)) this.db.delete(wakeups).run();
		this.earliest = undefined;
	}

	earliestWakeup(): number | undefined {
		if (this.earliest === UNREAD) this.earliest = this.tables.has(WAKEUPS) ? (this.q.earliestWakeup.get()?.at ?? undefined) : undefined;
		return this.earliest;
	}

	appendEvent(name: string, payload: string | null, receivedAt: number): void {
		this.tables.ensure(EVENTS);
		this.db.insert(events).values({ name, payload, receivedAt }).run();
		this.noEvents = false;
	}

	oldestEvent(name: string): EventRow | undefined {
		if (this.noEvents || !this.tables.has(EVENTS)) return undefined;
		return this.db
			.select({ seq: events.seq, name: events.name, payload: events.payload, receivedAt: events.receivedAt })
			.from(events)
			.where(eq(events.name, name))
			.orderBy(asc(events.seq))
			.limit(1)
			.get();
	}

	deleteEvent(seq: number): void {
		if (!this.tables.has(EVENTS)) return;
		this.db.delete(events).where(eq(events.seq, seq)).run();
	}

	deleteAllEvents(): void {
		if (this.tables.has(EVENTS)) this.db.delete(events).run();
		this.noEvents = true;
	}

	eventBuffer(name?: string): { count: number; bytes: number } {
		if (this.noEvents || !this.tables.has(EVENTS)) return { count: 0, bytes: 0 };
		// octet_length reads each size from the record header, not the payloads themselves.
		const select = this.db.select({ count: count(), bytes: sql<number>`coalesce(sum(octet_length(${events.payload})), 0)` }).from(events);
		const row = (name === undefined ? select : select.where(eq(events.name, name))).get();
		const buffer = { count: row?.count ?? 0, bytes: row?.bytes ?? 0 };
		if (name === undefined && buffer.count === 0) this.noEvents = true;
		return buffer;
	}

	dropEvents(): number {
		const { count: n } = this.eventBuffer();
		if (n === 0) return 0;
		this.db.delete(events).run();
		this.tables.ensure(DROPPED_EVENTS);
		this.db
			.insert(droppedEvents)
			.values({ slot: DROPPED_SLOT, count: n })
			.onConflictDoUpdate({ target: droppedEvents.slot, set: { count: sql`${droppedEvents.count} + ${n}` } })
			.run();
		this.noEvents = true;
		if (this.dropped !== UNREAD) this.dropped += n;
		return n;
	}

	eventCounts(): { buffered: number; dropped: number } {
		if (this.noEvents && this.dropped !== UNREAD) return { buffered: 0, dropped: this.dropped };
		const buffered = this.tables.has(EVENTS) ? (this.q.bufferedEvents.get()?.buffered ?? 0) : 0;
		const dropped = this.tables.has(DROPPED_EVENTS) ? (this.q.droppedEvents.get()?.dropped ?? 0) : 0;
		const counts = { buffered, dropped };
		this.noEvents = counts.buffered === 0;
		this.dropped = counts.dropped;
		return counts;
	}

	readEventKey(key: string): EventKeyRow | undefined {
		if (!this.tables.has(EVENT_KEYS)) return undefined;
		return this.db.select({ key: eventKeys.key, name: eventKeys.name, digest: eventKeys.digest }).from(eventKeys).where(eq(eventKeys.key, key)).get();
	}

	writeEventKey(row: EventKeyRow, at: number, keep: number): void {
		this.tables.ensure(EVENT_KEYS);
		this.db.insert(eventKeys).values({ ...row, at }).onConflictDoNothing().run();
		this.db.run(sql`DELETE FROM ${eventKeys} WHERE ${eventKeys.seq} <= (SELECT max(${eventKeys.seq}) FROM ${eventKeys}) - ${keep}`);
	}

	appendHistory(row: NewHistoryRow): void {
		// The seq is given: records that step rows stand for take seqs that `history` never sees.
		this.exec(APPEND_HISTORY_SQL, [this.lastSeq() + 1, row.generation, row.at, row.kind, row.step, row.attempt, row.value, row.detail]);
		this.appended(row);
	}

	/** The history's last seq, read once when this store does not know it. */
	private lastSeq(): number {
		if (this.lastHistorySeq === undefined) {
			this.lastHistorySeq = Number(this.exec(HISTORY_TAIL_SQL, [0, 0]).one().last_seq);
			this.tailFrom = undefined;
		}
		return this.lastHistorySeq;
	}

	/** A record went into the history: one more seq, and its bytes on the tail. */
	private appended(row: NewHistoryRow): void {
		if (this.lastHistorySeq === undefined) return;
		this.lastHistorySeq++;
		this.tailBytes += historyRecordBytes(row);
	}

	// The readers below merge `history` with the records step rows stand for (step-records.ts);
	// octet_length reads sizes from the record header, not the (up to 1 MiB) values.
	readHistoryMeta(range: HistoryRange): HistoryMeta[] {
		const { sql: query, bindings } = recordMetaQuery(range);
		return this.exec(query, bindings).toArray().map(toHistoryMeta);
	}

	readHistory(range: HistoryRange): HistoryRow[] {
		const { sql: query, bindings } = recordsQuery(range);
		return this.exec(query, bindings).toArray().map(toHistoryRow);
	}

	readHistoryOfKinds(query: { afterSeq: number; limit: number; kinds: readonly HistoryKind[]; maxBytes?: number }): HistoryRow[] {
		// A walk of the rowid from `afterSeq`: a subscriber's cursor is near the end, so it reads few rows.
		const { sql: statement, bindings } = recordsQuery(query);
		// Rows are taken from the cursor one at a time, so a byte budget stops the read itself (a slow subscriber's window holds few large records).
		return takeWithinBytes(this.exec(statement, bindings) as Iterable<Record<string, SqlStorageValue>> as Iterable<HistoryRow>, query.maxBytes);
	}

	lastStreamMessageIndex(generation: number): number {
		// Backwards from the newest record: asked once per pass, and only by a pass that emits,
		// whose last message is usually close to the end.
		const row = this.db
			.select({ index: history.attempt })
			.from(history)
			.where(and(eq(history.kind, 'stream.message'), eq(history.generation, generation)))
			.orderBy(desc(history.seq))
			.limit(1)
			.get();
		return row?.index ?? 0;
	}

	historyLastSeq(): number {
		if (this.lastHistorySeq !== undefined) return this.lastHistorySeq;
		// Read, not remembered: `lastHistorySeq` goes with the tail's bytes, which this does not count.
		return this.db.select({ seq: sql<number | null>`max(${history.seq})` }).from(history).get()?.seq ?? 0;
	}

	historySize(afterSeq: number): { bytes: number; lastSeq: number } {
		if (this.lastHistorySeq !== undefined) {
			// Counted as they were appended: the tail since the last status change, or none.
			if (afterSeq === this.lastHistorySeq) {
				this.tailFrom = afterSeq;
				this.tailBytes = 0;
			}
			if (afterSeq === this.tailFrom) return { bytes: this.tailBytes, lastSeq: this.lastHistorySeq };
		}
		// A range of the rowid from the last counted record (only the records since the last
		// status change) and the completed records step rows stand for; octet_length reads their
		// sizes from the record headers.
		const row = this.exec(HISTORY_TAIL_SQL, [afterSeq, afterSeq]).one();
		const tail = { bytes: Number(row.bytes), lastSeq: Math.max(afterSeq, Number(row.last_seq)) };
		this.lastHistorySeq = tail.lastSeq;
		this.tailFrom = afterSeq;
		this.tailBytes = tail.bytes;
		return tail;
	}

	writeOutbox(row: OutboxRow): void {
		if (this.outboxInRow) {
			const pending = JSON.stringify({ entry: row.entry, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt, backloggedSince: null });
			const held = this.heldInstance;
			this.heldInstance = undefined;
			if (held) this.exec(WRITE_INSTANCE_PENDING_SQL, [...instanceKeys.map((key) => held[key] ?? null), pending]);
			// Without a row to hold it (the engine always writes the row first), the entry goes to the table.
			if (held || (!this.instanceAbsent && this.exec(WRITE_PENDING_SQL, [pending]).rowsWritten > 0)) {
				this.rowOutbox = this.keepBacklog(this.rowOutbox, row);
				this.outboxRow = UNREAD;
				return;
			}
		}
		this.exec(WRITE_OUTBOX_SQL, [JSON.stringify(row.entry), row.entry.version, row.attempts, row.nextAttemptAt]);
		this.tableOutbox = this.keepBacklog(this.tableOutbox, row);
		this.outboxRow = UNREAD;
	}

	/** `row` as its place now holds it: the backlog mark survives a newer entry (see OutboxRow). */
	private keepBacklog(before: OutboxRow | undefined | typeof UNREAD, row: OutboxRow): OutboxRow | typeof UNREAD {
		return before === UNREAD ? UNREAD : { entry: row.entry, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt, backloggedSince: before?.backloggedSince ?? null };
	}

	/**
	 * The newer of the entries pending in the outbox table and in the instance row. Both can hold
	 * one across a deploy that turns `outboxInRow` on or off (or rolls back): the newer supersedes
	 * the older (the shard keeps the highest version), and its acknowledgement clears both.
	 */
	readOutbox(): OutboxRow | undefined {
		if (this.outboxRow === UNREAD) {
			if (this.tableOutbox === UNREAD) {
				const row = this.exec(READ_OUTBOX_SQL, []).toArray()[0];
				this.tableOutbox = row && {
					entry: JSON.parse(row.entry as string) as IndexEntry,
					attempts: row.attempts as number,
					nextAttemptAt: row.next_attempt_at as number,
					backloggedSince: (row.backlogged_since as number | null) ?? null,
				};
			}
			if (this.rowOutbox === UNREAD) {
				// A row held back (see `heldInstance`) is not needed here: writing it leaves `pending` as it is.
				const raw = this.instanceAbsent ? undefined : this.exec(READ_PENDING_SQL, []).toArray()[0]?.pending;
				const parsed = typeof raw === 'string' ? (JSON.parse(raw) as OutboxRow) : undefined;
				this.rowOutbox = parsed && { ...parsed, backloggedSince: parsed.backloggedSince ?? null };
			}
			const [table, row] = [this.tableOutbox, this.rowOutbox];
			const newer = table && row ? (row.entry.version > table.entry.version ? row : table) : (table ?? row);
			// A mark on either place means this instance is registered in the backlog.
			this.outboxRow = newer && { ...newer, backloggedSince: table?.backloggedSince ?? row?.backloggedSince ?? null };
		}
		return this.outboxRow && { ...this.outboxRow };
	}

	ackOutbox(version: number): void {
		if (this.tableOutbox === UNREAD || (this.tableOutbox && this.tableOutbox.entry.version <= version)) {
			this.exec(ACK_OUTBOX_SQL, [version]);
			this.tableOutbox = this.tableOutbox === UNREAD ? UNREAD : undefined;
		}
		if (this.rowOutbox === UNREAD || (this.rowOutbox && this.rowOutbox.entry.version <= version)) {
			this.sendHeldInstance();
			if (!this.instanceAbsent) this.exec(ACK_PENDING_SQL, [version]);
			this.rowOutbox = this.rowOutbox === UNREAD ? UNREAD : undefined;
		}
		this.outboxRow = UNREAD;
	}

	deferOutbox(version: number, attempts: number, nextAttemptAt: number): void {
		const table = this.tableOutbox;
		if (table === UNREAD || table?.entry.version === version) {
			this.db.update(outbox).set({ attempts, nextAttemptAt }).where(and(eq(outbox.slot, OUTBOX_SLOT), eq(outbox.version, version))).run();
			if (table !== UNREAD && table) this.tableOutbox = { ...table, attempts, nextAttemptAt };
		}
		const row = this.rowOutbox;
		if (row === UNREAD || row?.entry.version === version) {
			this.sendHeldInstance();
			if (!this.instanceAbsent) this.exec(DEFER_PENDING_SQL, [attempts, nextAttemptAt, version]);
			if (row !== UNREAD && row) this.rowOutbox = { ...row, attempts, nextAttemptAt };
		}
		this.outboxRow = UNREAD;
	}

	markOutboxBacklogged(since: number | null): void {
		const table = this.tableOutbox;
		if (table === UNREAD || table) {
			this.db.update(outbox).set({ backloggedSince: since }).where(eq(outbox.slot, OUTBOX_SLOT)).run();
			if (table !== UNREAD && table) this.tableOutbox = { ...table, backloggedSince: since };
		}
		const row = this.rowOutbox;
		if (row === UNREAD || row) {
			this.sendHeldInstance();
			if (!this.instanceAbsent) this.exec(MARK_PENDING_SQL, [since]);
			if (row !== UNREAD && row) this.rowOutbox = { ...row, backloggedSince: since };
		}
		this.outboxRow = UNREAD;
	}

	/** Kept in the object's key-value storage: one small value, read once when the engine starts and written only when a pass was cut short. */
	readCutPasses(): CutPasses | undefined {
		return this.storage.kv.get<CutPasses>(CUT_PASSES_KEY);
	}

	writeCutPasses(value: CutPasses | undefined): void {
		if (value) this.storage.kv.put(CUT_PASSES_KEY, value);
		else this.storage.kv.delete(CUT_PASSES_KEY);
	}

	readDeletion(): DeletionRow | undefined {
		if (!this.tables.has(DELETION)) return undefined;
		const row = this.db.select().from(deletion).where(eq(deletion.slot, DELETION_SLOT)).get();
		if (!row) return undefined;
		const { slot: _slot, ...rest } = row;
		return { ...rest, reason: rest.reason as DeletionRow['reason'], archive: rest.archive === 1 };
	}

	writeDeletion(row: DeletionRow): void {
		const values = { ...row, archive: row.archive ? 1 : 0 };
		this.tables.ensure(DELETION);
		this.db.insert(deletion).values({ slot: DELETION_SLOT, ...values }).onConflictDoUpdate({ target: deletion.slot, set: values }).run();
	}

	// Inline children: rare (a parent's invokes of short children), so plain Drizzle queries, no prepared ones.
	writeInlineRow(childId: string, { key, body, result, publishAt }: InlineRow): void {
		this.tables.ensure(INLINE_CHILDREN);
		this.db
			.insert(inlineChildren)
			.values({ childId, key, body, result, publishAt })
			.onConflictDoUpdate({ target: [inlineChildren.childId, inlineChildren.key], set: { body, result, publishAt } })
			.run();
	}

	readInlineRows(childId: string): InlineRow[] {
		if (!this.tables.has(INLINE_CHILDREN)) return [];
		return this.db.select({ key: inlineChildren.key, body: inlineChildren.body, result: inlineChildren.result, publishAt: inlineChildren.publishAt }).from(inlineChildren).where(eq(inlineChildren.childId, childId)).all();
	}

	deleteInline(childId: string): void {
		if (this.tables.has(INLINE_CHILDREN)) this.db.delete(inlineChildren).where(eq(inlineChildren.childId, childId)).run();
	}

	inlinePublishes(): { childId: string; publishAt: number }[] {
		if (!this.tables.has(INLINE_CHILDREN)) return [];
		return this.db
			.select({ childId: inlineChildren.childId, publishAt: inlineChildren.publishAt })
			.from(inlineChildren)
			.where(and(eq(inlineChildren.key, ''), sql`${inlineChildren.publishAt} IS NOT NULL`))
			.all() as { childId: string; publishAt: number }[];
	}

	deleteUnpublishedInline(): void {
		if (!this.tables.has(INLINE_CHILDREN)) return;
		this.db
			.delete(inlineChildren)
			.where(sql`${inlineChildren.childId} NOT IN (SELECT child_id FROM inline_children WHERE key = '' AND publish_at IS NOT NULL)`)
			.run();
	}
}

/**
 * Statements prepared on first use: a create uses 3 of them, a status 3 others,
 * and building a statement is most of what Drizzle costs.
 */
function preparedOnce<T extends Record<string, () => unknown>>(builders: T): { readonly [K in keyof T]: ReturnType<T[K]> } {
	const prepared = {} as { [K in keyof T]: ReturnType<T[K]> };
	for (const key of Object.keys(builders) as Array<keyof T>) {
		Object.defineProperty(prepared, key, {
			get() {
				const statement = builders[key]!();
				Object.defineProperty(prepared, key, { value: statement });
				return statement;
			},
			configurable: true,
		});
	}
	return prepared;
}

/** A step row's bindings in the column order of `UPSERT_STEP_SQL` (and the start of `INSERT_STEP_SQL`'s). */
function stepBindings(row: StepRow): SqlStorageValue[] {
	return [
		row.seq, row.key, row.name, row.kind, row.status, row.attempts, row.result, row.errorName, row.errorMessage, row.errorStack, row.errorCode,
		row.startedAt, row.finishedAt, row.wakeAt, sensitiveColumn(row),
	];
}

/** The `sensitive` column as bound: placeholders skip the column's boolean mapping, so 1 or 0 (read back as a boolean; null, from rows older than the column, as false). */
function sensitiveColumn(row: StepRow): 1 | 0 {
	return row.sensitive ? 1 : 0;
}
