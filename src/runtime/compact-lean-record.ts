import type { IndexEntry } from '../engine/index/index-entry';
import type { OutboxRow } from '../engine/storage/store';
import type { StoredRecord } from './compact-history';
import type { InstanceRecord, StoredInstance } from './compact-instance-record';

/** The row's columns that hold null when unset (the optional ones are filled in by `fullRow` the same way). */
const NULLABLE_ROW = ['payload', 'output', 'errorName', 'errorMessage', 'errorStack', 'errorCode', 'codeVersion', 'lastCodeVersion', 'rollback', 'parentId', 'attributes'] as const;
/** The row's running totals, 0 until the history has any. */
const ZERO_ROW = ['historyBytes', 'historySeq'] as const;
/** The index entry's fields that repeat the row's (each required in an entry): stored once, in the row. */
const ENTRY_FROM_ROW = ['id', 'type', 'status', 'createdAt', 'updatedAt', 'version'] as const;
/** A folded history record's fields that hold null when unset. */
const NULLABLE_REC = ['step', 'attempt', 'value', 'detail'] as const;

/**
 * The instance record as storage format 5 stored it before its compact encoding (compact-record-codec.ts, which this
 * build writes; docs/decisions.md "A leaner instance record"): the object form without what holds its usual value (the
 * row's null columns and zero totals, a null pending entry, the pending entry's fields that repeat the row's, no folded
 * records, a folded record's null fields), which `fullRecord` reads back as that value. This build still reads it (an
 * instance an earlier build of main left asleep or waiting); the tests write it to check that. Returns a copy.
 */
export function leanRecord(record: InstanceRecord): InstanceRecord {
	const row: Record<string, unknown> = { ...record.row };
	for (const column of NULLABLE_ROW) if (row[column] === null) delete row[column];
	for (const column of ZERO_ROW) if (row[column] === 0) delete row[column];
	const lean: Partial<InstanceRecord> = { row: row as StoredInstance };
	if (record.pending !== null) lean.pending = leanPending(record.pending, record.row);
	if (record.recs.length > 0) lean.recs = record.recs.map(leanFolded);
	if (record.st) lean.st = record.st;
	if (record.ev) lean.ev = record.ev;
	return lean as InstanceRecord;
}

/** The record as the store works with it, whether storage holds it lean (format 5) or whole (earlier formats): every field present. */
export function fullRecord(stored: InstanceRecord | undefined): InstanceRecord | undefined {
	if (stored === undefined) return undefined;
	const row = stored.row as Record<string, unknown>;
	for (const column of NULLABLE_ROW) if (row[column] === undefined) row[column] = null;
	for (const column of ZERO_ROW) if (row[column] === undefined) row[column] = 0;
	stored.pending = stored.pending ? fullPending(stored.pending, stored.row) : null;
	stored.recs = (stored.recs ?? []).map(fullFolded);
	return stored;
}

function leanPending(pending: OutboxRow, row: StoredInstance): OutboxRow {
	const entry: Record<string, unknown> = { ...pending.entry };
	for (const field of ENTRY_FROM_ROW) if (entry[field] === row[field]) delete entry[field];
	return { ...pending, entry: entry as unknown as IndexEntry };
}

function fullPending(pending: OutboxRow, row: StoredInstance): OutboxRow {
	const entry = pending.entry as unknown as Record<string, unknown>;
	for (const field of ENTRY_FROM_ROW) if (entry[field] === undefined) entry[field] = row[field];
	return pending;
}

function leanFolded(record: StoredRecord): StoredRecord {
	const lean: Record<string, unknown> = { ...record };
	for (const field of NULLABLE_REC) if (lean[field] === null) delete lean[field];
	return lean as unknown as StoredRecord;
}

function fullFolded(record: StoredRecord): StoredRecord {
	const full = record as unknown as Record<string, unknown>;
	for (const field of NULLABLE_REC) if (full[field] === undefined) full[field] = null;
	return record;
}
