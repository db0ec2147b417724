import type { HistoryKind, HistoryMeta, HistoryRow } from '../engine/history/history';
import type { StepMeta, StepRow } from '../engine/storage/store';
import { SMALL_RESULT_BYTES } from '../engine/support/limits';
import { KV, packedBytes, seqKey, seqOf, unpack, type Packed } from './compact-keys';

/**
 * The history of a compact instance (compact-instance-store.ts) comes from three places, merged in
 * seq order by every reader here: a key per record (`h:<seq>`) for the records nothing else stands
 * for; the records a step's key stands for (its `step.started` and, when its first attempt settled
 * before anything was written, its `step.completed`: as in the table layout, runtime/step-records.ts);
 * and the few small records of status changes folded into the instance record, written with it in one
 * put (compact-instance-record.ts). Seqs come from one counter, so no seq is missing or twice.
 */

/**
 * A step as its key holds it: the row, its result packed, the records it stands for ([seq, count, generation]) and
 * the records it carries (`more`: appended in the transaction that wrote the step, compact-instance-store.ts `carry`).
 */
/**
 * `wk`: the wake-up the step bears (the compact layout's format 2: compact-step-wakeups.ts). `prior`: a completed sleep
 * before it whose completion rode in this step's put; `v`: how many times it was written, so that of two copies of a
 * step the later is read (both storage format 5: compact-folded-steps.ts).
 */
export type StoredStep = Omit<StepRow, 'result'> & { result: Packed; rec?: [number, number, number]; more?: CarriedRecord[]; wk?: number; prior?: StoredStep; v?: number };

/** A history record as a key or the instance record holds it: value and detail packed. */
export type StoredRecord = Omit<HistoryRow, 'value' | 'detail'> & { value: Packed; detail: Packed };

/** A record a step carries: `res` says its value is the step's result (kept once, not twice). */
export type CarriedRecord = StoredRecord & { res?: 1 };

export interface RecordQuery {
	afterSeq: number;
	limit: number;
	generation?: number;
	kinds?: readonly HistoryKind[];
}

/** The records one step's key stands for, and those it carries, in seq order. */
export function stepRecords(step: StoredStep): StoredRecord[] {
	const carried = (step.more ?? []).map(({ res, ...record }) => (res ? { ...record, value: step.result } : record));
	if (!step.rec) return carried;
	const [seq, count, generation] = step.rec;
	const started: StoredRecord = { seq, generation, at: step.startedAt ?? 0, kind: 'step.started', step: step.name, attempt: 1, value: null, detail: null };
	if (count < 2) return [started, ...carried];
	return [started, { seq: seq + 1, generation, at: step.finishedAt ?? 0, kind: 'step.completed', step: step.name, attempt: 1, value: step.result, detail: null }, ...carried];
}

/** The last seq of the records a step stands for or carries (undefined: none). */
export function lastRecordSeq(step: Pick<StoredStep, 'rec' | 'more'>): number | undefined {
	const carried = step.more?.at(-1)?.seq;
	if (carried !== undefined) return carried;
	return step.rec ? step.rec[0] + step.rec[1] - 1 : undefined;
}

function matches(record: StoredRecord, query: RecordQuery): boolean {
	if (record.seq <= query.afterSeq) return false;
	if (query.generation !== undefined && record.generation !== query.generation) return false;
	return query.kinds === undefined || query.kinds.includes(record.kind);
}

/**
 * The records `query` asks for, in seq order, at most `limit`. Each source is walked in seq order and
 * stops at `limit`: `steps` are the steps whose records end after `afterSeq`, in seq order (a step's
 * records ascend with its seq: the store puts records only in a step above every other, as the table
 * layout does), read one by one only as far as the page needs them.
 */
export function findRecords(kv: SyncKvStorage, inline: readonly StoredRecord[], query: RecordQuery, steps: Iterable<StoredStep>): StoredRecord[] {
	const found: StoredRecord[] = [];
	let fromKeys = 0;
	for (const [, record] of kv.list<StoredRecord>({ prefix: KV.history, start: seqKey(KV.history, query.afterSeq + 1) })) {
		if (fromKeys >= query.limit) break;
		if (matches(record, query)) {
			found.push(record);
			fromKeys++;
		}
	}
	let fromSteps = 0;
	for (const step of steps) {
		if (fromSteps >= query.limit) break;
		for (const record of stepRecords(step)) {
			if (!matches(record, query)) continue;
			found.push(record);
			fromSteps++;
		}
	}
	for (const record of inline) if (matches(record, query)) found.push(record);
	return found.sort((a, b) => a.seq - b.seq).slice(0, query.limit);
}

export function toHistoryRow(record: StoredRecord): HistoryRow {
	return { seq: record.seq, generation: record.generation, at: record.at, kind: record.kind, step: record.step, attempt: record.attempt, value: unpack(record.value), detail: unpack(record.detail) };
}

export function toHistoryMeta(record: StoredRecord): HistoryMeta {
	return { seq: record.seq, bytes: packedBytes(record.value) + packedBytes(record.detail) };
}

/**
 * The UTF-8 bytes of every record after `afterSeq` and the history's last seq (`afterSeq` when none is later):
 * `steps` are those whose records end after `afterSeq`, `stepsLastSeq` the last seq any step's records take.
 */
export function historyTail(kv: SyncKvStorage, inline: readonly StoredRecord[], afterSeq: number, steps: Iterable<StoredStep>, stepsLastSeq: number): { bytes: number; lastSeq: number } {
	let bytes = 0;
	let lastSeq = afterSeq;
	const add = (record: StoredRecord) => {
		lastSeq = Math.max(lastSeq, record.seq);
		if (record.seq > afterSeq) bytes += packedBytes(record.value) + packedBytes(record.detail);
	};
	for (const [, record] of kv.list<StoredRecord>({ prefix: KV.history, start: seqKey(KV.history, afterSeq + 1) })) add(record);
	for (const [key] of kv.list({ prefix: KV.history, reverse: true, limit: 1 })) lastSeq = Math.max(lastSeq, seqOf(key, KV.history));
	lastSeq = Math.max(lastSeq, stepsLastSeq);
	for (const step of steps) for (const record of stepRecords(step)) add(record);
	for (const record of inline) add(record);
	return { bytes, lastSeq };
}

/** A step's meta: its row without its result (its size, and the result itself when small). */
export function toStepMeta(step: StoredStep): StepMeta {
	const { result, rec: _rec, more: _more, wk: _wk, prior: _prior, v: _v, ...rest } = withDefaults(step);
	const resultBytes = packedBytes(result);
	return { ...rest, resultBytes, ...(resultBytes <= SMALL_RESULT_BYTES ? { smallResult: unpack(result) } : {}) };
}

/**
 * The fields storage format 5 leaves out of a stored step when they hold their usual value (compact-step-values.ts
 * `leanStep`): every error field and the wake-up null, not sensitive. Read back as that value.
 */
function withDefaults(step: StoredStep): StoredStep {
	return { ...step, errorName: step.errorName ?? null, errorMessage: step.errorMessage ?? null, errorStack: step.errorStack ?? null, errorCode: step.errorCode ?? null, wakeAt: step.wakeAt ?? null, sensitive: step.sensitive ?? false };
}

/** A stored step as the engine reads it. */
export function toStepRow(stored: StoredStep): StepRow {
	const step = withDefaults(stored);
	return {
		key: step.key, name: step.name, kind: step.kind, status: step.status, attempts: step.attempts, result: unpack(step.result), errorName: step.errorName, errorMessage: step.errorMessage,
		errorStack: step.errorStack, errorCode: step.errorCode, startedAt: step.startedAt, finishedAt: step.finishedAt, wakeAt: step.wakeAt, seq: step.seq, sensitive: step.sensitive,
	};
}

/** The attempt of generation `generation`'s last stream message, the newest of those folded into the instance record and those under keys of their own. */
export function lastStreamMessageIn(kv: SyncKvStorage, inline: readonly StoredRecord[], generation: number): number {
	const isMessage = (record: StoredRecord) => record.kind === 'stream.message' && record.generation === generation;
	const folded = inline.filter(isMessage).at(-1);
	for (const [, record] of kv.list<StoredRecord>({ prefix: KV.history, reverse: true })) {
		if (folded && record.seq < folded.seq) break;
		if (isMessage(record)) return record.attempt ?? 0;
	}
	return folded?.attempt ?? 0;
}
