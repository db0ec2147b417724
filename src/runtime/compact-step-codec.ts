import type { CarriedRecord, StoredRecord, StoredStep } from './compact-history';
import type { Packed } from './compact-keys';
import { decodeErrorDetail, encodeErrorDetail, FrameChain, framesOf, stackOf, type EncodedError } from './compact-error-detail';

/**
 * The compact encoding of a step's value and of a history record, as storage format 5 writes them under a step's key
 * (`s:`) and in the instance record (compact-record-codec.ts): one- or two-letter field names, the fields that hold
 * their usual value left out, what another field gives left out (a key that is `kind:name`, a carried record's step that
 * is its carrier's, a wake-up equal to `wakeAt`), kinds and statuses as their place in an append-only table, and times
 * as deltas from a base (the instance's `createdAt` in the record, 0 in a key of its own, the step's `startedAt` inside
 * it). Every put of the record carries its steps again, and a step rides in it only while it stays within its SQLite
 * page (compact-folded-steps.ts `RECORD_PAGE_BYTES`): docs/decisions.md "A compact encoding of format 5".
 *
 * Earlier builds wrote the object form (`name`, `key`, ...): `decodeStep` reads both, told apart by shape (the object
 * form always has `name`, the compact one never).
 */

/** Append-only: a stored value names a kind or status by its place here, so an entry never moves (a new one goes last). */
const STEP_KINDS = ['do', 'sleep', 'wait', 'patch', 'rollback', 'webhook', 'child', 'attributes'] as const;
const STEP_STATUSES = ['completed', 'running', 'retrying', 'failed', 'sleeping', 'waiting', 'timed_out', 'cancelled'] as const;
const RECORD_KINDS = [
	'workflow.created', 'workflow.code_changed', 'workflow.paused', 'workflow.resumed', 'workflow.terminated', 'workflow.restarted', 'workflow.completed', 'workflow.errored',
	'workflow.rolling_back', 'workflow.diverged', 'workflow.queued', 'slot.acquired', 'slot.released', 'patch.recorded', 'attributes.set', 'events.dropped', 'step.started',
	'step.completed', 'step.attempt_failed', 'step.failed', 'sleep.started', 'sleep.finished', 'wait.started', 'wait.timed_out', 'rollback.started', 'rollback.completed',
	'rollback.attempt_failed', 'rollback.failed', 'webhook.created', 'webhook.received', 'webhook.timed_out', 'child.started', 'child.completed', 'child.failed', 'stream.message',
	'event.received', 'event.consumed',
] as const;

/** A number as `int` stores it. */
export type Num = number | string;

/** A stored value this build cannot read (a code from a later build's table). */
export class CompactValueError extends Error {
	readonly code = 'COMPACT_VALUE_UNREADABLE';
	override readonly name = 'CompactValueError';
}

/**
 * A number as a small integer (a V8 Smi: 2 to 5 bytes serialized) where it is one, else as its text. V8 stores the result
 * of arithmetic on large numbers (a time minus its base) as a double even when it is a small integer, and serializes a
 * double in 9 bytes: `| 0` makes it a Smi (within the 31 bits of a Smi under pointer compression, as in workerd). And an
 * object's field that has held a double keeps every later number of objects of its shape as a double (V8's field
 * representation), which would serialize every small number of that field in 9 bytes: a number beyond a Smi (a delta of
 * more than 12 days) is stored as its text, so no encoded field ever holds a double, and `storedBytes` stays exact.
 */
export function int(n: number): number | string {
	return Number.isInteger(n) && n >= -(2 ** 30) && n < 2 ** 30 ? n | 0 : String(n);
}

/** A number `int` stored. */
export function num(stored: number | string): number {
	return typeof stored === 'string' ? Number(stored) : stored;
}

/**
 * `items.map(fn)` as a packed array. V8's optimizing compiler builds `map`'s result holey, and its serializer (the
 * key-value storage's) writes a holey array as a sparse one, each element with its index: a stored value would take more
 * bytes than `storedBytes` counts, and other bytes once the encoder runs hot than cold. An array grown by `push` stays
 * packed, written dense.
 */
export function packedMap<T, U>(items: readonly T[], fn: (item: T) => U): U[] {
	const out: U[] = [];
	for (const item of items) out.push(fn(item));
	return out;
}

/** A value's place in `table`, or the value itself when the table does not hold it (read back as itself). */
export function toCode(table: readonly string[], value: string): number | string {
	const at = table.indexOf(value);
	return at >= 0 ? at : value;
}

export function fromCode<T extends string>(table: readonly T[], code: number | string, what: string): T {
	if (typeof code === 'string') return code as T;
	const value = table[code];
	if (value === undefined) throw new CompactValueError(`a stored ${what} code ${code} this build does not know`);
	return value;
}

/**
 * What a record's fields are read against: its times' base, the step it is of unless it says otherwise, and the frames
 * of the error before it in the same value (compact-error-detail.ts: records are encoded and decoded in order).
 */
interface RecordContext {
	base: number;
	step: string | null;
	frames?: FrameChain;
}

/** A history record, encoded. `S` absent: the context's step; `g` absent: generation 0; `R`: its value is the step's result. */
export interface EncodedRecord {
	q: Num;
	k: number | string;
	t: Num;
	g?: Num;
	S?: string | null;
	a?: Num;
	V?: Packed;
	d?: Packed;
	/** An error's detail (a failed attempt's), in the encoding of compact-error-detail.ts, where `d` would hold its text. */
	E?: EncodedError;
	R?: 1;
}

export function encodeRecord(record: CarriedRecord, context: RecordContext): EncodedRecord {
	const encoded: EncodedRecord = { q: int(record.seq), k: toCode(RECORD_KINDS, record.kind), t: int(record.at - context.base) };
	if (record.generation !== 0) encoded.g = int(record.generation);
	if (record.step !== context.step) encoded.S = record.step;
	if (record.attempt !== null && record.attempt !== undefined) encoded.a = int(record.attempt);
	if (record.value !== null && record.value !== undefined) encoded.V = record.value;
	if (record.detail !== null && record.detail !== undefined) {
		const error = typeof record.detail === 'string' ? encodeErrorDetail(record.detail, record.at, context.frames ?? new FrameChain()) : undefined;
		if (error) encoded.E = error;
		else encoded.d = record.detail;
	}
	if (record.res) encoded.R = 1;
	return encoded;
}

export function decodeRecord(encoded: EncodedRecord, context: RecordContext): CarriedRecord {
	const record: CarriedRecord = {
		seq: num(encoded.q), generation: num(encoded.g ?? 0), at: num(encoded.t) + context.base, kind: fromCode(RECORD_KINDS, encoded.k, 'record kind'),
		step: encoded.S === undefined ? context.step : encoded.S, attempt: encoded.a === undefined ? null : num(encoded.a), value: encoded.V ?? null, detail: encoded.d ?? null,
	};
	if (encoded.E) record.detail = decodeErrorDetail(encoded.E, record.at, context.frames ?? new FrameChain());
	if (encoded.R) record.res = 1;
	return record;
}

/** A record in the object form (earlier builds) or encoded: the object form has `seq`. */
export function readRecordValue(value: StoredRecord | EncodedRecord, context: RecordContext): CarriedRecord {
	return 'seq' in value ? value : decodeRecord(value, context);
}

/** A step, encoded (the field names below); `x` holds any field this build does not name, as it is. */
export interface EncodedStep {
	q: Num;
	n: string;
	K?: string;
	k?: number | string;
	s?: number | string;
	a?: Num;
	r?: Packed;
	t?: Num;
	/** `startedAt` itself, where it is too far from `base` for a small integer (in a key of its own, whose base is 0). */
	T?: number;
	f?: Num;
	w?: Num;
	W?: Num | true;
	en?: string;
	em?: string;
	es?: string;
	/** The error's stack as its frames after its `errorName: errorMessage` line (compact-error-detail.ts `framesOf`). */
	ef?: string;
	ec?: string;
	z?: 1;
	c?: Num[];
	m?: EncodedRecord[];
	p?: EncodedStep;
	v?: Num;
	x?: Record<string, unknown>;
}

const NAMED_STEP_FIELDS = new Set(['seq', 'name', 'key', 'kind', 'status', 'attempts', 'result', 'startedAt', 'finishedAt', 'wakeAt', 'wk', 'errorName', 'errorMessage', 'errorStack', 'errorCode', 'sensitive', 'rec', 'more', 'prior', 'v']);

/** Attempts a step of this kind usually has once settled: a `do` ran once, a sleep or a wait never runs. */
const usualAttempts = (kind: string) => (kind === 'do' || kind === 'child' ? 1 : 0);

/**
 * A step's value, encoded: `base` is what its `startedAt` is stored against (0 in a key of its own, the instance's
 * `createdAt` in the record, its carrier's `startedAt` for a step another carries); its other times, the records it
 * carries and the step it carries are stored against its `startedAt` (or `base` when it has none).
 */
export function encodeStep(step: StoredStep, base: number): EncodedStep {
	const own = step.startedAt ?? base;
	const encoded: EncodedStep = { q: int(step.seq), n: step.name };
	if (!isUsualKey(step.key, step.kind, step.name)) encoded.K = step.key;
	if (step.kind !== 'do') encoded.k = toCode(STEP_KINDS, step.kind);
	if (step.status !== 'completed') encoded.s = toCode(STEP_STATUSES, step.status);
	if (step.attempts !== usualAttempts(step.kind)) encoded.a = int(step.attempts);
	if (step.result !== null && step.result !== undefined) encoded.r = step.result;
	if (step.startedAt !== null && step.startedAt !== undefined) {
		// In a key of its own (base 0) its start is a time, stored as the double it is, under a name of its own (`int`).
		const delta = int(step.startedAt - base);
		if (typeof delta === 'number') encoded.t = delta;
		else encoded.T = step.startedAt;
	}
	if (step.finishedAt !== null && step.finishedAt !== undefined) encoded.f = int(step.finishedAt - own);
	const wakeAt = step.wakeAt ?? null;
	if (wakeAt !== null) encoded.w = int(wakeAt - own);
	if (step.wk !== undefined) encoded.W = step.wk === wakeAt ? true : int(step.wk - own);
	if (step.errorName != null) encoded.en = step.errorName;
	if (step.errorMessage != null) encoded.em = step.errorMessage;
	// A failed attempt's stack: its frames, which the records it carries (each attempt's failure) may name again.
	let frames: FrameChain | undefined;
	if (step.errorStack != null) {
		frames = new FrameChain();
		frames.frames = step.errorName != null && step.errorMessage != null ? framesOf(step.errorStack, step.errorName, step.errorMessage) : undefined;
		if (frames.frames !== undefined) encoded.ef = frames.frames;
		else encoded.es = step.errorStack;
	}
	if (step.errorCode != null) encoded.ec = step.errorCode;
	if (step.sensitive) encoded.z = 1;
	if (step.rec) encoded.c = packedMap(step.rec[2] === 0 ? step.rec.slice(0, 2) : step.rec, int);
	if (step.more?.length) {
		const context = { base: own, step: step.name, frames: frames ?? new FrameChain() };
		encoded.m = packedMap(step.more, (record) => encodeRecord(record, context));
	}
	if (step.prior) encoded.p = encodeStep(step.prior, own);
	if (step.v !== undefined) encoded.v = int(step.v);
	// In the order of the step's own fields, as `Object.entries` gives them (a step is a plain object: nothing inherited).
	const fields = step as unknown as Record<string, unknown>;
	for (const field in fields) {
		if (NAMED_STEP_FIELDS.has(field)) continue;
		const value = fields[field];
		if (value !== undefined) (encoded.x ??= {})[field] = value;
	}
	return encoded;
}

/** `key` is `kind:name`, tested without building that text (a step's encoding runs at every put that carries it). */
function isUsualKey(key: string, kind: string, name: string): boolean {
	return key.length === kind.length + 1 + name.length && key.charCodeAt(kind.length) === 58 && key.startsWith(kind) && key.endsWith(name);
}

/**
 * A step as the store works with it, from its encoded value: as storage format 5 keeps it in memory (compact-step-values.ts
 * `leanStep`: a null error field or `wakeAt`, and a false `sensitive`, left out and read back by compact-history.ts).
 */
export function decodeStep(encoded: EncodedStep, base: number): StoredStep {
	const kind = encoded.k === undefined ? 'do' : fromCode(STEP_KINDS, encoded.k, 'step kind');
	const startedAt = encoded.T !== undefined ? encoded.T : encoded.t === undefined ? null : num(encoded.t) + base;
	const own = startedAt ?? base;
	const step: StoredStep = {
		...(encoded.x ?? {}),
		key: encoded.K ?? `${kind}:${encoded.n}`, name: encoded.n, kind, status: encoded.s === undefined ? 'completed' : fromCode(STEP_STATUSES, encoded.s, 'step status'),
		attempts: encoded.a === undefined ? usualAttempts(kind) : num(encoded.a), result: encoded.r ?? null, startedAt, finishedAt: encoded.f === undefined ? null : num(encoded.f) + own, seq: num(encoded.q),
	} as StoredStep;
	const fields = step as unknown as Record<string, unknown>;
	if (encoded.w !== undefined) step.wakeAt = num(encoded.w) + own;
	if (encoded.en !== undefined) fields.errorName = encoded.en;
	if (encoded.em !== undefined) fields.errorMessage = encoded.em;
	if (encoded.es !== undefined) fields.errorStack = encoded.es;
	const frames = new FrameChain();
	if (encoded.ef !== undefined) {
		frames.frames = encoded.ef;
		fields.errorStack = stackOf(encoded.ef, encoded.en!, encoded.em!);
	}
	if (encoded.ec !== undefined) fields.errorCode = encoded.ec;
	if (encoded.z) step.sensitive = true;
	if (encoded.c) step.rec = [num(encoded.c[0]!), num(encoded.c[1]!), num(encoded.c[2] ?? 0)];
	if (encoded.m) step.more = encoded.m.map((record) => decodeRecord(record, { base: own, step: encoded.n, frames }));
	if (encoded.W !== undefined) step.wk = encoded.W === true ? step.wakeAt! : num(encoded.W) + own;
	if (encoded.p) step.prior = decodeStep(encoded.p, own);
	if (encoded.v !== undefined) step.v = num(encoded.v);
	return step;
}

/**
 * A step's value as storage holds it, in either form: the object form (formats 1-4, and format 5 as earlier builds wrote
 * it) has `name`; its `prior` and records are in the object form too.
 */
export function readStepValue(value: StoredStep | EncodedStep, base: number): StoredStep {
	return 'name' in value ? value : decodeStep(value, base);
}
