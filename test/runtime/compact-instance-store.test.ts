import { runInDurableObject } from 'cloudflare:test';
import { assert, describe, expect, it } from 'vitest';
import type { OutboxRow } from '../../src/engine/storage/store';
import { CompactInstanceStore } from '../../src/runtime/compact-instance-store';
import { stub, uniqueId } from '../helpers';
import { storeContract } from '../store-contract';

describe('CompactInstanceStore', () => {
	storeContract('compact', (fn) => runInDurableObject(stub(uniqueId('store')), async (_, state) => fn(new CompactInstanceStore(state.storage))));
	// A store told that its object is new answers its first reads without a storage call.
	storeContract('compact on a new object', (fn) => runInDurableObject(stub(uniqueId('store')), async (_, state) => fn(new CompactInstanceStore(state.storage, { empty: true }))));
	// Format 2 (src/runtime/compact-format.ts): a step's wake-up in its key. The contract's wake-ups set apart from steps keep keys.
	storeContract('compact, format 2', (fn) => runInDurableObject(stub(uniqueId('store')), async (_, state) => fn(new CompactInstanceStore(state.storage, { format: 2 }))));
	// Storage format 5 (src/runtime/compact-folded-steps.ts): a sleep's writes folded into the writes around it.
	storeContract('compact, sleeps folded (storage format 5)', (fn) => runInDurableObject(stub(uniqueId('store')), async (_, state) => fn(new CompactInstanceStore(state.storage, { format: 2, foldSleeps: true }))));

	it("format 2 keeps a wake-up set with its step in the step's key: one set with the earliest across restarts, a setting flipped back and failed transactions", () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const store = new CompactInstanceStore(state.storage, { empty: true, format: 2 });
			const step = { key: 'sleep:nap', name: 'nap', kind: 'sleep' as const, status: 'sleeping' as const, attempts: 0, result: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null, startedAt: 10, finishedAt: null, wakeAt: 500, seq: 1, sensitive: false };
			const retry = { ...step, key: 'do:call', name: 'call', kind: 'do' as const, status: 'retrying' as const, wakeAt: 300, seq: 2 };
			const wakeKeys = () => [...state.storage.kv.list({ prefix: 'w:' })].map(([key]) => key);
			store.transaction(() => {
				store.writeStep(step);
				store.setWakeup(step.key, 500);
			});
			store.transaction(() => {
				store.writeStep(retry);
				store.setWakeup(retry.key, 300);
			});
			// One set apart from its step (a continuation) keeps a key of its own.
			store.setWakeup('continue', 400);
			expect(wakeKeys()).toEqual(['w:continue']);
			// A store over the same storage (a restart), of either format (the setting flipped back), finds them all.
			for (const reader of [store, new CompactInstanceStore(state.storage, { format: 2 }), new CompactInstanceStore(state.storage)]) expect(reader.earliestWakeup()).toBe(300);
			// The step rewritten unfinished (an attempt's start) keeps its wake-up; a failed transaction changes nothing.
			store.writeStep({ ...retry, status: 'running' });
			expect(() => store.transaction(() => (store.deleteWakeup(retry.key), store.writeStep({ ...retry, status: 'completed' }), assert.fail('refused')))).toThrow('refused');
			expect(store.earliestWakeup()).toBe(300);
			expect(new CompactInstanceStore(state.storage).earliestWakeup()).toBe(300);
			// Finished, the step bears no wake-up: the write that finishes it clears it.
			store.writeStep({ ...retry, status: 'completed', finishedAt: 310 });
			expect(store.earliestWakeup()).toBe(400);
			// Those due when a pass began go, but for the ones it set; the step keeps its row.
			store.deleteWakeupsDue(600, new Set(['continue']));
			expect(store.earliestWakeup()).toBe(400);
			expect(new CompactInstanceStore(state.storage).earliestWakeup()).toBe(400);
			expect(store.readStep(step.key)).toMatchObject({ status: 'sleeping', wakeAt: 500 });
			expect(store.takeWakeup('continue')).toBe(true);
			expect(store.earliestWakeup()).toBeUndefined();
			expect(new CompactInstanceStore(state.storage).earliestWakeup()).toBeUndefined();
			// A status page never shows the field.
			expect(Object.keys(store.readStepMeta({ afterSeq: 0, limit: 10 })[0]!)).not.toContain('wk');
		}));

	it('keeps what an outer transaction wrote when a transaction inside it fails and the outer one goes on', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const store = new CompactInstanceStore(state.storage, { empty: true });
			const row = {
				id: 'wf-1', type: 't', status: 'running' as const, payload: null, output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
				createdAt: 1, updatedAt: 1, version: 1, generation: 0, codeVersion: null, lastCodeVersion: null, rollback: null, historyBytes: 0, historySeq: 0, parentId: null, attributes: null,
			};
			const record = { generation: 0, at: 1, step: null, attempt: null, value: null, detail: null };
			store.transaction(() => {
				store.writeInstance(row);
				store.appendHistory({ ...record, kind: 'workflow.created' });
				try {
					store.transaction(() => {
						store.writeInstance({ ...row, status: 'errored', version: 2 });
						store.appendHistory({ ...record, kind: 'workflow.errored' });
						throw new Error('refused');
					});
				} catch {
					// the inner one is rolled back; the outer one goes on
				}
				store.writeInstance({ ...row, version: 3 });
			});
			for (const reader of [store, new CompactInstanceStore(state.storage)]) {
				expect(reader.readInstance()).toMatchObject({ status: 'running', version: 3 });
				expect(reader.readHistory({ generation: 0, afterSeq: 0, limit: 10 }).map((r) => r.kind)).toEqual(['workflow.created']);
			}
		}));

	it("keeps a record appended after its step in one transaction in the step's key, read in order, kept when the step is rewritten or deleted, forgotten on a rollback", () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const store = new CompactInstanceStore(state.storage, { empty: true });
			const record = { generation: 0, step: 'nap', attempt: null, detail: null };
			const step = { key: 'sleep:nap', name: 'nap', kind: 'sleep' as const, status: 'sleeping' as const, attempts: 0, result: '"first"', errorName: null, errorMessage: null, errorStack: null, errorCode: null, startedAt: 10, finishedAt: null, wakeAt: 20, seq: 1, sensitive: false };
			store.appendHistory({ ...record, at: 1, kind: 'event.received', step: null, value: null });
			store.transaction(() => {
				store.writeStep(step);
				store.appendHistory({ ...record, at: 10, kind: 'sleep.started', value: null, detail: '{"until":20}' });
				// Its value is the step's result: kept once, in the step.
				store.appendHistory({ ...record, at: 10, kind: 'child.completed', value: '"first"' });
			});
			const kinds = (s: CompactInstanceStore) => s.readHistory({ generation: 0, afterSeq: 0, limit: 10 }).map((r) => [r.seq, r.kind, r.value]);
			const expected = [[1, 'event.received', null], [2, 'sleep.started', null], [3, 'child.completed', '"first"']];
			expect(kinds(store)).toEqual(expected);
			expect(kinds(new CompactInstanceStore(state.storage))).toEqual(expected);
			// Only the first record took a key of its own: the other two are in the step's.
			expect([...state.storage.kv.list({ prefix: 'h:' })].map(([key]) => key)).toEqual(['h:000000000001']);
			// The step written again (its result changed): the records keep the values they had.
			store.writeStep({ ...step, status: 'completed', result: '"second"', finishedAt: 20 });
			expect(kinds(new CompactInstanceStore(state.storage))).toEqual(expected);
			expect(new CompactInstanceStore(state.storage).historySize(0)).toEqual({ bytes: '{"until":20}'.length + '"first"'.length, lastSeq: 3 });
			// A transaction that fails forgets the step and the record it carried.
			expect(() =>
				store.transaction(() => {
					store.writeStep({ ...step, key: 'sleep:b', name: 'b', seq: 2 });
					store.appendHistory({ ...record, step: 'b', at: 11, kind: 'sleep.started', value: null });
					throw new Error('refused');
				}),
			).toThrow('refused');
			expect(store.readStep('sleep:b')).toBeUndefined();
			expect(kinds(store)).toEqual(expected);
			expect(store.historyLastSeq()).toBe(3);
			// A restart deletes the steps: their records stay in the history.
			store.deleteSteps();
			expect(kinds(store)).toEqual(expected);
			expect(kinds(new CompactInstanceStore(state.storage))).toEqual(expected);
		}));

	it('answers from what it kept (record, outbox, history tail, wake-ups, steps, events) what a store that kept nothing reads, but an acknowledgement not yet written', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			let store = new CompactInstanceStore(state.storage, { empty: true });
			const reads = (s: CompactInstanceStore, afterSeqs: number[]) => ({
				instance: s.readInstance(),
				earliest: s.earliestWakeup(),
				tails: afterSeqs.map((seq) => s.historySize(seq)),
				history: s.readHistory({ generation, afterSeq: 0, limit: 1000 }),
				steps: s.readSteps(),
				events: [s.eventBuffer(), s.eventBuffer('e1'), s.oldestEvent('e0')?.payload, s.eventCounts()],
			});
			// mulberry32: every operation comes up (an LCG in doubles loses its low bits and repeats three of them).
			let seed = 11;
			const random = (n: number) => {
				seed = (seed + 0x6d2b79f5) | 0;
				let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
				t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
				return ((t ^ (t >>> 14)) >>> 0) % n;
			};
			let generation = 0;
			let version = 0;
			let acked = 0;
			let historySeq = 0;
			const instanceRow = () => ({
				id: 'wf-1', type: 't', status: 'running' as const, payload: null, output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
				createdAt: 1, updatedAt: 1, version: ++version, generation, codeVersion: null, lastCodeVersion: null, rollback: null, historyBytes: 0, historySeq, parentId: null, attributes: null,
			});
			const entry = () => ({ id: 'wf-1', type: 't', status: 'running' as const, createdAt: 1, updatedAt: 1, version });
			const ops: Array<() => void> = [
				() => store.writeInstance(instanceRow()),
				() => store.appendHistory({ generation, at: 1, kind: 'event.received', step: null, attempt: null, value: '"é"'.repeat(random(4)), detail: null }),
				() => {
					const n = random(5);
					const running = { key: `do:s${n}`, name: 's', kind: 'do' as const, status: 'running' as const, attempts: 1, result: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null, startedAt: 10, finishedAt: null, wakeAt: null, seq: n + 1, sensitive: false };
					store.writeStepWithRecord(running, { generation, at: 10, kind: 'step.started', step: 's', attempt: 1, value: null, detail: null });
					store.writeStepWithRecord({ ...running, status: 'completed', result: '"ok"', finishedAt: 11 }, { generation, at: 11, kind: 'step.completed', step: 's', attempt: 1, value: '"ok"', detail: null });
				},
				() => {
					const n = 10 + random(1000);
					if (store.readStep(`do:t${n}`)) return;
					const done = { key: `do:t${n}`, name: `t${n}`, kind: 'do' as const, status: 'completed' as const, attempts: 1, result: '"é"', errorName: null, errorMessage: null, errorStack: null, errorCode: null, startedAt: 10, finishedAt: 11, wakeAt: null, seq: n, sensitive: false };
					store.insertStep(done, [
						{ generation, at: 10, kind: 'step.started', step: `t${n}`, attempt: 1, value: null, detail: null },
						{ generation, at: 11, kind: 'step.completed', step: `t${n}`, attempt: 1, value: '"é"', detail: null },
					]);
				},
				() => (historySeq = store.historySize(historySeq).lastSeq),
				() => store.setWakeup(`w${random(3)}`, 100 + random(50)),
				() => store.deleteWakeup(`w${random(3)}`),
				() => store.deleteWakeupsDue(100 + random(60), new Set(random(2) ? [`w${random(3)}`] : [])),
				() => store.deleteAllWakeups(),
				() => store.writeOutbox({ entry: entry(), attempts: 0, nextAttemptAt: 5 }),
				() => {
					const at = version - random(2);
					store.ackOutbox(at);
					acked = Math.max(acked, at);
				},
				// A status change: the record, its history record and its entry, one put at the transaction's end.
				() =>
					store.transaction(() => {
						store.appendHistory({ generation, at: 2, kind: 'workflow.paused', step: null, attempt: null, value: null, detail: null });
						store.writeInstance(instanceRow());
						store.writeOutbox({ entry: entry(), attempts: 0, nextAttemptAt: 7 });
					}),
				() => store.deferOutbox(version - random(2), 1 + random(3), 50 + random(50)),
				() => store.markOutboxBacklogged(random(2) ? null : 3),
				() => (store = new CompactInstanceStore(state.storage)),
				() => generation++,
				() => store.deleteSteps(),
				() => store.appendEvent(`e${random(2)}`, `${random(100)}`, 1),
				() => {
					const oldest = store.oldestEvent(`e${random(2)}`);
					if (oldest) store.deleteEvent(oldest.seq);
				},
				() => store.dropEvents(),
				() => store.deleteAllEvents(),
				// A sleep's step and its record in one transaction (the record rides in the step's put), failing or not.
				() => {
					const n = 2000 + random(3);
					const sleeping = { key: `sleep:z${n}`, name: `z${n}`, kind: 'sleep' as const, status: 'sleeping' as const, attempts: 0, result: random(2) ? null : '"r"', errorName: null, errorMessage: null, errorStack: null, errorCode: null, startedAt: 10, finishedAt: null, wakeAt: 20, seq: n, sensitive: false };
					const fail = random(3) === 0;
					try {
						store.transaction(() => {
							store.writeStep(sleeping);
							store.appendHistory({ generation, at: 10, kind: 'sleep.started', step: `z${n}`, attempt: null, value: random(2) ? '"r"' : null, detail: '{"until":20}' });
							if (fail) throw new Error('refused');
						});
					} catch {
						// rolled back: the step and its record are forgotten
					}
				},
				() => store.keepStepsBefore(1 + random(2010)),
				() => {
					try {
						store.transaction(() => {
							store.appendHistory({ generation, at: 1, kind: 'workflow.paused', step: null, attempt: null, value: null, detail: null });
							store.setWakeup('w9', 1);
							store.writeInstance(instanceRow());
							store.writeOutbox({ entry: entry(), attempts: 0, nextAttemptAt: 5 });
							store.appendEvent('e0', '1', 1);
							store.dropEvents();
							store.deleteSteps();
							throw new Error('refused');
						});
					} catch {
						// rolled back: the store must forget what it kept of these writes
					}
				},
			];
			for (let i = 0; i < 400; i++) {
				ops[random(ops.length)]!();
				const afterSeqs = [0, historySeq, historySeq + 1];
				const fresh = new CompactInstanceStore(state.storage);
				expect(reads(store, afterSeqs), `after operation ${i}`).toEqual(reads(fresh, afterSeqs));
				// The outbox: the same, but an acknowledged entry whose acknowledgement the record's next put will carry.
				const [kept, stored] = [store.readOutbox(), fresh.readOutbox()];
				if (kept !== undefined || stored === undefined) expect(kept, `outbox after operation ${i}`).toEqual(stored);
				else expect((stored as OutboxRow).entry.version, `outbox after operation ${i}`).toBeLessThanOrEqual(acked);
			}
		}));
});
