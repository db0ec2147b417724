import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { InstanceRow, StepRow } from '../../src/engine/storage/store';
import { CompactInstanceStore } from '../../src/runtime/compact-instance-store';
import { readInstanceValue } from '../../src/runtime/compact-record-codec';
import { stub, uniqueId } from '../helpers';

/**
 * Storage format 5 (src/runtime/compact-folded-steps.ts): a sleep written with the `sleeping` status in one put, its
 * completion in the woken pass's next write. What a store that kept nothing reads must be what the engine wrote, but a
 * deferred completion, which a crash loses with everything after it.
 */
const row = (status: InstanceRow['status'], version: number): InstanceRow => ({
	id: 'wf-1', type: 't', status, payload: null, output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
	createdAt: 1, updatedAt: version, version, generation: 0, codeVersion: null, lastCodeVersion: null, rollback: null, historyBytes: 0, historySeq: 0, parentId: null, attributes: null,
});
const step = (seq: number, over: Partial<StepRow>): StepRow => ({
	key: `do:s${seq}`, name: `s${seq}`, kind: 'do', status: 'completed', attempts: 1, result: '1', errorName: null, errorMessage: null, errorStack: null, errorCode: null,
	startedAt: 10, finishedAt: 11, wakeAt: null, seq, sensitive: false, ...over,
});
const nap = (seq: number, over: Partial<StepRow> = {}) => step(seq, { key: `sleep:nap${seq}`, name: `nap${seq}`, kind: 'sleep', status: 'sleeping', attempts: 0, result: null, startedAt: 20, finishedAt: null, wakeAt: 1_000, ...over });
const rec = (kind: 'sleep.started' | 'sleep.finished' | 'step.started' | 'step.completed', name: string, at: number) => ({ generation: 0, at, kind, step: name, attempt: null, value: null, detail: null });

/** What the instance's key-value storage took: puts and deletes by key prefix. */
function counting(state: DurableObjectState) {
	const writes: string[] = [];
	const kv = state.storage.kv;
	const put = kv.put.bind(kv);
	const del = kv.delete.bind(kv);
	Object.defineProperty(kv, 'put', { value: (key: string, value: unknown) => (writes.push(`put ${key.split(':')[0]}`), put(key, value)), configurable: true });
	Object.defineProperty(kv, 'delete', { value: (key: string) => (writes.push(`delete ${key.split(':')[0]}`), del(key)), configurable: true });
	return writes;
}

/** A woken pass's sleep: set with `sleeping`, then completed (a wake-up of its own cleared with it). */
function sleepThenWake(store: CompactInstanceStore, seq: number) {
	store.transaction(() => {
		store.writeStep(nap(seq));
		store.setWakeup(`sleep:nap${seq}`, 1_000);
		store.appendHistory(rec('sleep.started', `nap${seq}`, 20));
	});
	store.transaction(() => store.writeInstance(row('sleeping', 2)));
	store.transaction(() => {
		store.deleteWakeup(`sleep:nap${seq}`);
		store.writeStep(nap(seq, { status: 'completed', finishedAt: 1_000 }));
		store.appendHistory(rec('sleep.finished', `nap${seq}`, 1_000));
	});
}

/** The end of the turn: every microtask run, the event loop turned (a held step's put is done by then). */
const turnEnd = () => new Promise((resolve) => setTimeout(resolve, 0));

const view = (store: CompactInstanceStore) => ({
	steps: store.readSteps().map((s) => [s.seq, s.name, s.status, s.finishedAt]),
	history: store.readHistory({ generation: 0, afterSeq: 0, limit: 100 }).map((r) => [r.seq, r.kind, r.step]),
	earliest: store.earliestWakeup(),
	status: store.readInstance()?.status,
});

describe('a compact instance with its sleeps folded into the writes around them (storage format 5)', () => {
	it('writes a sleep with its sleeping status in one put, and its completion in the put of the step after it', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const store = new CompactInstanceStore(state.storage, { empty: true, format: 2, foldSleeps: true });
			store.transaction(() => store.writeInstance(row('running', 1)));
			store.insertStep(step(1, {}), [rec('step.started', 's1', 10), rec('step.completed', 's1', 11)]);
			// Held for the next write of its turn; put at the turn's end, nothing else writing.
			await turnEnd();
			const writes = counting(state);
			sleepThenWake(store, 2);
			// The sleep rode in the record's put; its completion waits for the next write.
			expect(writes).toEqual(['put i']);
			const asleep = new CompactInstanceStore(state.storage);
			expect(view(asleep)).toMatchObject({ steps: [[1, 's1', 'completed', 11], [2, 'nap2', 'sleeping', null]], earliest: 1_000, status: 'sleeping' });
			store.insertStep(step(3, {}), [rec('step.started', 's3', 1_001), rec('step.completed', 's3', 1_002)]);
			// s3 carries the completed sleep and is held in turn: put at the turn's end, nothing else writing.
			expect(writes).toEqual(['put i']);
			await turnEnd();
			expect(writes).toEqual(['put i', 'put s']);
			// A store that kept nothing reads what this one does: the sleep completed, its records in order, nothing due.
			const expected = {
				steps: [[1, 's1', 'completed', 11], [2, 'nap2', 'completed', 1_000], [3, 's3', 'completed', 11]],
				history: [[1, 'step.started', 's1'], [2, 'step.completed', 's1'], [3, 'sleep.started', 'nap2'], [4, 'sleep.finished', 'nap2'], [5, 'step.started', 's3'], [6, 'step.completed', 's3']],
				earliest: undefined,
				status: 'sleeping',
			};
			expect(view(store)).toEqual(expected);
			expect(view(new CompactInstanceStore(state.storage))).toEqual(expected);
			expect(new CompactInstanceStore(state.storage).readStepMeta({ last: 2 }).map((s) => [s.seq, s.status])).toEqual([[2, 'completed'], [3, 'completed']]);
			// The outcome drops the record's stale copy of the sleep: the step after it carries it.
			store.transaction(() => store.writeInstance(row('completed', 3)));
			expect(state.storage.kv.get<{ st?: unknown }>('i')?.st).toBeUndefined();
			expect(view(new CompactInstanceStore(state.storage))).toEqual({ ...expected, status: 'completed' });
		}));

	it("keeps a sleep's completion in the record when the outcome is the woken pass's next write", () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const store = new CompactInstanceStore(state.storage, { empty: true, format: 2, foldSleeps: true });
			store.transaction(() => store.writeInstance(row('running', 1)));
			const writes = counting(state);
			sleepThenWake(store, 1);
			store.transaction(() => store.writeInstance(row('completed', 3)));
			expect(writes).toEqual(['put i', 'put i']);
			expect(view(new CompactInstanceStore(state.storage))).toEqual({
				steps: [[1, 'nap1', 'completed', 1_000]], history: [[1, 'sleep.started', 'nap1'], [2, 'sleep.finished', 'nap1']], earliest: undefined, status: 'completed',
			});
		}));

	it('loses a deferred completion in a crash as it loses what comes after it, and keeps it through a failed transaction', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const store = new CompactInstanceStore(state.storage, { empty: true, format: 2, foldSleeps: true });
			store.transaction(() => store.writeInstance(row('running', 1)));
			sleepThenWake(store, 1);
			// A crash now: storage holds the sleep asleep and its wake-up due, so the alarm runs the pass that completes it.
			expect(view(new CompactInstanceStore(state.storage))).toMatchObject({ steps: [[1, 'nap1', 'sleeping', null]], earliest: 1_000 });
			// A transaction that fails is not the deferred sleep's: it still goes with the next write.
			expect(() =>
				store.transaction(() => {
					store.insertStep(step(2, {}), []);
					throw new Error('refused');
				}),
			).toThrow('refused');
			expect(view(store).steps).toEqual([[1, 'nap1', 'completed', 1_000]]);
			store.appendHistory(rec('step.started', 'x', 1_001));
			expect(view(new CompactInstanceStore(state.storage))).toMatchObject({ steps: [[1, 'nap1', 'completed', 1_000]], earliest: undefined, history: [[1, 'sleep.started', 'nap1'], [2, 'sleep.finished', 'nap1'], [3, 'step.started', 'x']] });
		}));

	it("writes a failed attempt's retry with the sleeping status in one put; the next attempt, in the step's own key, is read over it", () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const store = new CompactInstanceStore(state.storage, { empty: true, format: 2, foldSleeps: true });
			store.transaction(() => store.writeInstance(row('running', 1)));
			const running = step(1, { status: 'running', result: null, finishedAt: null });
			store.insertStep(running, [rec('step.started', 's1', 10)]);
			const writes = counting(state);
			store.transaction(() => {
				store.writeStep({ ...running, status: 'retrying', errorName: 'Error', errorMessage: 'upstream 503', wakeAt: 500 });
				store.setWakeup('do:s1', 500);
				store.appendHistory({ ...rec('step.started', 's1', 12), kind: 'step.attempt_failed', attempt: 1 });
			});
			store.transaction(() => store.writeInstance(row('sleeping', 2)));
			expect(writes).toEqual(['put i']);
			expect(view(new CompactInstanceStore(state.storage))).toMatchObject({ steps: [[1, 's1', 'retrying', null]], earliest: 500, status: 'sleeping' });
			// The next attempt: its start in the step's own key, read over the record's copy (written later: its `v` is higher).
			store.writeStepWithRecord({ ...running, attempts: 2, startedAt: 500 }, { ...rec('step.started', 's1', 500), attempt: 2 });
			expect(view(new CompactInstanceStore(state.storage))).toMatchObject({ steps: [[1, 's1', 'running', null]], earliest: 500 });
			store.writeStepWithRecord({ ...running, attempts: 2, status: 'completed', result: '"ok"', finishedAt: 501 }, { ...rec('step.completed', 's1', 501), attempt: 2 });
			store.transaction(() => store.writeInstance(row('completed', 3)));
			// The completion, held for its turn, rides in the outcome's put: the record, in the compact encoding
			// (compact-record-codec.ts), stays within its page with it (compact-folded-steps.ts `RECORD_PAGE_BYTES`).
			expect(writes).toEqual(['put i', 'put s', 'put i']);
			expect(readInstanceValue(state.storage.kv.get('i'))?.st).toMatchObject([{ status: 'completed', finishedAt: 501 }]);
			const expected = {
				steps: [[1, 's1', 'completed', 501]],
				history: [[1, 'step.started', 's1'], [2, 'step.attempt_failed', 's1'], [3, 'step.started', 's1'], [4, 'step.completed', 's1']],
				earliest: undefined,
				status: 'completed',
			};
			expect(view(store)).toEqual(expected);
			expect(view(new CompactInstanceStore(state.storage))).toEqual(expected);
		}));

	it('keeps an event for the wait the instance is in in the record, from the put of its arrival to the put of its consumption', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const store = new CompactInstanceStore(state.storage, { empty: true, format: 2, foldSleeps: true });
			store.transaction(() => store.writeInstance(row('running', 1)));
			const wait = step(1, { key: 'wait:go', name: 'go', kind: 'wait', status: 'waiting', attempts: 0, result: null, startedAt: 20, finishedAt: null });
			store.transaction(() => {
				store.writeStep(wait);
				store.appendHistory({ ...rec('sleep.started', 'go', 20), kind: 'wait.started', detail: '{"event":"go","timeoutAt":null}' });
			});
			store.transaction(() => store.writeInstance(row('waiting', 2)));
			const writes = counting(state);
			const arrive = (name: string, payload: string) =>
				store.transaction(() => {
					store.appendEvent(name, payload, 30);
					store.appendHistory({ generation: 0, at: 30, kind: 'event.received', step: null, attempt: null, value: payload, detail: `{"event":"${name}"}` });
				});
			// An event of another name (early) keeps its key; the wait's own rides in the record's put.
			arrive('other', '1');
			arrive('go', '{"n":7}');
			expect(writes).toEqual(['put e', 'put i', 'put i']);
			const fresh = new CompactInstanceStore(state.storage);
			expect([fresh.oldestEvent('go')?.payload, fresh.eventBuffer(), fresh.eventCounts()]).toEqual(['{"n":7}', { count: 2, bytes: 8 }, { buffered: 2, dropped: 0 }]);
			// Its consumption and the wait's completion: one put of the record, held for the next write of its turn (none
			// here: put before the turn ends, compact-held-writes.ts).
			store.transaction(() => {
				const event = store.oldestEvent('go')!;
				store.deleteEvent(event.seq);
				store.writeStep({ ...wait, status: 'completed', result: event.payload, finishedAt: 31 });
			});
			expect(writes).toEqual(['put e', 'put i', 'put i']);
			await turnEnd();
			expect(writes).toEqual(['put e', 'put i', 'put i', 'put i']);
			for (const reader of [store, new CompactInstanceStore(state.storage)]) {
				expect([reader.oldestEvent('go'), reader.oldestEvent('other')?.payload, reader.eventBuffer().count]).toEqual([undefined, '1', 1]);
				expect(reader.readSteps().map((s) => [s.name, s.status, s.result])).toEqual([['go', 'completed', '{"n":7}']]);
			}
			// A pass that ends the run drops what is left, wherever it is kept.
			store.transaction(() => {
				arrive('go', '2');
				store.dropEvents();
			});
			expect(new CompactInstanceStore(state.storage).eventCounts()).toEqual({ buffered: 0, dropped: 2 });
		}));

	it("holds a wait's consumption of its event for the next write of its turn: the next step and the outcome ride in one put", () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const store = new CompactInstanceStore(state.storage, { empty: true, format: 2, foldSleeps: true });
			store.transaction(() => store.writeInstance(row('running', 1)));
			const wait = step(2, { key: 'wait:go', name: 'go', kind: 'wait', status: 'waiting', attempts: 0, result: null, startedAt: 20, finishedAt: null });
			// A step completed, then the wait set in the same turn: both ride in the waiting status's put.
			const writes = counting(state);
			store.insertStep(step(1, {}), [rec('step.started', 's1', 10), rec('step.completed', 's1', 11)]);
			store.transaction(() => {
				store.writeStep(wait);
				store.appendHistory({ ...rec('sleep.started', 'go', 20), kind: 'wait.started', detail: '{"event":"go","timeoutAt":null}' });
			});
			store.transaction(() => store.writeInstance(row('waiting', 2)));
			await turnEnd();
			expect(writes).toEqual(['put i']);
			store.transaction(() => {
				store.appendEvent('go', '{"n":7}', 30);
				store.appendHistory({ generation: 0, at: 30, kind: 'event.received', step: null, attempt: null, value: '{"n":7}', detail: '{"event":"go"}' });
			});
			expect(writes).toEqual(['put i', 'put i']);
			const consume = () =>
				store.transaction(() => {
					const event = store.oldestEvent('go')!;
					store.deleteEvent(event.seq);
					store.writeStep({ ...wait, status: 'completed', result: event.payload, finishedAt: 31 });
					store.appendHistory({ generation: 0, at: 31, kind: 'event.consumed', step: 'go', attempt: null, value: event.payload, detail: '{"event":"go"}' });
				});
			consume();
			// Storage keeps the event and the waiting wait until the put that consumes it: a crash before it (the turn's commit)
			// wakes the pass again, which consumes it again.
			const before = new CompactInstanceStore(state.storage);
			expect([before.oldestEvent('go')?.payload, before.readSteps().map((s) => [s.name, s.status])]).toEqual(['{"n":7}', [['s1', 'completed'], ['go', 'waiting']]]);
			// A transaction that fails meanwhile is not the held put's: the isolate keeps the consumption, put with the next write.
			expect(() =>
				store.transaction(() => {
					store.insertStep(step(3, {}), []);
					throw new Error('refused');
				}),
			).toThrow('refused');
			expect([store.oldestEvent('go'), store.readSteps().map((s) => [s.name, s.status])]).toEqual([undefined, [['s1', 'completed'], ['go', 'completed']]]);
			store.insertStep(step(3, {}), [rec('step.started', 's3', 32), rec('step.completed', 's3', 33)]);
			await Promise.resolve();
			store.transaction(() => store.writeInstance(row('completed', 3)));
			// The consumption, s3 and the outcome: one put.
			expect(writes).toEqual(['put i', 'put i', 'put i']);
			await turnEnd();
			expect(writes).toEqual(['put i', 'put i', 'put i']);
			const expected = {
				steps: [[1, 's1', 'completed', 11], [2, 'go', 'completed', 31], [3, 's3', 'completed', 11]],
				history: [[1, 'step.started', 's1'], [2, 'step.completed', 's1'], [3, 'wait.started', 'go'], [4, 'event.received', null], [5, 'event.consumed', 'go'], [6, 'step.started', 's3'], [7, 'step.completed', 's3']],
				earliest: undefined,
				status: 'completed',
			};
			expect(view(store)).toEqual(expected);
			const fresh = new CompactInstanceStore(state.storage);
			expect(view(fresh)).toEqual(expected);
			expect([fresh.oldestEvent('go'), fresh.eventCounts(), fresh.readStep('wait:go')?.result]).toEqual([undefined, { buffered: 0, dropped: 0 }, '{"n":7}']);
		}));

	it('restarts from a step, and deletes every step, wherever a sleep is kept', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const store = new CompactInstanceStore(state.storage, { empty: true, format: 2, foldSleeps: true });
			store.transaction(() => store.writeInstance(row('running', 1)));
			sleepThenWake(store, 1);
			store.insertStep(step(2, {}), []);
			sleepThenWake(store, 3);
			store.transaction(() => store.writeInstance(row('completed', 3)));
			// nap1 rides in s2's key, nap3 in the record.
			expect(view(new CompactInstanceStore(state.storage)).steps).toEqual([[1, 'nap1', 'completed', 1_000], [2, 's2', 'completed', 11], [3, 'nap3', 'completed', 1_000]]);
			// From s2: nap1 is kept (its carrier goes, so it takes a key of its own), s2 and nap3 go; their records stay in the history.
			store.transaction(() => {
				store.keepStepsBefore(2);
				store.writeInstance(row('running', 4));
			});
			const history = view(store).history;
			expect(history.map(([, kind, name]) => `${kind} ${name}`)).toEqual(['sleep.started nap1', 'sleep.finished nap1', 'sleep.started nap3', 'sleep.finished nap3']);
			for (const reader of [store, new CompactInstanceStore(state.storage)]) expect(view(reader)).toEqual({ steps: [[1, 'nap1', 'completed', 1_000]], history, earliest: undefined, status: 'running' });
			store.transaction(() => store.deleteSteps());
			expect(view(new CompactInstanceStore(state.storage)).steps).toEqual([]);
			expect(view(new CompactInstanceStore(state.storage)).history).toEqual(history);
		}));

	it("holds a completed step for the next write of its turn: the outcome's put or the next step's takes it, else it is put before the turn ends", () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const store = new CompactInstanceStore(state.storage, { empty: true, format: 2, foldSleeps: true });
			store.transaction(() => store.writeInstance(row('running', 1)));
			const writes = counting(state);
			// Nothing else writes in its turn: not put at once, put before the event loop turns (the same commit).
			store.insertStep(step(1, {}), [rec('step.started', 's1', 10), rec('step.completed', 's1', 11)]);
			expect(writes).toEqual([]);
			await turnEnd();
			expect(writes).toEqual(['put s']);
			expect(view(new CompactInstanceStore(state.storage)).steps).toEqual([[1, 's1', 'completed', 11]]);
			// The next step, a few microtasks later (its code went on at once): it carries the held one, and is held in turn.
			store.insertStep(step(2, {}), [rec('step.started', 's2', 12), rec('step.completed', 's2', 13)]);
			await Promise.resolve();
			store.insertStep(step(3, {}), [rec('step.started', 's3', 14), rec('step.completed', 's3', 15)]);
			expect(writes).toEqual(['put s']);
			// The step after may not carry one that carries another: s3 (with s2) is put, s4 held.
			store.insertStep(step(4, {}), [rec('step.started', 's4', 16), rec('step.completed', 's4', 17)]);
			expect(writes).toEqual(['put s', 'put s']);
			// The outcome in the same turn takes the held one (with the one it carries): no key of its own.
			store.insertStep(step(5, { result: '"last"' }), [rec('step.started', 's5', 18), rec('step.completed', 's5', 19)]);
			await Promise.resolve();
			store.transaction(() => store.writeInstance(row('completed', 2)));
			await turnEnd();
			expect(writes).toEqual(['put s', 'put s', 'put i']);
			const expected = {
				steps: [1, 2, 3, 4, 5].map((n) => [n, `s${n}`, 'completed', 11]),
				history: [1, 2, 3, 4, 5].flatMap((n) => [[2 * n - 1, 'step.started', `s${n}`], [2 * n, 'step.completed', `s${n}`]]),
				earliest: undefined,
				status: 'completed',
			};
			expect(view(store)).toEqual(expected);
			const fresh = new CompactInstanceStore(state.storage);
			expect(view(fresh)).toEqual(expected);
			expect(fresh.readStep('do:s5')?.result).toBe('"last"');
			expect(fresh.readStep('do:s4')?.result).toBe('1');
			expect(fresh.readStep('do:s2')?.result).toBe('1');
			// A restart from s5 keeps s4 (carried by it in the record): s4 takes its own key.
			fresh.transaction(() => fresh.keepStepsBefore(5));
			expect(view(new CompactInstanceStore(state.storage)).steps).toEqual([1, 2, 3, 4].map((n) => [n, `s${n}`, 'completed', 11]));
			fresh.transaction(() => fresh.keepStepsBefore(4));
			expect(view(new CompactInstanceStore(state.storage)).steps).toEqual([1, 2, 3].map((n) => [n, `s${n}`, 'completed', 11]));
		}));

	it('puts a held step on its own when it is too large to ride in the record or in the next step', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const store = new CompactInstanceStore(state.storage, { empty: true, format: 2, foldSleeps: true });
			store.transaction(() => store.writeInstance(row('running', 1)));
			const writes = counting(state);
			const big = JSON.stringify('x'.repeat(5_000));
			store.insertStep(step(1, { result: big }), [rec('step.started', 's1', 10)]);
			store.insertStep(step(2, {}), [rec('step.started', 's2', 12)]);
			// s1 in a key of its own (s2 may not carry it: above 4 KiB), s2 held.
			expect(writes).toEqual(['put s']);
			store.insertStep(step(3, { result: big }), [rec('step.started', 's3', 14)]);
			// s3 carries s2 (small), and is held in turn.
			expect(writes).toEqual(['put s']);
			store.insertStep(step(4, { result: big }), [rec('step.started', 's4', 16)]);
			// s4 may not carry s3 (it carries s2): s3 put, s4 held.
			expect(writes).toEqual(['put s', 'put s']);
			store.transaction(() => store.writeInstance(row('completed', 2)));
			// s4 held, too large for the record: in a key of its own in the outcome's transaction.
			expect(writes).toEqual(['put s', 'put s', 'put s', 'put i']);
			expect(state.storage.kv.get<{ st?: unknown }>('i')?.st).toBeUndefined();
			const fresh = new CompactInstanceStore(state.storage);
			expect(fresh.readSteps().map((s) => [s.seq, s.result === big])).toEqual([[1, true], [2, false], [3, true], [4, true]]);
		}));

	it('a format-4 store reads what format 5 wrote, and writes the sleeps it finds where they are', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const store = new CompactInstanceStore(state.storage, { empty: true, format: 2, foldSleeps: true });
			store.transaction(() => store.writeInstance(row('running', 1)));
			store.transaction(() => {
				store.writeStep(nap(1));
				store.setWakeup('sleep:nap1', 1_000);
			});
			store.transaction(() => store.writeInstance(row('sleeping', 2)));
			// A restart under a build at format 4: it finds the sleep and its wake-up in the record, and completes it.
			const older = new CompactInstanceStore(state.storage, { format: 2 });
			expect(view(older)).toMatchObject({ steps: [[1, 'nap1', 'sleeping', null]], earliest: 1_000 });
			older.transaction(() => {
				older.deleteWakeup('sleep:nap1');
				older.writeStep(nap(1, { status: 'completed', finishedAt: 1_000 }));
			});
			for (const reader of [older, new CompactInstanceStore(state.storage)]) expect(view(reader)).toMatchObject({ steps: [[1, 'nap1', 'completed', 1_000]], earliest: undefined });
		}));
});
