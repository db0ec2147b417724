import { and, asc, count, eq, sql } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import * as schema from '../db/schema';
import type { CutPasses, DeletionRow, EventKeyRow, EventRow, InlineRow } from '../engine/storage/store';
import { EVERY_TABLE, type TablePresence } from './first-write-tables';
import { UNREAD, DROPPED_SLOT, DELETION_SLOT, CUT_PASSES_KEY, EVENTS, EVENT_KEYS, DROPPED_EVENTS, DELETION, INLINE_CHILDREN, preparedOnce } from './instance-store-sql';

const { events, eventKeys, droppedEvents, deletion, inlineChildren } = schema;

/**
 * The instance's tables a run writes only now and then, each created on its first write
 * (first-write-tables.ts): buffered events, their idempotency keys and drop count, the
 * deletion row, inline children; and the cut-pass count in key-value storage. The hot
 * tables (instance, steps, history, wake-ups, outbox) are `DrizzleInstanceStore`'s, which
 * extends this class.
 */
export abstract class InstanceSideTables {
	/** Whether no event is known to be buffered, and the dropped count if known. */
	protected noEvents = false;
	protected dropped: number | typeof UNREAD = UNREAD;
	/** The tables created on their first write that exist: a read of one that does not finds nothing, a write creates it. */
	protected readonly tables: TablePresence;
	private readonly eventQ;

	constructor(
		protected readonly db: DrizzleSqliteDODatabase,
		protected readonly storage: DurableObjectStorage,
		/** `StoreStart`'s (drizzle-instance-store.ts) tables and emptiness. */
		start: { tables?: TablePresence; empty?: boolean },
	) {
		this.tables = start.tables ?? EVERY_TABLE;
		if (start.empty) {
			this.noEvents = true;
			this.dropped = 0;
		}
		this.eventQ = preparedOnce({
			bufferedEvents: () => db.select({ buffered: count() }).from(events).prepare(),
			droppedEvents: () => db.select({ dropped: sql<number>`coalesce(max(${droppedEvents.count}), 0)` }).from(droppedEvents).prepare(),
		});
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
		const buffered = this.tables.has(EVENTS) ? (this.eventQ.bufferedEvents.get()?.buffered ?? 0) : 0;
		const dropped = this.tables.has(DROPPED_EVENTS) ? (this.eventQ.droppedEvents.get()?.dropped ?? 0) : 0;
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
