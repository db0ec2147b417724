import { serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import type { StoredStep } from '../../src/runtime/compact-history';
import { packRow, storedRecord, type InstanceRecord } from '../../src/runtime/compact-instance-record';
import { pack } from '../../src/runtime/compact-keys';
import { fullRecord, leanRecord } from '../../src/runtime/compact-lean-record';
import { decodeInstance, encodeInstance, readInstanceValue } from '../../src/runtime/compact-record-codec';
import { CompactValueError, decodeStep, encodeStep, readStepValue } from '../../src/runtime/compact-step-codec';
import { leanStep } from '../../src/runtime/compact-step-values';
import { storedBytes } from '../../src/runtime/compact-stored-size';

// The compact encoding of storage format 5 (src/runtime/compact-step-codec.ts, compact-record-codec.ts): pure, so on Node.

const T0 = 1_796_625_425_736;
/** What storage hands back: a structured clone, as the key-value storage stores a value. */
const stored = <T>(value: T): T => structuredClone(value);

function step(over: Partial<StoredStep> = {}): StoredStep {
	return { key: 'do:before', name: 'before', kind: 'do', status: 'completed', attempts: 1, result: '1', errorName: null, errorMessage: null, errorStack: null, errorCode: null, startedAt: T0 + 6, finishedAt: T0 + 6, wakeAt: null, seq: 1, sensitive: false, rec: [2, 2, 0], v: 1, ...over };
}

/** As storage format 5 keeps a step in memory (its null error fields and wake-up, a false `sensitive`, left out). */
function lean(value: StoredStep): StoredStep {
	const copy = structuredClone(value);
	leanStep(copy);
	if (copy.prior) leanStep(copy.prior);
	return copy;
}

const sleeping = step({ key: 'sleep:nap', name: 'nap', kind: 'sleep', status: 'sleeping', attempts: 0, result: null, startedAt: T0 + 6, finishedAt: null, wakeAt: T0 + 1006, seq: 3, rec: undefined, wk: T0 + 1006, more: [{ seq: 4, generation: 0, at: T0 + 7, kind: 'sleep.started', step: 'nap', attempt: null, value: null, detail: '{"until":1796625426742}' }] });
const retrying = step({ key: 'do:flaky', name: 'flaky', status: 'retrying', attempts: 2, result: null, errorName: 'Error', errorMessage: 'attempt 2 fails', errorStack: 'Error: attempt 2 fails\n    at run', errorCode: 'E_X', finishedAt: T0 + 9, wakeAt: T0 + 1009, wk: T0 + 2000, sensitive: true, seq: 5, rec: [7, 1, 2], v: 4 });

describe('a step in the compact encoding', () => {
	const cases: [string, StoredStep, number][] = [
		['a completed step in its own key', step(), 0],
		['a completed step in the record', step(), T0],
		['a sleeping sleep with its wake-up and its record', sleeping, T0],
		['a retrying step: every error field, sensitive, a wake-up apart from wakeAt, a later generation', retrying, 0],
		['a step carrying a completed sleep (prior) and a record whose value is its result', step({ key: 'do:after', name: 'after', seq: 5, startedAt: T0 + 1040, finishedAt: T0 + 1041, prior: { ...sleeping, status: 'completed', finishedAt: T0 + 1039, wk: undefined, more: [...sleeping.more!, { seq: 6, generation: 0, at: T0 + 1039, kind: 'sleep.finished', step: 'nap', attempt: null, value: null, detail: null }] }, more: [{ seq: 8, generation: 0, at: T0 + 1041, kind: 'step.completed', step: 'after', attempt: 1, value: null, detail: null, res: 1 }] }), 0],
		['a packed result', step({ result: pack('é'.repeat(20_000)) }), 0],
		['no times, a key that is not kind:name, a kind and a record kind this build has no code for', step({ key: 'webhook:hook#2', name: 'hook', kind: 'webhook', status: 'running', startedAt: null, finishedAt: null, attempts: 0, result: null, more: [{ seq: 9, generation: 0, at: T0, kind: 'custom.kind' as never, step: null, attempt: null, value: 'v', detail: 'd' }] }), T0],
		['a field this build does not name', { ...step(), later: { a: 1 } } as StoredStep, 0],
	];
	for (const [name, value, base] of cases) {
		it(`reads back as written: ${name}`, () => {
			expect(decodeStep(stored(encodeStep(value, base)), base)).toEqual(lean(value));
		});
	}

	it('is less than half the object form for a completed step, and under a third for a sleep', () => {
		expect(storedBytes(encodeStep(step(), T0))).toBeLessThan(storedBytes(lean(step())) / 2);
		expect(JSON.stringify(encodeStep(step(), T0)).length).toBeLessThan(JSON.stringify(lean(step())).length / 2);
		expect(storedBytes(encodeStep(sleeping, T0))).toBeLessThan(storedBytes(lean(sleeping)) / 2);
	});

	it('reads the object form as it is (earlier builds, format 5 as main wrote it): told apart by shape', () => {
		expect(readStepValue(stored(lean(step())), 0)).toEqual(lean(step()));
		expect(readStepValue(stored(encodeStep(step(), 0)), 0)).toEqual(lean(step()));
	});

	it('refuses a code this build does not know with a typed error', () => {
		expect(() => decodeStep({ q: 1, n: 'x', k: 99 }, 0)).toThrow(CompactValueError);
		expect(() => decodeStep({ q: 1, n: 'x', k: 99 }, 0)).toThrow(expect.objectContaining({ code: 'COMPACT_VALUE_UNREADABLE' }));
	});
});

/** A failed attempt's detail as the engine writes it (history.ts: `JSON.stringify` of `{ error, retryAt }`). */
const failure = (attempt: number, stack: string | undefined, extra: Record<string, unknown> = {}) =>
	JSON.stringify({ error: { name: 'Error', message: `attempt ${attempt} fails`, ...extra, ...(stack !== undefined ? { stack } : {}) }, retryAt: T0 + 1000 * attempt + 10 });
const FRAMES = '    at step.do.retries.limit (worker.js:100:28)\n    at attempt (worker.js:46:47)';
const attemptFailed = (attempt: number, detail: string) => ({ seq: 10 + attempt, generation: 0, at: T0 + 1000 * attempt, kind: 'step.attempt_failed' as const, step: 'flaky', attempt, value: null, detail });

describe("a retried step's failed attempts in the compact encoding (compact-error-detail.ts)", () => {
	const twice = (stack: (attempt: number) => string | undefined, extra: Record<string, unknown> = {}) =>
		step({ ...retrying, errorMessage: 'attempt 2 fails', errorStack: stack(2) ?? null, errorCode: null, more: [attemptFailed(1, failure(1, stack(1), extra)), attemptFailed(2, failure(2, stack(2), extra))] });
	const cases: [string, StoredStep][] = [
		['frames repeated by every attempt, as V8 writes a stack', twice((attempt) => `Error: attempt ${attempt} fails\n${FRAMES}`)],
		['frames that differ between attempts', twice((attempt) => `Error: attempt ${attempt} fails\n    at call${attempt} (worker.js:1:1)`)],
		['no stack', twice(() => undefined)],
		['a stack that does not start with its name and message', twice(() => `at somewhere\n${FRAMES}`)],
		['a code, and a stack of its head line only', twice((attempt) => `Error: attempt ${attempt} fails`, { code: 'E_UPSTREAM' })],
		['completed: its failures kept in its records only', step({ ...retrying, status: 'completed', attempts: 3, result: '3', errorName: null, errorMessage: null, errorStack: null, errorCode: null, wakeAt: null, wk: undefined, more: [attemptFailed(1, failure(1, `Error: attempt 1 fails\n${FRAMES}`)), attemptFailed(2, failure(2, `Error: attempt 2 fails\n${FRAMES}`))] })],
		['a detail of another shape (a field more, another order, a non-integer time), kept as it is', step({ ...retrying, more: [attemptFailed(1, '{"error":{"name":"Error","message":"x","cause":1},"retryAt":5}'), attemptFailed(2, '{"retryAt":5,"error":{"name":"Error","message":"x"}}'), attemptFailed(3, '{"error":{"name":"Error","message":"x"},"retryAt":1.5}'), attemptFailed(4, '{"error":{"name":1,"message":"x"}}')] })],
	];
	for (const [name, value] of cases) {
		for (const base of [0, T0]) {
			it(`reads back as written, its history details character for character: ${name} (base ${base})`, () => {
				const read = decodeStep(stored(encodeStep(value, base)), base);
				expect(read).toEqual(lean(value));
				expect(read.more!.map((r) => r.detail)).toEqual(value.more!.map((r) => r.detail));
			});
		}
	}

	it('keeps a repeated stack once a step: frames once, no JSON names, a retry time as a delta', () => {
		const value = cases[0]![1];
		const encoded = encodeStep(value, T0);
		expect(encoded.ef).toBe(FRAMES);
		expect(encoded.es).toBeUndefined();
		expect(encoded.m!.map((r) => r.E)).toEqual([{ m: 'attempt 1 fails', f: 1, w: 10 }, { m: 'attempt 2 fails', f: 1, w: 10 }]);
		// As main stored it (the stack whole, each detail its JSON text): the frames two times more, and every detail's names.
		const { ef: _frames, ...rest } = encoded;
		const asText = { ...rest, es: value.errorStack!, m: encoded.m!.map(({ E: _error, ...r }, i) => ({ ...r, d: value.more![i]!.detail! })) };
		expect(storedBytes(asText) - storedBytes(encoded)).toBeGreaterThan(2 * FRAMES.length + 2 * '{"error":{"name":"Error","message":"","stack":"},"retryAt":1796625426746}'.length);
	});

	it('refuses an error that names the frames before it where there are none, with a typed error', () => {
		expect(() => decodeStep({ q: 1, n: 'x', m: [{ q: 2, k: 18, t: 0, E: { m: 'x', f: 1 } }] }, 0)).toThrow(CompactValueError);
	});
});

function record(over: Partial<InstanceRecord> = {}): InstanceRecord {
	const row = packRow({ id: 'layout-compact-mxcwe2ru-1', type: 'redeployed', status: 'waiting', payload: '{}', output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null, createdAt: T0, updatedAt: T0 + 4, version: 3, generation: 0, codeVersion: '2026-11-26.1', lastCodeVersion: '2026-11-26.1', historyBytes: 70, historySeq: 4 });
	return {
		row,
		pending: { entry: { id: row.id as string, type: 'redeployed', status: 'waiting', createdAt: T0, updatedAt: T0 + 4, version: 3, codeVersion: '2026-11-26.1' }, attempts: 0, nextAttemptAt: T0 + 10_004, backloggedSince: null },
		recs: [storedRecord(1, { generation: 0, at: T0, kind: 'workflow.created', step: null, attempt: null, value: '{}', detail: '{"codeVersion":"2026-11-26.1"}' })],
		st: [lean(step()), lean({ ...sleeping, key: 'wait:approval', name: 'approval', kind: 'wait', status: 'waiting', wakeAt: null, wk: undefined, seq: 2 })],
		...over,
	};
}

describe('the instance record in the compact encoding', () => {
	const cases: [string, InstanceRecord][] = [
		['waiting, its steps, its pending entry, a created record', record()],
		['every column set, an entry of an older version, backlogged, retried, with attributes, a parent, a removal', record({
			row: packRow({ id: 'p::c', type: 't', status: 'errored', payload: 'x'.repeat(20_000), output: '"o"', errorName: 'E', errorMessage: 'm', errorStack: 's', errorCode: 'C', createdAt: T0, updatedAt: T0 - 5, version: 9, generation: 2, codeVersion: null, lastCodeVersion: 'v2', rollback: '{"state":"completed"}', historyBytes: 0, historySeq: 0, parentId: 'p', attributes: '{"customerId":"c1"}' }),
			pending: { entry: { id: 'p::c', type: 't', status: 'running', createdAt: T0, updatedAt: T0 - 9, version: 8, generation: 2, parentId: 'p', attributes: { customerId: 'c1' }, removed: true }, attempts: 3, nextAttemptAt: T0 + 60_000, backloggedSince: T0 + 1 },
			recs: [],
			st: undefined,
		})],
		['an entry that leaves out what the row gives it (its code version)', record({ pending: { entry: { id: 'layout-compact-mxcwe2ru-1', type: 'redeployed', status: 'waiting', createdAt: T0, updatedAt: T0 + 4, version: 3 }, attempts: 0, nextAttemptAt: T0, backloggedSince: null } })],
		['held events, one without a payload, and no pending entry', record({ pending: null, ev: [{ seq: 1, name: 'approval', payload: '{"ok":true}', receivedAt: T0 + 30 }, { seq: 2, name: 'go', payload: null, receivedAt: T0 + 31 }] })],
		['a code version that differs from the last one, a status this build has no code for', record({ row: { ...record().row, lastCodeVersion: 'next', status: 'someday' as never } })],
	];
	for (const [name, value] of cases) {
		it(`reads back as written: ${name}`, () => {
			expect(fullRecord(readInstanceValue(stored(encodeInstance(value))))).toEqual(fullRecord(structuredClone(value)));
		});
	}

	it('reads the object form, whole (formats 3 and 4) or lean (format 5 as main wrote it), as it is', () => {
		expect(fullRecord(readInstanceValue(stored(record())))).toEqual(fullRecord(record()));
		expect(fullRecord(readInstanceValue(stored(leanRecord(record()))))).toEqual(fullRecord(record()));
		expect(decodeInstance(stored(encodeInstance(record()))).row.id).toBe('layout-compact-mxcwe2ru-1');
	});

	it('stores the waiting record of the event run in about half the bytes of the lean object form', () => {
		const compact = storedBytes(encodeInstance(record()));
		expect(compact).toBeLessThan(storedBytes(leanRecord(record())) * 0.55);
	});
});

describe('the stored size of a value (compact-stored-size.ts)', () => {
	it("is V8's serialization size, byte for byte, for the values the store writes (Node uses the same serializer)", () => {
		const values: unknown[] = [null, true, 0, -1, 63, 64, 2 ** 20, 2 ** 30 - 1, -(2 ** 30), 1.5, T0, 'abc', 'é'.repeat(3), 'x'.repeat(200), [1, 'a', [null]], { a: 1, b: { c: 'd' } }, { 0: 'i', 1: 'j' }, encodeInstance(record()), encodeStep(sleeping, T0), encodeStep(retrying, 0), encodeStep(step({ ...retrying, errorStack: `Error: attempt 2 fails\n${FRAMES}`, more: [attemptFailed(1, failure(1, `Error: attempt 1 fails\n${FRAMES}`)), attemptFailed(2, failure(2, `Error: attempt 2 fails\n${FRAMES}`))] }), T0)];
		for (const value of values) expect([value, storedBytes(value)]).toEqual([value, serialize(value).length]);
	});

	it('stays exact after a delta beyond a small integer was encoded (it is stored as text, so no field of an encoded shape turns to doubles)', () => {
		const far = record({ recs: [storedRecord(1, { generation: 0, at: T0 + 2 ** 31, kind: 'workflow.created', step: null, attempt: null, value: null, detail: null })], st: [lean(step({ startedAt: T0 + 2 ** 32, finishedAt: T0 + 2 ** 33 }))] });
		for (let i = 0; i < 50; i++) expect(decodeInstance(stored(encodeInstance(far)))).toEqual(decodeInstance(encodeInstance(far)));
		expect(fullRecord(readInstanceValue(stored(encodeInstance(far))))).toEqual(fullRecord(structuredClone(far)));
		for (const value of [encodeInstance(record()), encodeStep(step(), T0), encodeStep(sleeping, T0)]) expect(storedBytes(value)).toBe(serialize(value).length);
	});

	it('stays exact in a long-lived isolate, once the encoders run optimized: their arrays are stored dense, not sparse', () => {
		// V8's optimizing compiler builds `Array.prototype.map`'s result holey, and its serializer writes a holey array as a
		// sparse one (each element with its index: ~2 bytes more each), so a record measured within its page
		// (`RECORD_PAGE_BYTES`) was put larger once its encoder ran hot. The encoders' arrays (steps, records, events,
		// records carried, a step's record counts) are built packed: the same bytes cold and hot.
		const value = record({ st: [lean(step()), lean(step({ seq: 2, key: 'do:after', name: 'after', more: [attemptFailed(1, failure(1, `Error: attempt 1 fails\n${FRAMES}`))] }))], ev: [{ seq: 1, name: 'go', payload: null, receivedAt: T0 + 5 }] });
		const cold = serialize(encodeInstance(value));
		// Enough calls for V8 to optimize the encoders (a few thousand suffice); a pure loop, no time measured.
		for (let i = 0; i < 30_000; i++) encodeInstance(value);
		const hot = encodeInstance(value);
		expect(serialize(hot).equals(cold)).toBe(true);
		expect(storedBytes(hot)).toBe(serialize(hot).length);
	});
});
