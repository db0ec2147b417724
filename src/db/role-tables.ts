import { getTableName } from 'drizzle-orm';
import type { SQLiteTable } from 'drizzle-orm/sqlite-core';
import type { RoleKind } from '../engine/object-names';
import * as schema from './schema';

/**
 * The tables each role's objects create (engine/object-names.ts names the roles). Every
 * table of schema.ts belongs to exactly one role; an object creates only its role's
 * tables, with their indexes and triggers (runtime/migration-tables.ts picks them out of
 * drizzle-kit's migrations), so a workflow instance does not carry the index's, the
 * schedules', the limiters' or the bulk jobs' empty tables for its whole retention
 * (docs/decisions.md "One migration chain, each role its own tables").
 */
export const ROLE_TABLES: Record<RoleKind, readonly SQLiteTable[]> = {
	instance: [schema.instance, schema.steps, schema.history, schema.wakeups, schema.events, schema.eventKeys, schema.droppedEvents, schema.outbox, schema.deletion, schema.concurrencySlot, schema.inlineChildren],
	index: [schema.indexEntries, schema.indexAttributes, schema.indexMetricMinutes, schema.indexMetricDurations],
	backlog: [schema.indexBacklog],
	keys: [schema.engineKeys],
	schedule: [schema.scheduleState, schema.scheduleRuns],
	limiter: [schema.limiterSlots],
	bulk: [schema.bulkJob, schema.bulkItems, schema.bulkCounts],
};

/**
 * The tables of a role that an object creates on their first write, not with the rest of its schema
 * (runtime/first-write-tables.ts): most workflow instances never buffer an event, take an event key,
 * drop events, queue for a concurrency slot or get a deletion by request, and every instance is a
 * new object, whose schema is most of what its create writes and keeps; nor do runs whose steps never
 * sleep, retry, wait or continue in a new invocation write a wake-up (docs/decisions.md
 * "Tables created on their first write"). Each is written only through the store's few methods,
 * which create it first; a read of one that does not exist finds nothing.
 */
export const FIRST_WRITE_TABLES: Partial<Record<RoleKind, readonly SQLiteTable[]>> = {
	instance: [schema.wakeups, schema.events, schema.eventKeys, schema.droppedEvents, schema.deletion, schema.concurrencySlot, schema.inlineChildren],
};

const names = new Map<RoleKind, ReadonlySet<string>>();
const firstWriteNames = new Map<RoleKind, ReadonlySet<string>>();

/** The SQLite names of a role's tables created on their first write (see `FIRST_WRITE_TABLES`). */
export function firstWriteTableNames(role: RoleKind): ReadonlySet<string> {
	let set = firstWriteNames.get(role);
	if (!set) firstWriteNames.set(role, (set = new Set((FIRST_WRITE_TABLES[role] ?? []).map((table) => getTableName(table)))));
	return set;
}

/** The SQLite names of a role's tables. */
export function roleTableNames(role: RoleKind): ReadonlySet<string> {
	let set = names.get(role);
	if (!set) names.set(role, (set = new Set(ROLE_TABLES[role].map((table) => getTableName(table)))));
	return set;
}
