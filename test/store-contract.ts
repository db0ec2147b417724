import { expect, it } from 'vitest';
import type { HistoryRow, NewHistoryRow } from '../src/engine/history/history';
import { SMALL_RESULT_BYTES } from '../src/engine/support/limits';
import type { InstanceRow, InstanceStore, StepCount, StepRow } from '../src/engine/storage/store';

/**
 * One contract for every `InstanceStore`: the in-memory store (plain Node)
 * and the Drizzle store (workerd) both run it, so the engine's tests on the
 * first say something about production on the second.
 */
export function storeContract(name: string, withStore: (fn: (store: InstanceStore) => void | Promise<void>) => Promise<void>) {
	const row: InstanceRow = {
		id: 'wf-1', type: 't', status: 'running', payload: '{"a":1}', output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
		createdAt: 1, updatedAt: 2, version: 3, generation: 0, codeVersion: 'v1', lastCodeVersion: 'v2', rollback: null, historyBytes: 0, historySeq: 0, parentId: 'parent-1',
		attributes: '{"customerId":"42"}',
	};
	const step = (key: string, seq: number, over: Partial<StepRow> = {}): StepRow => ({
		key, name: key.slice(key.indexOf(':') + 1), kind: 'do', status: 'completed', attempts: 1, result: '1',
		errorName: null, errorMessage: null, errorStack: null, errorCode: null, startedAt: 1, finishedAt: 2, wakeAt: null, seq, sensitive: false, ...over,
	});

	const record = (generation: number, kind: NewHistoryRow['kind'], over: Partial<NewHistoryRow> = {}): NewHistoryRow => ({
		generation, at: 10, kind, step: null, attempt: null, value: null, detail: null, ...over,
	});

	it(`${name}: writes and reads back the instance row, replacing it whole`, () =>
		withStore((store) => {
			expect(store.readInstance()).toBeUndefined();
			store.writeInstance(row);
			store.writeInstance({ ...row, status: 'completed', output: '"done"', version: 4, historyBytes: 500, historySeq: 7 });
			expect(store.readInstance()).toEqual({ ...row, status: 'completed', output: '"done"', version: 4, historyBytes: 500, historySeq: 7 });
		}));

	it(`${name}: returns every step in first-reached order and upserts by key`, () =>
		withStore((store) => {
			store.writeStep(step('do:b', 2));
			store.writeStep(step('do:a', 1, { status: 'running', result: null }));
			store.writeStep(step('do:a', 1, { attempts: 2 }));
			expect(store.readSteps().map((s) => [s.key, s.attempts])).toEqual([['do:a', 2], ['do:b', 1]]);
			store.deleteSteps();
			expect(store.readSteps()).toEqual([]);
		}));

	it(`${name}: keeps, for a restart from a step, only the steps other than rollbacks recorded before a seq, results untouched`, () =>
		withStore((store) => {
			const big = JSON.stringify('x'.repeat(5000));
			store.writeStep(step('do:a', 1, { result: big }));
			store.writeStep(step('sleep:b', 2, { kind: 'sleep', result: null }));
			store.writeStep(step('rollback:a', 3, { kind: 'rollback' }));
			store.writeStep(step('do:c', 4));
			store.writeStep(step('do:d', 5));
			store.keepStepsBefore(4);
			expect(store.readSteps().map((s) => s.key)).toEqual(['do:a', 'sleep:b']);
			expect(store.readStep('do:a')?.result).toBe(big);
		}));

	it(`${name}: cancels the steps a terminate interrupted (running, retrying, sleeping, waiting) and leaves the finished ones`, () =>
		withStore((store) => {
			store.writeStep(step('do:a', 1));
			store.writeStep(step('do:b', 2, { status: 'retrying', wakeAt: 900 }));
			store.writeStep(step('sleep:c', 3, { kind: 'sleep', status: 'sleeping', wakeAt: 900 }));
			store.writeStep(step('wait:d', 4, { kind: 'wait', status: 'waiting' }));
			store.writeStep(step('do:e', 5, { status: 'failed' }));
			store.writeStep(step('rollback:a', 6, { kind: 'rollback', status: 'running' }));
			store.cancelUnfinishedSteps(1000);
			expect(store.readSteps().map((s) => [s.key, s.status, s.wakeAt])).toEqual([
				['do:a', 'completed', null],
				['do:b', 'cancelled', null],
				['sleep:c', 'cancelled', null],
				['wait:d', 'cancelled', null],
				['do:e', 'failed', null],
				['rollback:a', 'cancelled', null],
			]);
			expect(store.readStep('sleep:c')?.finishedAt).toBe(1000);
		}));

	it(`${name}: reads one step by key, and the steps of one kind (and status) in first-reached order`, () =>
		withStore((store) => {
			store.writeStep(step('webhook:b', 3, { kind: 'webhook', status: 'waiting', result: '{"url":"/webhooks/t"}' }));
			store.writeStep(step('do:a', 1));
			store.writeStep(step('rollback:a', 4, { kind: 'rollback' }));
			store.writeStep(step('webhook:a', 2, { kind: 'webhook', status: 'completed' }));
			expect(store.readStep('webhook:b')).toMatchObject({ kind: 'webhook', status: 'waiting', result: '{"url":"/webhooks/t"}' });
			expect(store.readStep('do:missing')).toBeUndefined();
			expect(store.readStepsOfKind('webhook').map((s) => s.key)).toEqual(['webhook:a', 'webhook:b']);
			expect(store.readStepsOfKind('webhook', 'waiting').map((s) => s.key)).toEqual(['webhook:b']);
			expect(store.readStepsOfKind('rollback', 'completed').map((s) => s.key)).toEqual(['rollback:a']);
		}));

	it(`${name}: keeps wake-ups ordered by time and deletes the due ones`, () =>
		withStore((store) => {
			expect(store.earliestWakeup()).toBeUndefined();
			store.setWakeup('sleep:a', 300);
			store.setWakeup('sleep:b', 100);
			store.setWakeup('sleep:a', 200);
			expect(store.earliestWakeup()).toBe(100);
			store.deleteWakeupsDue(150, new Set());
			expect(store.earliestWakeup()).toBe(200);
			store.deleteWakeup('sleep:a');
			expect(store.earliestWakeup()).toBeUndefined();
		}));

	it(`${name}: spares the wake-ups it is told to when it deletes the due ones, however due`, () =>
		withStore((store) => {
			store.setWakeup('do:retry', 100);
			store.setWakeup('wait:timeout', 100);
			store.setWakeup('sleep:a', 50);
			store.setWakeup('sleep:later', 300);
			store.deleteWakeupsDue(100, new Set(['do:retry', 'sleep:never-set']));
			expect(store.earliestWakeup()).toBe(100);
			store.deleteWakeup('do:retry');
			expect(store.earliestWakeup()).toBe(300);
		}));

	it(`${name}: hands out buffered events oldest first, per name`, () =>
		withStore((store) => {
			store.appendEvent('x', '1', 10);
			store.appendEvent('y', '2', 11);
			store.appendEvent('x', '3', 12);
			const first = store.oldestEvent('x')!;
			expect(first).toMatchObject({ name: 'x', payload: '1' });
			store.deleteEvent(first.seq);
			expect(store.oldestEvent('x')).toMatchObject({ payload: '3' });
			store.deleteAllEvents();
			expect(store.oldestEvent('y')).toBeUndefined();
		}));

	it(`${name}: pages step rows without results, reads the results of a window in one call, counts steps per status`, () =>
		withStore((store) => {
			for (let seq = 1; seq <= 5; seq++) store.writeStep(step(`do:s${seq}`, seq, { result: `"r${seq}"`, status: seq === 5 ? 'running' : 'completed' }));
			expect(store.readStepMeta({ afterSeq: 2, limit: 2 }).map((s) => s.key)).toEqual(['do:s3', 'do:s4']);
			expect(store.readStepMeta({ last: 2 }).map((s) => s.key)).toEqual(['do:s4', 'do:s5']);
			expect(store.readStepMeta({ last: 1 })[0]).not.toHaveProperty('result');
			store.writeStep(step('do:s6', 6, { result: '"é"' }));
			store.writeStep(step('do:s7', 7, { result: null, status: 'failed' }));
			expect(store.readStepMeta({ last: 2 }).map((s) => s.resultBytes)).toEqual([4, 0]);
			expect(store.readStepResults([{ key: 'do:s2', seq: 2 }, { key: 'do:s7', seq: 7 }, { key: 'do:none', seq: 99 }])).toEqual(new Map([['do:s2', '"r2"'], ['do:s7', null]]));
			expect(store.readStepResults([]).size).toBe(0);
			const byKindAndStatus = (counts: StepCount[]) => counts.map(({ kind, status, n }) => `${kind} ${status} ${n}`).sort();
			expect(byKindAndStatus(store.countSteps())).toEqual(['do completed 5', 'do failed 1', 'do running 1']);
			store.writeStep(step('webhook:w', 8, { kind: 'webhook', status: 'waiting' }));
			expect(byKindAndStatus(store.countSteps())).toEqual(['do completed 5', 'do failed 1', 'do running 1', 'webhook waiting 1']);
		}));

	it(`${name}: brings small results along with the step rows, and leaves larger ones to readStepResults`, () =>
		withStore((store) => {
			const small = JSON.stringify('x'.repeat(SMALL_RESULT_BYTES - 2));
			const large = JSON.stringify('x'.repeat(SMALL_RESULT_BYTES - 1));
			store.writeStep(step('do:small', 1, { result: small }));
			store.writeStep(step('do:large', 2, { result: large }));
			store.writeStep(step('do:none', 3, { result: null, status: 'running' }));
			const [first, second, third] = store.readStepMeta({ afterSeq: 0, limit: 10 });
			expect(first).toMatchObject({ key: 'do:small', resultBytes: SMALL_RESULT_BYTES, smallResult: small });
			expect(second!.resultBytes).toBe(SMALL_RESULT_BYTES + 1);
			expect(second!.smallResult).toBeUndefined();
			expect(third).toMatchObject({ key: 'do:none', resultBytes: 0, smallResult: null });
			expect(store.readStepMeta({ last: 2 }).map((s) => s.smallResult)).toEqual([undefined, null]);
			expect(store.readStepResults([second!])).toEqual(new Map([['do:large', large]]));
		}));

	it(`${name}: sums the buffered events and their UTF-8 bytes`, () =>
		withStore((store) => {
			expect(store.eventBuffer()).toEqual({ count: 0, bytes: 0 });
			store.appendEvent('x', '"é"', 1);
			store.appendEvent('y', null, 2);
			expect(store.eventBuffer()).toEqual({ count: 2, bytes: 4 });
		}));

	it(`${name}: drops every buffered event and keeps counting the dropped ones`, () =>
		withStore((store) => {
			expect(store.eventCounts()).toEqual({ buffered: 0, dropped: 0 });
			expect(store.dropEvents()).toBe(0);
			store.appendEvent('x', '1', 1);
			store.appendEvent('y', '2', 2);
			expect(store.dropEvents()).toBe(2);
			store.appendEvent('x', '3', 3);
			store.appendEvent('z', '4', 4);
			expect(store.eventCounts()).toEqual({ buffered: 2, dropped: 2 });
			expect(store.dropEvents()).toBe(2);
			expect(store.eventCounts()).toEqual({ buffered: 0, dropped: 4 });
			expect(store.eventBuffer()).toEqual({ count: 0, bytes: 0 });
		}));

	it(`${name}: remembers the most recent idempotency keys only`, () =>
		withStore((store) => {
			for (let i = 1; i <= 4; i++) store.writeEventKey({ key: `k${i}`, name: 'x', digest: `d${i}` }, i, 3);
			expect(store.readEventKey('k1')).toBeUndefined();
			expect(store.readEventKey('k4')).toEqual({ key: 'k4', name: 'x', digest: 'd4' });
			expect(store.readEventKey('k2')).toMatchObject({ digest: 'd2' });
		}));

	it(`${name}: keeps one outbox row, acknowledged only at its own version`, () =>
		withStore((store) => {
			const entry = { id: 'wf-1', type: 't', status: 'running' as const, createdAt: 1, updatedAt: 2, version: 5 };
			store.writeOutbox({ entry, attempts: 0, nextAttemptAt: 100 });
			store.writeOutbox({ entry: { ...entry, status: 'completed', version: 6 }, attempts: 0, nextAttemptAt: 200 });
			store.ackOutbox(5);
			expect(store.readOutbox()).toMatchObject({ entry: { version: 6 } });
			store.deferOutbox(6, 2, 900);
			expect(store.readOutbox()).toMatchObject({ attempts: 2, nextAttemptAt: 900 });
			store.ackOutbox(6);
			expect(store.readOutbox()).toBeUndefined();
		}));

	it(`${name}: keeps the backlog mark of the outbox across newer entries until it is cleared`, () =>
		withStore((store) => {
			const entry = { id: 'wf-1', type: 't', status: 'running' as const, createdAt: 1, updatedAt: 2, version: 5 };
			store.writeOutbox({ entry, attempts: 0, nextAttemptAt: 100 });
			expect(store.readOutbox()?.backloggedSince ?? null).toBeNull();
			store.markOutboxBacklogged(2);
			store.writeOutbox({ entry: { ...entry, version: 6 }, attempts: 0, nextAttemptAt: 200 });
			expect(store.readOutbox()).toMatchObject({ entry: { version: 6 }, backloggedSince: 2 });
			store.markOutboxBacklogged(null);
			expect(store.readOutbox()?.backloggedSince).toBeNull();
		}));

	it(`${name}: reads back the outbox as a failed transaction left it, not as the transaction wrote it`, () =>
		withStore((store) => {
			const entry = { id: 'wf-1', type: 't', status: 'running' as const, createdAt: 1, updatedAt: 2, version: 5 };
			store.writeOutbox({ entry, attempts: 0, nextAttemptAt: 100 });
			store.markOutboxBacklogged(3);
			expect(() =>
				store.transaction(() => {
					store.writeOutbox({ entry: { ...entry, version: 6 }, attempts: 0, nextAttemptAt: 200 });
					store.deferOutbox(6, 1, 300);
					throw new Error('boom');
				}),
			).toThrow('boom');
			expect(store.readOutbox()).toEqual({ entry, attempts: 0, nextAttemptAt: 100, backloggedSince: 3 });
			expect(() =>
				store.transaction(() => {
					store.ackOutbox(5);
					throw new Error('boom');
				}),
			).toThrow('boom');
			expect(store.readOutbox()).toMatchObject({ entry: { version: 5 } });
			// A copy: changing what was read changes nothing stored.
			store.readOutbox()!.attempts = 99;
			expect(store.readOutbox()!.attempts).toBe(0);
		}));

	it(`${name}: rolls back a failed transaction`, () =>
		withStore((store) => {
			store.writeInstance(row);
			expect(() =>
				store.transaction(() => {
					store.writeInstance({ ...row, status: 'errored' });
					store.setWakeup('sleep:z', 5);
					store.appendHistory(record(0, 'workflow.errored'));
					throw new Error('boom');
				}),
			).toThrow('boom');
			expect(store.readInstance()!.status).toBe('running');
			expect(store.earliestWakeup()).toBeUndefined();
			expect(store.readHistory({ generation: 0, afterSeq: 0, limit: 10 })).toEqual([]);
		}));

	it(`${name}: appends history records with growing seqs across generations and reads one generation in order`, () =>
		withStore((store) => {
			store.appendHistory(record(0, 'workflow.created', { value: '{"a":1}' }));
			store.appendHistory(record(0, 'step.started', { step: 's', attempt: 1 }));
			store.appendHistory(record(0, 'step.completed', { step: 's', attempt: 1, value: '"héllo"', detail: '{}' }));
			store.appendHistory(record(1, 'workflow.restarted', { detail: '{"previousGeneration":0}' }));
			const first = store.readHistory({ generation: 0, afterSeq: 0, limit: 10 });
			expect(first.map((r) => [r.seq, r.kind, r.step, r.attempt])).toEqual([
				[1, 'workflow.created', null, null],
				[2, 'step.started', 's', 1],
				[3, 'step.completed', 's', 1],
			]);
			expect(first[2]).toMatchObject({ value: '"héllo"', detail: '{}', at: 10, generation: 0 });
			expect(store.readHistory({ generation: 0, afterSeq: 1, limit: 1 }).map((r) => r.seq)).toEqual([2]);
			expect(store.readHistory({ generation: 1, afterSeq: 0, limit: 10 }).map((r) => r.seq)).toEqual([4]);
			// UTF-8 bytes of value + detail, without reading the values.
			expect(store.readHistoryMeta({ generation: 0, afterSeq: 1, limit: 10 })).toEqual([
				{ seq: 2, bytes: 0 },
				{ seq: 3, bytes: 8 + 2 }, // "héllo" is 7 characters, 8 bytes
			]);
		}));

	it(`${name}: writes a step with its history record exactly as a step write plus an append would, whether the record follows from the row or not`, () =>
		withStore((store) => {
			store.writeInstance({ ...row, generation: 2 });
			const running = step('do:s', 1, { status: 'running', result: null, startedAt: 100, finishedAt: null });
			const completed = { ...running, status: 'completed' as const, result: '"ok"', finishedAt: 105 };
			const retry = { ...running, attempts: 2 };
			store.writeStepWithRecord(running, record(2, 'step.started', { at: 100, step: 's', attempt: 1 }));
			store.writeStepWithRecord(completed, record(2, 'step.completed', { at: 105, step: 's', attempt: 1, value: '"ok"' }));
			// Records that do not follow from their row: another time, another generation, a detail.
			store.writeStepWithRecord(retry, record(2, 'step.started', { at: 200, step: 's', attempt: 2 }));
			store.writeStepWithRecord(completed, record(1, 'step.completed', { at: 105, step: 's', attempt: 1, value: '"ok"' }));
			store.writeStepWithRecord(completed, record(2, 'step.completed', { at: 105, step: 's', attempt: 1, value: '"ok"', detail: '{"x":1}' }));
			// A plain write after them appends nothing.
			store.writeStep({ ...completed, result: '"again"' });
			expect(store.readSteps()).toEqual([{ ...completed, result: '"again"' }]);
			expect(store.readStep('do:s')).toEqual({ ...completed, result: '"again"' });
			const rows = [...store.readHistory({ generation: 2, afterSeq: 0, limit: 10 }), ...store.readHistory({ generation: 1, afterSeq: 0, limit: 10 })];
			expect(rows.map(({ seq, generation, at, kind, step: s, attempt, value, detail }) => [seq, generation, at, kind, s, attempt, value, detail])).toEqual([
				[1, 2, 100, 'step.started', 's', 1, null, null],
				[2, 2, 105, 'step.completed', 's', 1, '"ok"', null],
				[3, 2, 200, 'step.started', 's', 2, null, null],
				[5, 2, 105, 'step.completed', 's', 1, '"ok"', '{"x":1}'],
				[4, 1, 105, 'step.completed', 's', 1, '"ok"', null],
			]);
		}));

	it(`${name}: gives the records of a new step's first write the next seqs, read back by every history reader in order among the others, kept when the steps go`, () =>
		withStore((store) => {
			store.writeInstance(row);
			store.appendHistory(record(0, 'workflow.created', { value: '{"a":1}' }));
			const done = step('do:a', 1, { startedAt: 100, finishedAt: 105, result: '"héllo"' });
			store.insertStep(done, [record(0, 'step.started', { at: 100, step: 'a', attempt: 1 }), record(0, 'step.completed', { at: 105, step: 'a', attempt: 1, value: '"héllo"' })]);
			// A record that does not follow from its row (a sensitive step's marker) is kept as given.
			const secret = step('do:b', 2, { startedAt: 110, finishedAt: 111, sensitive: true });
			store.insertStep(secret, [record(0, 'step.started', { at: 110, step: 'b', attempt: 1 }), record(0, 'step.completed', { at: 111, step: 'b', attempt: 1, value: '"[redacted]"', detail: '{"redacted":true}' })]);
			store.appendHistory(record(0, 'workflow.completed', { value: '2' }));
			const expected = [
				[1, 'workflow.created', null, null, '{"a":1}', null],
				[2, 'step.started', 'a', 1, null, null],
				[3, 'step.completed', 'a', 1, '"héllo"', null],
				[4, 'step.started', 'b', 1, null, null],
				[5, 'step.completed', 'b', 1, '"[redacted]"', '{"redacted":true}'],
				[6, 'workflow.completed', null, null, '2', null],
			];
			const shape = (rows: HistoryRow[]) => rows.map((r) => [r.seq, r.kind, r.step, r.attempt, r.value, r.detail]);
			expect(shape(store.readHistory({ generation: 0, afterSeq: 0, limit: 10 }))).toEqual(expected);
			expect(shape(store.readHistory({ generation: 0, afterSeq: 2, limit: 2 }))).toEqual(expected.slice(2, 4));
			expect(store.readHistoryMeta({ generation: 0, afterSeq: 1, limit: 3 })).toEqual([{ seq: 2, bytes: 0 }, { seq: 3, bytes: 8 }, { seq: 4, bytes: 0 }]);
			expect(shape(store.readHistoryOfKinds({ afterSeq: 0, limit: 10, kinds: ['step.completed', 'workflow.completed'] }))).toEqual([expected[2], expected[4], expected[5]]);
			expect(store.historySize(2)).toEqual({ bytes: 8 + 12 + 17 + 1, lastSeq: 6 });
			// The rows read back as written (a plain completed step takes the store's shortest insert).
			expect(store.readStep('do:a')).toEqual(done);
			expect(store.readStep('do:b')).toEqual(secret);
			store.deleteSteps();
			expect(shape(store.readHistory({ generation: 0, afterSeq: 0, limit: 10 }))).toEqual(expected);
			expect(store.historySize(0)).toEqual({ bytes: 7 + 8 + 12 + 17 + 1, lastSeq: 6 });
		}));

	it(`${name}: keeps a step's sensitive flag through writes, reads and step metadata`, () =>
		withStore((store) => {
			store.writeInstance(row);
			const secret = step('do:secret', 1, { sensitive: true });
			store.writeStep(secret);
			store.writeStep(step('do:plain', 2));
			expect(store.readStep('do:secret')).toEqual(secret);
			expect(store.readSteps().map((s) => s.sensitive)).toEqual([true, false]);
			expect(store.readStepMeta({ last: 2 }).map((s) => s.sensitive)).toEqual([true, false]);
		}));

	it(`${name}: sums the UTF-8 bytes of the history records after a seq, of every generation, with the last seq`, () =>
		withStore((store) => {
			expect(store.historySize(0)).toEqual({ bytes: 0, lastSeq: 0 });
			store.appendHistory(record(0, 'workflow.created', { value: '{"a":1}' }));
			store.appendHistory(record(0, 'step.completed', { step: 's', attempt: 1, value: '"héllo"', detail: '{}' }));
			store.appendHistory(record(1, 'workflow.restarted', { detail: '{"previousGeneration":0}' }));
			expect(store.historySize(0)).toEqual({ bytes: 7 + 10 + 24, lastSeq: 3 });
			expect(store.historySize(1)).toEqual({ bytes: 10 + 24, lastSeq: 3 });
			expect(store.historySize(3)).toEqual({ bytes: 0, lastSeq: 3 });
		}));

	it(`${name}: writes a step's later changes into the row its seq holds, and refuses a seq that holds another step`, () =>
		withStore((store) => {
			store.writeStep(step('do:a', 1, { result: null, status: 'running' }));
			store.writeStep(step('do:a', 1, { result: '"done"', status: 'completed' }));
			expect(store.readSteps().map((s) => [s.key, s.seq, s.status, s.result])).toEqual([['do:a', 1, 'completed', '"done"']]);
			expect(() => store.writeStep(step('do:b', 1, { result: '"other"' }))).toThrow(/seq 1/);
			expect(store.readSteps().map((s) => [s.key, s.result])).toEqual([['do:a', '"done"']]);
		}));

	it(`${name}: answers the last seq of the history, of any generation, and 0 for none`, () =>
		withStore((store) => {
			expect(store.historyLastSeq()).toBe(0);
			store.appendHistory(record(0, 'workflow.created', { value: '{"a":1}' }));
			store.appendHistory(record(1, 'workflow.restarted', { detail: '{"previousGeneration":0}' }));
			expect(store.historyLastSeq()).toBe(2);
		}));

	it(`${name}: takes lists of 1,000 keys in one call (production binds at most 100 parameters a statement)`, () =>
		withStore((store) => {
			const keys = Array.from({ length: 1000 }, (_, i) => `do:k${i}`);
			store.transaction(() => keys.forEach((key, i) => store.writeStep(step(key, i + 1, { result: String(i) }))));
			const results = store.readStepResults(keys.map((key, i) => ({ key, seq: i + 1 })));
			expect(results.size).toBe(1000);
			expect(results.get('do:k999')).toBe('999');
			store.transaction(() => keys.forEach((key, i) => store.setWakeup(key, 1000 + i)));
			store.deleteWakeupsDue(5000, new Set(keys.slice(0, 1000)));
			expect(store.earliestWakeup()).toBe(1000);
			store.deleteWakeupsDue(5000, new Set());
			expect(store.earliestWakeup()).toBeUndefined();
		}));

	it(`${name}: keeps the count of passes cut short and when the next may start, until it is cleared`, () =>
		withStore((store) => {
			expect(store.readCutPasses()).toBeUndefined();
			store.writeCutPasses({ count: 3, retryAt: 1_700_000_040_000 });
			expect(store.readCutPasses()).toEqual({ count: 3, retryAt: 1_700_000_040_000 });
			store.writeCutPasses(undefined);
			expect(store.readCutPasses()).toBeUndefined();
		}));

	it(`${name}: keeps one deletion row, replaced whole, and rolls it back with its transaction`, () =>
		withStore((store) => {
			expect(store.readDeletion()).toBeUndefined();
			const deletion = { requestedAt: 5, reason: 'retention' as const, archive: true, archivedKey: null, attempts: 0, nextAttemptAt: null };
			store.writeDeletion(deletion);
			store.writeDeletion({ ...deletion, archivedKey: 'k', attempts: 2, nextAttemptAt: 9 });
			expect(store.readDeletion()).toEqual({ ...deletion, archivedKey: 'k', attempts: 2, nextAttemptAt: 9 });
			expect(() =>
				store.transaction(() => {
					store.writeDeletion({ ...deletion, archive: false });
					throw new Error('refused');
				}),
			).toThrow('refused');
			expect(store.readDeletion()).toMatchObject({ archive: true, archivedKey: 'k' });
		}));

	it(`${name}: keeps an inline child's rows per child, replaced by key, lists the finished ones awaiting publishing, and rolls them back with their transaction`, () =>
		withStore((store) => {
			const byKey = (rows: { key: string }[]) => [...rows].sort((a, b) => a.key.localeCompare(b.key));
			store.writeInlineRow('p::a', { key: 'do:s', body: '{"v":1}', result: '1', publishAt: null });
			store.writeInlineRow('p::a', { key: 'do:s', body: '{"v":2}', result: '"two"', publishAt: null });
			store.writeInlineRow('p::a', { key: '', body: '{"h":1}', result: null, publishAt: 7 });
			store.writeInlineRow('p::b', { key: '', body: '{"h":2}', result: null, publishAt: null });
			store.writeInlineRow('p::c', { key: 'do:t', body: '{}', result: null, publishAt: null });
			expect(byKey(store.readInlineRows('p::a'))).toEqual([{ key: '', body: '{"h":1}', result: null, publishAt: 7 }, { key: 'do:s', body: '{"v":2}', result: '"two"', publishAt: null }]);
			expect(store.inlinePublishes()).toEqual([{ childId: 'p::a', publishAt: 7 }]);
			expect(() =>
				store.transaction(() => {
					store.deleteInline('p::a');
					throw new Error('refused');
				}),
			).toThrow('refused');
			expect(store.readInlineRows('p::a')).toHaveLength(2);
			// Those not awaiting publishing go: a header without publish_at, or steps without a header.
			store.deleteUnpublishedInline();
			expect([store.readInlineRows('p::b'), store.readInlineRows('p::c')]).toEqual([[], []]);
			expect(store.readInlineRows('p::a')).toHaveLength(2);
			store.deleteInline('p::a');
			expect([store.readInlineRows('p::a'), store.inlinePublishes()]).toEqual([[], []]);
		}));
}
