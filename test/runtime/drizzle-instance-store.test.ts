import { runInDurableObject } from 'cloudflare:test';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { migrate } from 'drizzle-orm/durable-sqlite/migrator';
import { describe, expect, it } from 'vitest';
import migrations from '../../drizzle/migrations';
import { DrizzleInstanceStore } from '../../src/runtime/drizzle-instance-store';
import { ObjectStorage } from '../../src/runtime/object-storage';
import { stub, uniqueId } from '../helpers';
import { storeContract } from '../store-contract';

describe('DrizzleInstanceStore', () => {
	storeContract('drizzle', (fn) =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			await fn(new DrizzleInstanceStore(db, state.storage));
		}),
	);
	// A store told that its tables were just created answers its first reads without a query.
	storeContract('drizzle on a new object', (fn) =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			await fn(new DrizzleInstanceStore(db, state.storage, { empty: true }));
		}),
	);

	// An instance's new object: the tables created on their first write do not exist until the store writes them.
	storeContract('drizzle on a new instance object, without its first-write tables', (fn) =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const storage = new ObjectStorage(state.storage, 'instance');
			await storage.open();
			await storage.ensureSchema();
			await fn(new DrizzleInstanceStore(storage.db, state.storage, { empty: true, tables: storage.firstWrite }));
		}),
	);

	storeContract('drizzle with the outbox in the instance row', (fn) =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			await fn(new DrizzleInstanceStore(db, state.storage, { outboxInRow: true }));
		}),
	);

	// `switches`: the outbox goes between the table and the instance row now and then, as deploys that turn SHARDFLOW_OUTBOX_IN_ROW on and off do.
	it.each([
		['the outbox in its table', false, false],
		['the outbox in the instance row', true, false],
		['the outbox switching place', false, true],
	])('answers from what it kept (outbox, history tail, wake-ups, instance, steps, events) exactly what a store that kept nothing reads: %s', (_name, inRow, switches) =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			let outboxInRow = inRow;
			let store = new DrizzleInstanceStore(db, state.storage, { empty: true, outboxInRow });
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
					const n = random(5);
					const running = { key: `do:s${n}`, name: 's', kind: 'do' as const, status: 'running' as const, attempts: 1, result: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null, startedAt: 10, finishedAt: null, wakeAt: null, seq: n + 1, sensitive: false };
					store.writeStepWithRecord(running, { generation, at: 10, kind: 'step.started', step: 's', attempt: 1, value: null, detail: null });
					store.writeStepWithRecord({ ...running, status: 'completed', result: '"ok"', finishedAt: 11 }, { generation, at: 11, kind: 'step.completed', step: 's', attempt: 1, value: '"ok"', detail: null });
				},
				() => {
					// A new step that settled at once: its row stands for both its records.
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
				() => store.ackOutbox(version - random(2)),
				// A status change: the row and its entry in one transaction (one statement with the outbox in the row).
				() => store.transaction(() => {
					store.writeInstance(instanceRow());
					store.writeOutbox({ entry: entry(), attempts: 0, nextAttemptAt: 7 });
				}),
				() => store.deferOutbox(version - random(2), 1 + random(3), 50 + random(50)),
				() => store.markOutboxBacklogged(random(2) ? null : 3),
				() => {
					if (!switches) return;
					outboxInRow = !outboxInRow;
					store = new DrizzleInstanceStore(db, state.storage, { outboxInRow });
				},
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
				expect(reads(store, afterSeqs), `after operation ${i}`).toEqual(reads(new DrizzleInstanceStore(db, state.storage), afterSeqs));
			}
		}));
});

describe('the records a step row stands for (drizzle/0013)', () => {
	const instanceRow = {
		id: 'wf-1', type: 't', status: 'running' as const, payload: null, output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
		createdAt: 1, updatedAt: 1, version: 1, generation: 0, codeVersion: null, lastCodeVersion: null, rollback: null, historyBytes: 0, historySeq: 0, parentId: null,
	};
	const done = (name: string, seq: number) => ({
		key: `do:${name}`, name, kind: 'do' as const, status: 'completed' as const, attempts: 1, result: `"${name}!"`, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
		startedAt: 10 * seq, finishedAt: 10 * seq + 1, wakeAt: null, seq, sensitive: false,
	});
	const recordsOf = (row: ReturnType<typeof done>, generation = 0) => [
		{ generation, at: row.startedAt, kind: 'step.started' as const, step: row.name, attempt: 1, value: null, detail: null },
		{ generation, at: row.finishedAt, kind: 'step.completed' as const, step: row.name, attempt: 1, value: row.result, detail: null },
	];
	const rowsWritten = (state: DurableObjectState, fn: () => void) => {
		const exec = state.storage.sql.exec.bind(state.storage.sql);
		let rows = 0;
		const counting = (query: string, ...bindings: SqlStorageValue[]) => {
			const cursor = exec(query, ...bindings);
			cursors.push(cursor);
			return cursor;
		};
		const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
		Object.defineProperty(state.storage.sql, 'exec', { value: counting, configurable: true, writable: true });
		try {
			fn();
		} finally {
			Object.defineProperty(state.storage.sql, 'exec', { value: exec, configurable: true, writable: true });
		}
		for (const cursor of cursors) rows += cursor.rowsWritten;
		return rows;
	};

	it('writes 1 SQLite row for a step that settled at once, its history complete (the table has no index on key)', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			const store = new DrizzleInstanceStore(db, state.storage, { empty: true });
			store.writeInstance(instanceRow);
			const written = [1, 2, 3].map((seq) => rowsWritten(state, () => store.insertStep(done(`s${seq}`, seq), recordsOf(done(`s${seq}`, seq)))));
			expect(written).toEqual([1, 1, 1]);
			expect(store.readHistory({ generation: 0, afterSeq: 0, limit: 10 }).map((r) => [r.seq, r.kind, r.step, r.attempt, r.at, r.value])).toEqual([
				[1, 'step.started', 's1', 1, 10, null], [2, 'step.completed', 's1', 1, 11, '"s1!"'],
				[3, 'step.started', 's2', 1, 20, null], [4, 'step.completed', 's2', 1, 21, '"s2!"'],
				[5, 'step.started', 's3', 1, 30, null], [6, 'step.completed', 's3', 1, 31, '"s3!"'],
			]);
		}));

	it('takes an instance created before drizzle/0016 (steps indexed by key) on: the index goes, its running step completes in its own row', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage);
			const chain = migrations as unknown as { journal: { entries: { tag: string }[] }; migrations: Record<string, string> };
			const before = chain.journal.entries.findIndex((e) => e.tag.startsWith('0016_'));
			expect(before).toBeGreaterThan(0);
			await migrate(db, { journal: { entries: chain.journal.entries.slice(0, before) }, migrations: chain.migrations } as never);
			const indexes = () => state.storage.sql.exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'steps'`).toArray().map((r) => r.name);
			expect(indexes()).toEqual(['steps_key']);
			const old = new DrizzleInstanceStore(db, state.storage);
			old.writeInstance(instanceRow);
			old.writeStep({ ...done('slow', 1), status: 'running', result: null, finishedAt: null });
			await migrate(db, migrations);
			expect(indexes()).toEqual([]);
			const store = new DrizzleInstanceStore(db, state.storage);
			expect(rowsWritten(state, () => store.writeStep(done('slow', 1)))).toBe(1);
			store.insertStep(done('next', 2), recordsOf(done('next', 2)));
			expect(store.readSteps().map((r) => [r.seq, r.key, r.status, r.result])).toEqual([[1, 'do:slow', 'completed', '"slow!"'], [2, 'do:next', 'completed', '"next!"']]);
			expect(store.readStepResults([{ key: 'do:slow', seq: 1 }])).toEqual(new Map([['do:slow', '"slow!"']]));
		}));

	it('keeps the records of deleted steps in their generation, at their seqs, when a restart deletes or keeps steps', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			const store = new DrizzleInstanceStore(db, state.storage);
			store.writeInstance(instanceRow);
			store.insertStep(done('a', 1), recordsOf(done('a', 1)));
			store.appendHistory({ generation: 0, at: 15, kind: 'event.received', step: null, attempt: null, value: '1', detail: null });
			store.insertStep(done('b', 2), recordsOf(done('b', 2)));
			const before = store.readHistory({ generation: 0, afterSeq: 0, limit: 10 });
			expect(before.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
			store.keepStepsBefore(2);
			expect(store.readSteps().map((s) => s.key)).toEqual(['do:a']);
			store.writeInstance({ ...instanceRow, generation: 1 });
			store.insertStep(done('c', 2), recordsOf(done('c', 2), 1));
			expect(store.readHistory({ generation: 0, afterSeq: 0, limit: 10 })).toEqual(before);
			expect(store.readHistory({ generation: 1, afterSeq: 0, limit: 10 }).map((r) => [r.seq, r.kind, r.step])).toEqual([[6, 'step.started', 'c'], [7, 'step.completed', 'c']]);
			store.deleteSteps();
			expect(store.readHistory({ generation: 0, afterSeq: 0, limit: 10 })).toEqual(before);
			expect(new DrizzleInstanceStore(db, state.storage).readHistory({ generation: 1, afterSeq: 0, limit: 10 }).map((r) => r.seq)).toEqual([6, 7]);
			expect(new DrizzleInstanceStore(db, state.storage).historySize(0)).toEqual({ bytes: 1 + 3 * 4, lastSeq: 7 });
		}));

	it('keeps records in history rows for a row below another (so the rows\' records ascend with their seq) and pages them in order', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			const store = new DrizzleInstanceStore(db, state.storage);
			store.writeInstance(instanceRow);
			store.insertStep(done('b', 2), recordsOf(done('b', 2)));
			store.insertStep(done('a', 1), recordsOf(done('a', 1)));
			store.insertStep(done('c', 3), recordsOf(done('c', 3)));
			const count = (sql: string) => Number(state.storage.sql.exec(sql).one().n);
			expect([count('SELECT count(*) AS n FROM history'), count('SELECT count(*) AS n FROM steps WHERE record_seq IS NOT NULL')]).toEqual([2, 2]);
			const pages = [0, 2, 4].map((afterSeq) => store.readHistory({ generation: 0, afterSeq, limit: 2 }).map((r) => [r.seq, r.kind, r.step]));
			expect(pages).toEqual([
				[[1, 'step.started', 'b'], [2, 'step.completed', 'b']],
				[[3, 'step.started', 'a'], [4, 'step.completed', 'a']],
				[[5, 'step.started', 'c'], [6, 'step.completed', 'c']],
			]);
		}));

	it('keeps running an instance whose steps the previous schema wrote: their records stay in history, new ones follow them', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage);
			const before0013 = { ...migrations, journal: { ...migrations.journal, entries: migrations.journal.entries.filter((e) => e.tag < '0013') } };
			await migrate(db, before0013);
			// What the release of drizzle/0012 wrote: a completed step and a started one, their records by its triggers.
			state.storage.sql.exec(`INSERT INTO instance (id, type, status, created_at, updated_at, version) VALUES ('wf-1', 't', 'running', 1, 1, 1)`);
			state.storage.sql.exec(`INSERT INTO history (generation, at, kind) VALUES (0, 1, 'workflow.created')`);
			state.storage.sql.exec(`INSERT INTO steps (key, name, kind, status, attempts, started_at, seq, record) VALUES ('do:a', 'a', 'do', 'running', 1, 10, 1, 'step.started:1')`);
			state.storage.sql.exec(`UPDATE steps SET status = 'completed', result = '"a!"', finished_at = 11, record = 'step.completed:1' WHERE key = 'do:a'`);
			state.storage.sql.exec(`INSERT INTO steps (key, name, kind, status, attempts, started_at, seq, record) VALUES ('do:b', 'b', 'do', 'running', 1, 20, 2, 'step.started:1')`);
			await migrate(db, migrations);
			const store = new DrizzleInstanceStore(db, state.storage);
			expect(store.readSteps().map((s) => [s.key, s.seq, s.status, s.result])).toEqual([['do:a', 1, 'completed', '"a!"'], ['do:b', 2, 'running', null]]);
			store.writeStepWithRecord({ ...store.readStep('do:b')!, status: 'completed', result: '"b!"', finishedAt: 21 }, { generation: 0, at: 21, kind: 'step.completed', step: 'b', attempt: 1, value: '"b!"', detail: null });
			store.insertStep(done('c', 3), recordsOf(done('c', 3)));
			expect(store.readHistory({ generation: 0, afterSeq: 0, limit: 10 }).map((r) => [r.seq, r.kind, r.step ?? null])).toEqual([
				[1, 'workflow.created', null], [2, 'step.started', 'a'], [3, 'step.completed', 'a'], [4, 'step.started', 'b'],
				[5, 'step.completed', 'b'], [6, 'step.started', 'c'], [7, 'step.completed', 'c'],
			]);
		}));
});

describe('the outbox in the instance row (drizzle/0019)', () => {
	const row = (version: number) => ({
		id: 'wf-1', type: 't', status: 'running' as const, payload: null, output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
		createdAt: 1, updatedAt: 1, version, generation: 0, codeVersion: null, lastCodeVersion: null, rollback: null, historyBytes: 0, historySeq: 0, parentId: null,
	});
	const entry = (version: number) => ({ id: 'wf-1', type: 't', status: 'running' as const, createdAt: 1, updatedAt: 1, version });
	const rowsWritten = (state: DurableObjectState, fn: () => void) => {
		const exec = state.storage.sql.exec.bind(state.storage.sql);
		const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
		Object.defineProperty(state.storage.sql, 'exec', { value: (query: string, ...b: SqlStorageValue[]) => (cursors.push(exec(query, ...b)), cursors.at(-1)!), configurable: true, writable: true });
		try {
			fn();
		} finally {
			Object.defineProperty(state.storage.sql, 'exec', { value: exec, configurable: true, writable: true });
		}
		return cursors.reduce((rows, cursor) => rows + cursor.rowsWritten, 0);
	};
	const transition = (store: DrizzleInstanceStore, version: number) =>
		store.transaction(() => {
			store.writeInstance(row(version));
			store.writeOutbox({ entry: entry(version), attempts: 0, nextAttemptAt: 100 });
		});

	it('writes a status change and its pending index entry as 1 row, and its acknowledgement as 1', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			const store = new DrizzleInstanceStore(db, state.storage, { empty: true, outboxInRow: true });
			// The first one inserts the row: +1 for its TEXT key's index entry.
			expect([1, 2, 3].map((version) => rowsWritten(state, () => transition(store, version)))).toEqual([2, 1, 1]);
			expect(rowsWritten(state, () => store.ackOutbox(3))).toBe(1);
			// What a store that kept nothing reads: the row as written, nothing pending, no outbox table row.
			const fresh = new DrizzleInstanceStore(db, state.storage);
			expect(fresh.readInstance()).toMatchObject({ version: 3 });
			expect(fresh.readOutbox()).toBeUndefined();
			expect(state.storage.sql.exec('SELECT count(*) AS n FROM outbox').one().n).toBe(0);
		}));

	it('keeps the outbox table as builds before 0019 read it while SHARDFLOW_OUTBOX_IN_ROW is off (a rollback stays possible)', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			const store = new DrizzleInstanceStore(db, state.storage, { empty: true });
			expect([1, 2].map((version) => rowsWritten(state, () => transition(store, version)))).toEqual([3, 2]);
			expect(state.storage.sql.exec('SELECT version FROM outbox').toArray()).toEqual([{ version: 2 }]);
			expect(state.storage.sql.exec('SELECT pending FROM instance').one().pending).toBeNull();
		}));

	it('delivers an entry left in the outbox table after the outbox moves into the row, and one left in the row after it moves back', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			// Written by a build that keeps the outbox in its table (before 0019, or with the flag off), backing off.
			const inTable = new DrizzleInstanceStore(db, state.storage, { empty: true });
			transition(inTable, 5);
			inTable.deferOutbox(5, 2, 900);
			inTable.markOutboxBacklogged(40);
			const inRow = new DrizzleInstanceStore(db, state.storage, { outboxInRow: true });
			expect(inRow.readOutbox()).toEqual({ entry: entry(5), attempts: 2, nextAttemptAt: 900, backloggedSince: 40 });
			// A newer change goes into the row and supersedes the table's; its acknowledgement clears both.
			transition(inRow, 6);
			expect(new DrizzleInstanceStore(db, state.storage, { outboxInRow: true }).readOutbox()).toEqual({ entry: entry(6), attempts: 0, nextAttemptAt: 100, backloggedSince: 40 });
			inRow.ackOutbox(6);
			expect(new DrizzleInstanceStore(db, state.storage).readOutbox()).toBeUndefined();
			// Rolled back to a build with the flag off: the entry pending in the row is retried and acknowledged from there.
			transition(inRow, 7);
			expect(state.storage.sql.exec('SELECT count(*) AS n FROM outbox').one().n).toBe(0);
			const back = new DrizzleInstanceStore(db, state.storage);
			expect(back.readOutbox()).toMatchObject({ entry: entry(7) });
			back.deferOutbox(7, 1, 300);
			expect(new DrizzleInstanceStore(db, state.storage).readOutbox()).toMatchObject({ entry: entry(7), attempts: 1, nextAttemptAt: 300 });
			back.ackOutbox(7);
			expect(new DrizzleInstanceStore(db, state.storage).readOutbox()).toBeUndefined();
		}));
});
