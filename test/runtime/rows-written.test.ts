import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { migrate } from 'drizzle-orm/durable-sqlite/migrator';
import migrations from '../../drizzle/migrations';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { shardIndex } from '../../src/engine/index/shard';
import { shardName } from '../../src/engine/object-names';
import { IndexShardStore } from '../../src/runtime/index-shard-store';
import { advanceClock, fireAlarm, settle, stub, testEnv, uniqueId } from '../helpers';

/**
 * Rows written by a run's instance object, as Cloudflare bills them (docs/cost.md "What counts as a row written"):
 * SQL rows (schema statements included), key-value rows and alarm writes, counted by the bench's meter
 * (bench/sql-meter.ts) from before the object's storage is first used. Ids "layout-compact-…" / "layout-table-…"
 * take that layout whatever the Worker's setting (test/worker/index.ts).
 */
async function trivialRun(layout: 'compact' | 'table') {
	const id = uniqueId(`layout-${layout}`);
	await instances.create(testEnv, { type: 'many', id, payload: { steps: 10 } });
	await settle(id);
	expect((await instances.status(testEnv, { id })).status).toBe('completed');
	return runInDurableObject(stub(id), (runner, state) => ({
		...(runner as unknown as { rowsWritten(): { rows: number; alarms: number } }).rowsWritten(),
		tables: [...state.storage.sql.exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%'`)].map((t) => t.name),
	}));
}

describe('rows written by a run of ten trivial steps, per storage layout', () => {
	it('compact: no schema at all; the record at create, 1 row per step, the record at completion', async () => {
		const { rows, alarms, tables } = await trivialRun('compact');
		expect(tables).toEqual([]);
		// create (the record: row, pending entry, created record) 1 + 10 steps + completed (with its record and entry) 1; the
		// run ends before its index entry is delivered, so its `running` is never written (kernel.ts `startRunning`); the
		// delivery's acknowledgement rides with the record's next put, of which a finished run has none.
		expect(rows).toBe(12);
		// The backstop only: the retention is the index shard's (one alarm per slot for many runs).
		expect(alarms).toBe(1);
	});

	it('table: the schema (12 rows), 10 steps and the instance, outbox and history rows', async () => {
		const { rows, alarms, tables } = await trivialRun('table');
		expect(tables).toContain('__drizzle_migrations');
		// Its `running` not written either: the instance's update and the outbox's, 2 rows fewer.
		expect(rows).toBe(30);
		expect(alarms).toBe(2);
	});
});

/** Rows a compact run's instance object wrote, and the history record keys it holds (`h:`: a record nothing else stands for). */
async function compactRun(type: string, payload: unknown, drive: (id: string) => Promise<void> = async () => {}) {
	const id = uniqueId('layout-compact');
	await instances.create(testEnv, { type: type as never, id, payload: payload as never });
	await settle(id);
	await drive(id);
	expect((await instances.status(testEnv, { id })).status).toBe('completed');
	return runInDurableObject(stub(id), (runner, state) => ({
		...(runner as unknown as { rowsWritten(): { rows: number; alarms: number; byKey: Record<string, number> } }).rowsWritten(),
		recordKeys: [...state.storage.kv.list({ prefix: 'h:' })].length,
	}));
}

describe("a step's records ride in the step's own key (compact layout)", () => {
	it('steps that await I/O: their start, then their completion with its record, 2 rows a step and no record key', async () => {
		const { rows, recordKeys } = await compactRun('steps-child', { n: 10, ms: 1 });
		expect(recordKeys).toBe(0);
		// create 1 + 10 steps x (start, completion carrying step.completed) 2 + completed 1 (the run ends within the second a
		// delivery waits for it, so its `running` is never written: kernel.ts `beforeDelivery`). Before: each step.completed
		// took a key of its own, 10 more, and the running 1 (33).
		expect(rows).toBe(22);
	});

	it('a sleep: the step and its sleep.started, then the step and its sleep.finished, one put each', async () => {
		const { rows, alarms, recordKeys } = await compactRun('test', { name: 'rows' }, async (id) => {
			advanceClock(1_000);
			await fireAlarm(id);
		});
		expect(recordKeys).toBe(0);
		// create 1 + greet 1 + nap sleeping (carrying sleep.started and its wake-up) 1 + sleeping 1 (the first pass's
		// `running` not written: kernel.ts `startRunning`); the alarm's pass: nap completed (carrying sleep.finished, its
		// wake-up gone with it) 1 + completed 1 (its `running` held too: the compact layout's format 2). Before: each sleep
		// record was a put of the instance record of its own, 2 more, and the first pass's running 1 (12); the wake-up a
		// key of its own, put and deleted, and the woken pass's running (9).
		expect(rows).toBe(6);
		// Set: the backstop at create and the wake-up; the pass the alarm woke arms no watchdog and its outcome's entry no
		// retry alarm, since its alarm's handler awaits them and the runtime runs an alarm whose handler died again (format 2:
		// InstanceEngine.alarmAwaitingPass). Deleted: the test pool's, running the alarm. Before: the watchdog too (4).
		expect(alarms).toBe(3);
	});
});

/** The keys a compact run's instance object holds under `prefix` at the end. */
async function keysOf(id: string, prefix: string) {
	return runInDurableObject(stub(id), (_, state) => [...state.storage.kv.list({ prefix })].length);
}

describe("a step's wake-up rides in the step's own key (the compact layout's format 2, wrangler.jsonc)", () => {
	it('a sleep sets its wake-up with its step and clears it with its completion: no wake-up key, put or deleted', async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'test', id, payload: { name: 'rows' } });
		await settle(id);
		expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
		expect(await keysOf(id, 'w:')).toBe(0);
		// The alarm is the wake-up's: the step's key is the only place it is kept.
		advanceClock(1_000);
		await fireAlarm(id);
		expect((await instances.status(testEnv, { id })).status).toBe('completed');
	});

	it('a retried step keeps its retry time in its key: no wake-up key put or deleted', async () => {
		const { rows, alarms, byKey } = await compactRun('slow-retry', {}, async (id) => {
			expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
			advanceClock(10 * 60_000);
			await fireAlarm(id);
		});
		// create 1 + call's start 1 + call retrying (carrying step.attempt_failed and its wake-up) 1 + sleeping 1; the
		// alarm's pass: call's start 1 + call completed (its wake-up gone with it) 1 + completed 1. Before: the wake-up's
		// put and its delete at the end of the pass it woke, and that pass's running (10).
		expect({ rows, byKey }).toEqual({ rows: 7, byKey: { 'put i': 3, 'put s:': 4 } });
		// The backstop and the retry's wake-up, and the test pool's delete; not the woken pass's watchdog (its alarm's handler
		// awaits it). Before: 4.
		expect(alarms).toBe(3);
	});
});

describe('a pass woken by an alarm or an event holds its running in memory (the compact layout\'s format 2)', () => {
	it('an event wait: the pass the event wakes writes no running of its own', async () => {
		const { rows, byKey } = await compactRun('inbox', { expect: 1 }, async (id) => {
			expect((await instances.status(testEnv, { id })).status).toBe('waiting');
			await instances.sendEvent(testEnv, { id, event: 'msg', payload: { n: 7 } });
			await settle(id);
		});
		// create 1 + msg-0 waiting (carrying wait.started) 1 + waiting 1; the event: buffered 1 + the record (carrying
		// event.received) 1; its pass: msg-0 completed (carrying event.consumed) 1 + the event deleted 1 + completed 1.
		// Before: that pass's running 1 (9).
		expect({ rows, byKey }).toEqual({ rows: 8, byKey: { 'put i': 4, 'put s:': 2, 'put e:': 1, 'delete e:': 1 } });
	});
});

describe("rows written by a run's index delivery (its index shard)", () => {
	it('a finished trivial run: its entry and the 2 listing indexes, and no metrics row (the run is a mark on the entry, rolled up once a minute)', async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'many', id, payload: { steps: 10 } });
		await settle(id);
		// The entry as the run's delivery left it on its shard (one delivery: the run's transitions coalesced).
		const delivered = await runInDurableObject(stub(shardName('many', shardIndex(id, 16))), (_, state) =>
			state.storage.sql.exec<Record<string, SqlStorageValue>>('SELECT id, type, status, created_at, updated_at, version FROM index_entries WHERE id = ?', id).one(),
		);
		expect(delivered.status).toBe('completed');
		const entry: IndexEntry = {
			id, type: 'many', status: 'completed', createdAt: Number(delivered.created_at), updatedAt: Number(delivered.updated_at), version: Number(delivered.version),
		};
		// The same delivery into a shard whose rows are counted (a borrowed object, the shard's clock just after the run).
		const written = await runInDurableObject(stub(uniqueId('shard-rows')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			const shard = new IndexShardStore(db, state.storage, () => entry.updatedAt + 1_000);
			// A shard's first mark writes its rollup watermark (a key-value row, once in the shard's life): not this run's.
			shard.write([{ ...entry, id: `${id}-earlier` }]);
			const exec = state.storage.sql.exec.bind(state.storage.sql);
			const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
			Object.defineProperty(state.storage.sql, 'exec', { value: (q: string, ...b: SqlStorageValue[]) => (cursors.push(exec(q, ...b)), cursors.at(-1)!), configurable: true, writable: true });
			try {
				shard.write([entry]);
			} finally {
				Object.defineProperty(state.storage.sql, 'exec', { value: exec, configurable: true, writable: true });
			}
			return cursors.reduce((sum, cursor) => sum + cursor.rowsWritten, 0);
		});
		// Before the marks: 4 (the minute's metrics row upserted by every delivery that starts or finishes a run).
		expect(written).toBe(3);
	});
});
