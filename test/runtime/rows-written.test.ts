import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { settle, stub, testEnv, uniqueId } from '../helpers';

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
	it('compact: no schema at all; the record at create, 1 row per step, the record at each status change', async () => {
		const { rows, alarms, tables } = await trivialRun('compact');
		expect(tables).toEqual([]);
		// create (the record: row, pending entry, created record) 1 + 10 steps + running 1 + completed (with its record and
		// entry) 1; the delivery's acknowledgement rides with the record's next put, of which a finished run has none.
		expect(rows).toBe(13);
		// The backstop only: the retention is the index shard's (one alarm per slot for many runs).
		expect(alarms).toBe(1);
	});

	it('table: the schema (12 rows), 10 steps and the instance, outbox and history rows', async () => {
		const { rows, alarms, tables } = await trivialRun('table');
		expect(tables).toContain('__drizzle_migrations');
		expect(rows).toBe(32);
		expect(alarms).toBe(2);
	});
});
