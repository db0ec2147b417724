import { runInDurableObject } from 'cloudflare:test';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { migrate } from 'drizzle-orm/durable-sqlite/migrator';
import { describe, expect, it } from 'vitest';
import migrations from '../../drizzle/migrations';
import * as schema from '../../src/db/schema';
import { DrizzleInstanceStore } from '../../src/runtime/drizzle-instance-store';
import { stub, uniqueId } from '../helpers';
import { storeContract } from '../store-contract';

describe('DrizzleInstanceStore', () => {
	storeContract('drizzle', (fn) =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage, { schema });
			await migrate(db, migrations);
			await fn(new DrizzleInstanceStore(db, state.storage));
		}),
	);
	// A store told that its tables were just created answers its first reads without a query.
	storeContract('drizzle on a new object', (fn) =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage, { schema });
			await migrate(db, migrations);
			await fn(new DrizzleInstanceStore(db, state.storage, { empty: true }));
		}),
	);

	it('answers from what it kept (outbox, history tail, wake-ups, instance, steps, events) exactly what a store that kept nothing reads', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage, { schema });
			await migrate(db, migrations);
			const store = new DrizzleInstanceStore(db, state.storage, { empty: true });
			const reads = (s: DrizzleInstanceStore, afterSeqs: number[]) => ({
				instance: s.readInstance(),
				outbox: s.readOutbox(),
				earliest: s.earliestWakeup(),
				tails: afterSeqs.map((seq) => s.historySize(seq)),
				steps: s.readSteps().length,
				events: [s.eventBuffer(), s.eventBuffer('e1'), s.oldestEvent('e0')?.payload, s.eventCounts()],
			});
			let seed = 7;
			const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
			let generation = 0;
			let version = 0;
			let historySeq = 0;
			const instanceRow = () => ({
				id: 'wf-1', type: 't', status: 'running' as const, payload: null, output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
				createdAt: 1, updatedAt: 1, version: ++version, generation, codeVersion: null, lastCodeVersion: null, rollback: null, historyBytes: 0, historySeq, parentId: null,
			});
			const entry = () => ({ id: 'wf-1', type: 't', status: 'running' as const, createdAt: 1, updatedAt: 1, version });
			const ops: Array<() => void> = [
				() => store.writeInstance(instanceRow()),
				() => store.appendHistory({ generation, at: 1, kind: 'event.received', step: null, attempt: null, value: '"é"'.repeat(random(4)), detail: null }),
				() => {
					const running = { key: `do:s${random(5)}`, name: 's', kind: 'do' as const, status: 'running' as const, attempts: 1, result: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null, startedAt: 10, finishedAt: null, wakeAt: null, seq: 1, sensitive: false };
					store.writeStepWithRecord(running, { generation, at: 10, kind: 'step.started', step: 's', attempt: 1, value: null, detail: null });
					store.writeStepWithRecord({ ...running, status: 'completed', result: '"ok"', finishedAt: 11 }, { generation, at: 11, kind: 'step.completed', step: 's', attempt: 1, value: '"ok"', detail: null });
				},
				() => (historySeq = store.historySize(historySeq).lastSeq),
				() => store.setWakeup(`w${random(3)}`, 100 + random(50)),
				() => store.deleteWakeup(`w${random(3)}`),
				() => store.deleteWakeupsDue(100 + random(60), new Set(random(2) ? [`w${random(3)}`] : [])),
				() => store.deleteAllWakeups(),
				() => store.writeOutbox({ entry: entry(), attempts: 0, nextAttemptAt: 5 }),
				() => store.ackOutbox(version - random(2)),
				() => generation++,
				() => store.deleteSteps(),
				() => store.appendEvent(`e${random(2)}`, `${random(100)}`, 1),
				() => {
					const oldest = store.oldestEvent(`e${random(2)}`);
					if (oldest) store.deleteEvent(oldest.seq);
				},
				() => store.dropEvents(),
				() => store.deleteAllEvents(),
				() => {
					try {
						store.transaction(() => {
							store.appendHistory({ generation, at: 1, kind: 'workflow.paused', step: null, attempt: null, value: null, detail: null });
							store.setWakeup('w9', 1);
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
				expect(reads(store, afterSeqs), `after operation ${i}`).toEqual(reads(new DrizzleInstanceStore(db, state.storage), afterSeqs));
			}
		}));
});

describe('the steps_record triggers (drizzle/0012)', () => {
	const instanceRow = {
		id: 'wf-1', type: 't', status: 'running' as const, payload: null, output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
		createdAt: 1, updatedAt: 1, version: 1, generation: 0, codeVersion: null, lastCodeVersion: null, rollback: null, historyBytes: 0, historySeq: 0, parentId: null,
	};
	const running = { key: 'do:s', name: 's', kind: 'do' as const, status: 'running' as const, attempts: 1, result: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null, startedAt: 10, finishedAt: null, wakeAt: null, seq: 1, sensitive: false };
	const started = (attempt: number, at = 10) => ({ generation: 0, at, kind: 'step.started' as const, step: 's', attempt, value: null, detail: null });
	const kinds = (store: DrizzleInstanceStore) => store.readHistory({ generation: 0, afterSeq: 0, limit: 10 }).map((r) => [r.kind, r.attempt, r.at, r.value]);

	it('append nothing for a write that does not set the record (the release before drizzle/0007, after a rollback of a deploy)', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage, { schema });
			await migrate(db, migrations);
			const store = new DrizzleInstanceStore(db, state.storage);
			store.writeInstance(instanceRow);
			store.writeStepWithRecord(running, started(1));
			// That release's upsert names no record column: the attempt it starts leaves the record as it was.
			state.storage.sql.exec(`INSERT INTO steps (key, name, kind, status, attempts, started_at, seq) VALUES ('do:s', 's', 'do', 'running', 2, 10, 1)
				ON CONFLICT (key) DO UPDATE SET status = excluded.status, attempts = excluded.attempts`);
			expect(kinds(store)).toEqual([['step.started', 1, 10, null]]);
		}));

	it("append each attempt's started record, a crash's retry of the same step included, and the completed record with its result", () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage, { schema });
			await migrate(db, migrations);
			const store = new DrizzleInstanceStore(db, state.storage);
			store.writeInstance(instanceRow);
			store.writeStepWithRecord(running, started(1));
			// The isolate died mid-step: the next pass starts attempt 2 over the row still marked started.
			store.writeStepWithRecord({ ...running, attempts: 2 }, started(2));
			store.writeStepWithRecord({ ...running, attempts: 2, status: 'completed', result: '42', finishedAt: 20 }, { generation: 0, at: 20, kind: 'step.completed', step: 's', attempt: 2, value: '42', detail: null });
			expect(kinds(store)).toEqual([
				['step.started', 1, 10, null],
				['step.started', 2, 10, null],
				['step.completed', 2, 20, '42'],
			]);
		}));

	it('still append the bare kind the release of drizzle/0007 writes', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage, { schema });
			await migrate(db, migrations);
			const store = new DrizzleInstanceStore(db, state.storage);
			store.writeInstance(instanceRow);
			state.storage.sql.exec(`INSERT INTO steps (key, name, kind, status, attempts, started_at, seq, record) VALUES ('do:s', 's', 'do', 'running', 1, 10, 1, 'step.started')`);
			expect(kinds(store)).toEqual([['step.started', 1, 10, null]]);
		}));
});
