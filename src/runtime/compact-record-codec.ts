import { toIndexEntry, type IndexEntry } from '../engine/index/index-entry';
import { WORKFLOW_STATUSES } from '../engine/support/statuses';
import type { OutboxRow } from '../engine/storage/store';
import type { HeldEvent } from './compact-events';
import type { StoredRecord } from './compact-history';
import { unpackRow, type InstanceRecord, type StoredInstance } from './compact-instance-record';
import type { Packed } from './compact-keys';
import { decodeRecord, decodeStep, encodeRecord, encodeStep, fromCode, int, num, packedMap, readRecordValue, readStepValue, toCode, type EncodedRecord, type EncodedStep, type Num } from './compact-step-codec';

/**
 * The instance record (`i`) as storage format 5 writes it: the compact encoding of compact-step-codec.ts applied to the
 * row, its pending index entry (only the fields the row does not give), its folded records, its steps (`st`, against the
 * instance's `createdAt`) and its held events. docs/decisions.md "A compact encoding of format 5".
 *
 * Earlier builds wrote the object form (`row`, `pending`, `recs`: whole, or lean since "A leaner instance record"):
 * `readInstanceValue` reads both, told apart by shape (the object form has `row`, the compact one `r`).
 */

/** The row's fields by their stored names (one or two letters); `c` is `createdAt`, the base of every other time. */
const ROW_NAMES = {
	id: 'i', type: 'y', payload: 'P', output: 'O', errorName: 'en', errorMessage: 'em', errorStack: 'es', errorCode: 'ec', version: 'v', codeVersion: 'cv', rollback: 'rb',
	historyBytes: 'hb', historySeq: 'hs', parentId: 'pa', attributes: 'at', generation: 'g',
} as const;
/** The row's number columns besides its times: stored as `int` stores a number. */
const NUMBER_COLUMNS = new Set(['version', 'historyBytes', 'historySeq', 'generation']);
/** Read apart: `status` (a code), `createdAt` (the base), `updatedAt` (a delta), `lastCodeVersion` (`true`: the code version). */
const ROW_APART = new Set(['status', 'createdAt', 'updatedAt', 'lastCodeVersion']);

export interface EncodedRow {
	c: number;
	u: Num;
	s: number | string;
	lv?: string | true;
	x?: Record<string, unknown>;
	[name: string]: unknown;
}

/** The pending index entry: `e` the entry's fields the row does not give, `-` those the row gives that it lacks. */
export interface EncodedPending {
	e?: Record<string, unknown>;
	'-'?: string[];
	a?: Num;
	/** `nextAttemptAt`, against the row's `updatedAt`. */
	n: Num;
	b?: number;
}

export interface EncodedEvent {
	q: Num;
	n: string;
	p?: Packed;
	t: Num;
}

export interface EncodedInstance {
	r: EncodedRow;
	o?: EncodedPending;
	h?: EncodedRecord[];
	st?: EncodedStep[];
	ev?: EncodedEvent[];
}

export function encodeInstance(record: InstanceRecord): EncodedInstance {
	const row = record.row as unknown as Record<string, unknown>;
	const base = record.row.createdAt;
	const encoded: EncodedInstance = { r: encodeRow(row) };
	if (record.pending) encoded.o = encodePending(record.pending, record.row);
	// Arrays built packed (`packedMap`): written dense, as `storedBytes` counts them, however hot this code runs.
	if (record.recs.length > 0) encoded.h = packedMap(record.recs, (held) => encodeRecord(held, { base, step: null }));
	if (record.st?.length) encoded.st = packedMap(record.st, (step) => encodeStep(step, base));
	if (record.ev?.length) encoded.ev = packedMap(record.ev, (event) => ({ q: int(event.seq), n: event.name, ...(event.payload !== null ? { p: event.payload } : {}), t: int(event.receivedAt - base) }));
	return encoded;
}

/** The record as the store works with it (compact-lean-record.ts `fullRecord` fills what is left out as null or 0). */
export function decodeInstance(encoded: EncodedInstance): InstanceRecord {
	const row = decodeRow(encoded.r);
	const base = row.createdAt;
	const record: InstanceRecord = { row, pending: encoded.o ? decodePending(encoded.o, row) : null, recs: (encoded.h ?? []).map((held) => decodeRecord(held, { base, step: null }) as StoredRecord) };
	if (encoded.st) record.st = encoded.st.map((step) => decodeStep(step, base));
	if (encoded.ev) record.ev = encoded.ev.map((event): HeldEvent => ({ name: event.n, payload: event.p ?? null, receivedAt: num(event.t) + base, seq: num(event.q) }));
	return record;
}

/**
 * The instance record as storage holds it, in either form. The object form's steps and records are taken as they are
 * (an object-form record holds object-form steps); a compact record decodes its own.
 */
export function readInstanceValue(value: InstanceRecord | EncodedInstance | undefined): InstanceRecord | undefined {
	if (value === undefined) return undefined;
	if ('row' in value) {
		if (value.st) value.st = value.st.map((step) => readStepValue(step, value.row.createdAt));
		if (value.recs) value.recs = value.recs.map((held) => readRecordValue(held, { base: value.row.createdAt, step: null }) as StoredRecord);
		return value;
	}
	return decodeInstance(value);
}

function encodeRow(row: Record<string, unknown>): EncodedRow {
	const createdAt = row.createdAt as number;
	const encoded: EncodedRow = { c: createdAt, u: int((row.updatedAt as number) - createdAt), s: toCode(WORKFLOW_STATUSES, row.status as string) };
	for (const [field, value] of Object.entries(row)) {
		if (ROW_APART.has(field) || value === null || value === undefined) continue;
		if ((field === 'historyBytes' || field === 'historySeq' || field === 'generation') && value === 0) continue;
		const name = (ROW_NAMES as Record<string, string>)[field];
		if (name) encoded[name] = NUMBER_COLUMNS.has(field) ? int(value as number) : value;
		else (encoded.x ??= {})[field] = value;
	}
	const last = row.lastCodeVersion;
	if (last !== null && last !== undefined) encoded.lv = last === row.codeVersion ? true : (last as string);
	return encoded;
}

function decodeRow(encoded: EncodedRow): StoredInstance {
	const row: Record<string, unknown> = { ...(encoded.x ?? {}), createdAt: encoded.c, updatedAt: encoded.c + num(encoded.u), status: fromCode(WORKFLOW_STATUSES, encoded.s, 'instance status') };
	for (const [field, name] of Object.entries(ROW_NAMES)) if (encoded[name] !== undefined) row[field] = NUMBER_COLUMNS.has(field) ? num(encoded[name] as Num) : encoded[name];
	row.generation ??= 0;
	if (encoded.lv !== undefined) row.lastCodeVersion = encoded.lv === true ? row.codeVersion : encoded.lv;
	return row as unknown as StoredInstance;
}

/** The entry the row itself stands for: the entry's fields stored are only those that differ from it. */
function rowEntry(row: StoredInstance): Record<string, unknown> {
	return toIndexEntry(unpackRow(row)) as unknown as Record<string, unknown>;
}

const same = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b);

function encodePending(pending: OutboxRow, row: StoredInstance): EncodedPending {
	const derived = rowEntry(row);
	const entry = pending.entry as unknown as Record<string, unknown>;
	const encoded: EncodedPending = { n: int(pending.nextAttemptAt - row.updatedAt) };
	for (const [field, value] of Object.entries(entry)) if (value !== undefined && !same(value, derived[field])) (encoded.e ??= {})[field] = value;
	for (const field of Object.keys(derived)) if (entry[field] === undefined) (encoded['-'] ??= []).push(field);
	if (pending.attempts !== 0) encoded.a = int(pending.attempts);
	if (pending.backloggedSince !== null && pending.backloggedSince !== undefined) encoded.b = pending.backloggedSince;
	return encoded;
}

function decodePending(encoded: EncodedPending, row: StoredInstance): OutboxRow {
	const entry = rowEntry(row);
	for (const field of encoded['-'] ?? []) delete entry[field];
	Object.assign(entry, encoded.e ?? {});
	return { entry: entry as unknown as IndexEntry, attempts: num(encoded.a ?? 0), nextAttemptAt: num(encoded.n) + row.updatedAt, backloggedSince: encoded.b ?? null };
}
