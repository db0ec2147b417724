import { and, asc, desc, eq, gte, inArray, lte, min, or, sql } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import * as schema from '../db/schema';
import type { IndexEntry } from '../engine/index/index-entry';
import type { HistoryKind, HistoryMeta, HistoryRow, NewHistoryRow } from '../engine/history/history';
import { takeWithinBytes } from '../engine/history/history';
import { historyRecordBytes } from '../engine/definition/instance-limits';
import type { HistoryRange, InstanceRow, InstanceStore, OutboxRow, StepCount, StepMeta, StepRange, StepRef, StepRow } from '../engine/storage/store';
import type { StepKind } from '../engine/support/step-kinds';
import { UNFINISHED_STEP_STATUSES, type StepStatus } from '../engine/support/statuses';
import { checkStatement } from './sql-limits';
import type { TablePresence } from './first-write-tables';
import { HISTORY_TAIL_SQL, INSERT_COMPLETED_DO_STEP_SQL, INSERT_STEP_SQL, isPlainCompletedDoStep, materialiseSql, recordMetaQuery, recordsInRow, recordsQuery, toHistoryMeta, toHistoryRow } from './step-records';
import { InstanceSideTables } from './instance-side-tables';
import { stepRowColumns, UPSERT_STEP_SQL, p, OUTBOX_SLOT, UNREAD, instanceKeys, WRITE_INSTANCE_SQL, APPEND_HISTORY_SQL, WRITE_OUTBOX_SQL, READ_OUTBOX_SQL, ACK_OUTBOX_SQL, WRITE_INSTANCE_PENDING_SQL, WRITE_PENDING_SQL, READ_PENDING_SQL, ACK_PENDING_SQL, DEFER_PENDING_SQL, MARK_PENDING_SQL, LAST_STEP_META_SQL, STEP_META_AFTER_SQL, COUNT_STEPS_SQL, toStepMeta, WAKEUPS, preparedOnce, stepBindings, instanceColumns } from './instance-store-sql';

const { instance, steps, history, wakeups, outbox } = schema;

/** What a store knows of its object's tables before reading them. */
export interface StoreStart {
	/** The schema was created just now: every table is empty, so the first reads need no query. */
	empty?: boolean;
	/** Which tables created on their first write exist (default: every table does). */
	tables?: TablePresence;
	/**
	 * A status change writes its index entry into the instance row instead of the outbox table
	 * (storage format 2 and up, runtime/storage-format.ts): 1 row written per change, not 2. Off by default: a build
	 * before drizzle/0019 reads only the outbox table, so only once no deploy can roll back to
	 * one may it be on (docs/decisions.md "The outbox in the instance row"). Either way the
	 * store reads, acknowledges and retries an entry from both places.
	 */
	outboxInRow?: boolean;
}

/**
 * `InstanceStore` over Drizzle's durable-sqlite driver. The writes of a status
 * change and of a step are hand-written SQL whose text is built once per isolate;
 * the other statements of a pass, a status and an index delivery are prepared
 * once per object, so each costs a bound statement, not a query build; and what only this store
 * writes (the outbox row, the history's tail, the earliest wake-up) it keeps,
 * so reading it back costs nothing. Under `wrangler dev` every storage call is
 * the unit of cost (docs/decisions.md), so a short instance's calls are counted.
 */
export class DrizzleInstanceStore extends InstanceSideTables implements InstanceStore {
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

	constructor(db: DrizzleSqliteDODatabase, storage: DurableObjectStorage, start: StoreStart = {}) {
		super(db, storage, start);
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
}
