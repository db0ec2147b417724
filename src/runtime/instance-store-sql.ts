import { getTableColumns, getTableName, sql } from 'drizzle-orm';
import * as schema from '../db/schema';
import { SMALL_RESULT_BYTES } from '../engine/support/limits';
import type { InstanceRow, StepMeta, StepRow } from '../engine/storage/store';

// The instance store's statements and bindings, built once per isolate from the schema's columns
// (drizzle-instance-store.ts runs them, instance-side-tables.ts those of the rarely written tables).

const { instance, steps, wakeups, events, eventKeys, droppedEvents, deletion, inlineChildren } = schema;
const { result: _result, recordSeq: _recordSeq, recordCount: _recordCount, recordGeneration: _recordGeneration, ...stepColumns } = getTableColumns(steps);
/** A step row as the engine knows it: the records it stands for are the history's (step-records.ts). */
export const stepRowColumns = { ...stepColumns, result: steps.result };
// `pending` is the store's own (the outbox in the row, see `outboxInRow`), never part of an `InstanceRow`.
const { pending: _pending, ...instanceColumns } = getTableColumns(instance);
export { instanceColumns };
/**
 * A step's upsert, by hand (see `upsertStep`): the columns of `steps` the engine writes. The
 * records a row stands for (`record_*`) are set by its first write only (`INSERT_STEP_SQL`) and
 * never changed by this one.
 */
export const UPSERT_STEP_SQL =
	'INSERT INTO steps (seq, key, name, kind, status, attempts, result, error_name, error_message, error_stack, error_code, started_at, finished_at, wake_at, sensitive) ' +
	'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (seq) DO UPDATE SET ' +
	'status = excluded.status, attempts = excluded.attempts, result = excluded.result, error_name = excluded.error_name, error_message = excluded.error_message, ' +
	'error_stack = excluded.error_stack, error_code = excluded.error_code, started_at = excluded.started_at, finished_at = excluded.finished_at, wake_at = excluded.wake_at, ' +
	'sensitive = excluded.sensitive WHERE steps.key = excluded.key';
export const p = sql.placeholder;
export const OUTBOX_SLOT = 1;
export const UNREAD = Symbol('unread');
export const DROPPED_SLOT = 1;
export const DELETION_SLOT = 1;
export const CUT_PASSES_KEY = 'shardflow:cut-passes';
/**
 * The writes of every status change (the instance row, its history record, the index outbox) and of an
 * index delivery's ack, by hand like the step's (docs/decisions.md "Hand-written SQL on a create's and
 * a transition's path"): their text is built once per isolate from the schema's columns, not prepared
 * by Drizzle once per object, and every workflow instance is a new object.
 */
export const instanceKeys = Object.keys(instanceColumns) as (keyof InstanceRow & keyof typeof instanceColumns)[];
export const instanceColumn = (key: keyof typeof instanceColumns) => `"${instanceColumns[key].name}"`;
export const WRITE_INSTANCE_SQL =
	`INSERT INTO instance (${instanceKeys.map(instanceColumn).join(', ')}) VALUES (${instanceKeys.map(() => '?').join(', ')}) ` +
	`ON CONFLICT (id) DO UPDATE SET ${instanceKeys.filter((key) => key !== 'id').map((key) => `${instanceColumn(key)} = excluded.${instanceColumn(key)}`).join(', ')}`;
export const APPEND_HISTORY_SQL = 'INSERT INTO history (seq, generation, at, kind, step, attempt, value, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';
// The backlog mark survives a newer entry (see OutboxRow): the update leaves `backlogged_since` alone.
export const WRITE_OUTBOX_SQL =
	`INSERT INTO outbox (slot, entry, version, attempts, next_attempt_at) VALUES (${OUTBOX_SLOT}, ?, ?, ?, ?) ` +
	'ON CONFLICT (slot) DO UPDATE SET entry = excluded.entry, version = excluded.version, attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at';
export const READ_OUTBOX_SQL = `SELECT entry, attempts, next_attempt_at, backlogged_since FROM outbox WHERE slot = ${OUTBOX_SLOT}`;
// `<=`: an entry acknowledged supersedes an older one pending in the other place (see `readOutbox`).
export const ACK_OUTBOX_SQL = `DELETE FROM outbox WHERE slot = ${OUTBOX_SLOT} AND version <= ?`;
/**
 * The outbox in the instance row (`outboxInRow`): the pending entry is the row's `pending` JSON,
 * written by the same upsert as the row on a status change (1 row written, not 2). The backlog
 * mark survives a newer entry here too: the update keeps the old JSON's `backloggedSince`.
 */
export const KEEP_BACKLOG = `json_set(?, '$.backloggedSince', json_extract(instance.pending, '$.backloggedSince'))`;
export const WRITE_INSTANCE_PENDING_SQL =
	`INSERT INTO instance (${instanceKeys.map(instanceColumn).join(', ')}, pending) VALUES (${instanceKeys.map(() => '?').join(', ')}, ?) ` +
	`ON CONFLICT (id) DO UPDATE SET ${instanceKeys.filter((key) => key !== 'id').map((key) => `${instanceColumn(key)} = excluded.${instanceColumn(key)}`).join(', ')}, ` +
	`pending = ${KEEP_BACKLOG.replace('?', 'excluded.pending')}`;
export const WRITE_PENDING_SQL = `UPDATE instance SET pending = ${KEEP_BACKLOG}`;
export const READ_PENDING_SQL = 'SELECT pending FROM instance';
export const ACK_PENDING_SQL = "UPDATE instance SET pending = NULL WHERE pending IS NOT NULL AND json_extract(pending, '$.entry.version') <= ?";
export const DEFER_PENDING_SQL =
	"UPDATE instance SET pending = json_set(pending, '$.attempts', ?, '$.nextAttemptAt', ?) WHERE pending IS NOT NULL AND json_extract(pending, '$.entry.version') = ?";
export const MARK_PENDING_SQL = "UPDATE instance SET pending = json_set(pending, '$.backloggedSince', ?) WHERE pending IS NOT NULL";
/**
 * What a status and a pass read of the steps, by hand too: a status reads them on every call, and a
 * prepared Drizzle select costs a new object its building and every call its row mapping. A step's
 * metadata is its columns without the result and the records it stands for (step-records.ts), read
 * back with each column's own Drizzle mapping; octet_length reads the result's size from the record
 * header, not the (up to 1 MiB) value; small results come along.
 */
export const stepMetaKeys = Object.keys(stepColumns) as (keyof typeof stepColumns)[];
export const STEP_META_SELECT =
	`SELECT ${stepMetaKeys.map((key) => `"${stepColumns[key].name}"`).join(', ')}, coalesce(octet_length(result), 0) AS result_bytes, ` +
	`CASE WHEN coalesce(octet_length(result), 0) <= ${SMALL_RESULT_BYTES} THEN result END AS small_result FROM steps`;
export const LAST_STEP_META_SQL = `${STEP_META_SELECT} ORDER BY seq DESC LIMIT ?`;
export const STEP_META_AFTER_SQL = `${STEP_META_SELECT} WHERE seq > ? ORDER BY seq ASC LIMIT ?`;
export const COUNT_STEPS_SQL = 'SELECT kind, status, count(*) AS n FROM steps GROUP BY kind, status';

/** A row of `STEP_META_SELECT` as the engine knows it: a small result only when it is small. */
export function toStepMeta(raw: SqlStorageValue[]): StepMeta {
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

/** The instance's tables created on their first write (db/role-tables.ts `FIRST_WRITE_TABLES`). */
export const EVENTS = getTableName(events);
export const EVENT_KEYS = getTableName(eventKeys);
export const DROPPED_EVENTS = getTableName(droppedEvents);
export const DELETION = getTableName(deletion);
export const WAKEUPS = getTableName(wakeups);
export const INLINE_CHILDREN = getTableName(inlineChildren);

/**
 * Statements prepared on first use: a create uses 3 of them, a status 3 others,
 * and building a statement is most of what Drizzle costs.
 */
export function preparedOnce<T extends Record<string, () => unknown>>(builders: T): { readonly [K in keyof T]: ReturnType<T[K]> } {
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
export function stepBindings(row: StepRow): SqlStorageValue[] {
	return [
		row.seq, row.key, row.name, row.kind, row.status, row.attempts, row.result, row.errorName, row.errorMessage, row.errorStack, row.errorCode,
		row.startedAt, row.finishedAt, row.wakeAt, sensitiveColumn(row),
	];
}

/** The `sensitive` column as bound: placeholders skip the column's boolean mapping, so 1 or 0 (read back as a boolean; null, from rows older than the column, as false). */
export function sensitiveColumn(row: StepRow): 1 | 0 {
	return row.sensitive ? 1 : 0;
}

