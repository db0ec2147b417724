import type { NewHistoryRow } from '../engine/history/history';
import type { InstanceRow, OutboxRow } from '../engine/storage/store';
import { pack, unpack, type Packed } from './compact-keys';
import type { StoredRecord, StoredStep } from './compact-history';
import type { HeldEvent } from './compact-events';

/**
 * The instance record of the compact layout: one key (`i`) holding the instance row, the pending index
 * entry (the outbox in the record) and the small history records of its status changes. A status change
 * writes all three with one put: 1 row written, where the table layout writes the row, an outbox row
 * and a history row (docs/decisions.md "The compact instance layout").
 */
export interface InstanceRecord {
	row: StoredInstance;
	pending: OutboxRow | null;
	/** History records folded into the record, in seq order (see `foldable`). */
	recs: StoredRecord[];
	/** Sleep steps folded into the record, in seq order (storage format 5: compact-folded-steps.ts); absent when none. */
	st?: StoredStep[];
	/** Events that arrived while the instance waited, until consumed (storage format 5: compact-parts.ts); absent when none. */
	ev?: HeldEvent[];
}

/** The instance row with its long texts packed (compact-keys.ts `pack`). */
export type StoredInstance = { [K in keyof InstanceRow]: InstanceRow[K] extends string | null | undefined ? Packed : InstanceRow[K] };

/**
 * At most this many records are folded into the record, each of at most `FOLDED_RECORD_CHARS` of value
 * and detail: every put of the record carries them again, so they stay a few KiB. Larger records and
 * the ones after go to keys of their own (1 row each, as folding would cost too).
 */
export const MAX_FOLDED_RECORDS = 16;
const FOLDED_RECORD_CHARS = 2048;

export function foldable(record: Pick<NewHistoryRow, 'value' | 'detail'> | StoredRecord, into: InstanceRecord): boolean {
	return into.recs.length < MAX_FOLDED_RECORDS && smallRecord(record);
}

/** Small enough to fold (a held record is packed only when it is not). */
export function smallRecord(record: { value: Packed; detail: Packed }): boolean {
	const chars = (value: Packed) => (value === null ? 0 : typeof value === 'string' ? value.length : Infinity);
	return chars(record.value) + chars(record.detail) <= FOLDED_RECORD_CHARS;
}

/** Every column of the row, absent optional ones as the table layout reads them back (null, and 0 for the history's total). */
export function fullRow(row: InstanceRow): InstanceRow {
	return {
		...row,
		codeVersion: row.codeVersion ?? null,
		lastCodeVersion: row.lastCodeVersion ?? null,
		rollback: row.rollback ?? null,
		historyBytes: row.historyBytes ?? 0,
		historySeq: row.historySeq ?? 0,
		parentId: row.parentId ?? null,
		attributes: row.attributes ?? null,
	};
}

export function packRow(row: InstanceRow): StoredInstance {
	const stored: Record<string, unknown> = {};
	for (const [key, value] of Object.entries(fullRow(row))) stored[key] = typeof value === 'string' ? pack(value) : value;
	return stored as StoredInstance;
}

export function unpackRow(stored: StoredInstance): InstanceRow {
	const row: Record<string, unknown> = {};
	for (const [key, value] of Object.entries(stored)) row[key] = value instanceof Uint8Array ? unpack(value) : value;
	return row as unknown as InstanceRow;
}

export function storedRecord(seq: number, row: NewHistoryRow): StoredRecord {
	return { seq, generation: row.generation, at: row.at, kind: row.kind, step: row.step, attempt: row.attempt, value: pack(row.value), detail: pack(row.detail) };
}
