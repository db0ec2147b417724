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
});

describe('the steps_record triggers (drizzle/0007)', () => {
	it('leave no record behind, so a write that does not set it (the previous release after a rollback) appends nothing', () =>
		runInDurableObject(stub(uniqueId('store')), async (_, state) => {
			const db = drizzle(state.storage, { schema });
			await migrate(db, migrations);
			const store = new DrizzleInstanceStore(db, state.storage);
			store.writeInstance({
				id: 'wf-1', type: 't', status: 'running', payload: null, output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
				createdAt: 1, updatedAt: 1, version: 1, generation: 0, codeVersion: null, lastCodeVersion: null, rollback: null, historyBytes: 0, historySeq: 0, parentId: null,
			});
			const running = { key: 'do:s', name: 's', kind: 'do' as const, status: 'running' as const, attempts: 1, result: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null, startedAt: 10, finishedAt: null, wakeAt: null, seq: 1 };
			store.writeStepWithRecord(running, { generation: 0, at: 10, kind: 'step.started', step: 's', attempt: 1, value: null, detail: null });
			expect([...state.storage.sql.exec('SELECT record FROM steps')]).toEqual([{ record: null }]);
			// The previous release's upsert names no record column.
			state.storage.sql.exec(`INSERT INTO steps (key, name, kind, status, attempts, started_at, seq) VALUES ('do:s', 's', 'do', 'running', 2, 10, 1)
				ON CONFLICT (key) DO UPDATE SET status = excluded.status, attempts = excluded.attempts`);
			expect(store.readHistory({ generation: 0, afterSeq: 0, limit: 10 }).map((r) => [r.kind, r.attempt, r.at])).toEqual([['step.started', 1, 10]]);
		}));
});
