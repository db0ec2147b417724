import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { ObjectStorage } from '../../src/runtime/object-storage';
import { DrizzleInstanceStore } from '../../src/runtime/drizzle-instance-store';
import { MAX_ROW_BYTES, SqlLimitError, limitedStorage } from '../../src/runtime/sql-limits';
import { stub, uniqueId } from '../helpers';

// What production's SQLite refuses is refused locally too: `wrangler dev` and the
// test runtime accept rows over 2 MB, so without this a write could pass every
// test and fail once deployed (docs/deploying.md "Production limits").
describe("every statement through an object's storage stays inside production's SQL limits", () => {
	const inObject = <T,>(fn: (sql: SqlStorage, state: DurableObjectState) => T | Promise<T>) =>
		runInDurableObject(stub(uniqueId('sql-limits')), (_instance, state) => fn(limitedStorage(state.storage).sql, state));

	it('refuses a statement with more than 100 bound parameters with a typed error, and runs one with 100', async () => {
		const outcome = await inObject((sql) => {
			const query = (n: number) => `SELECT ${Array.from({ length: n }, () => '?').join(' + ')} AS total`;
			const ok = sql.exec<{ total: number }>(query(100), ...Array(100).fill(1)).one().total;
			let refused: unknown;
			try {
				sql.exec(query(101), ...Array(101).fill(1));
			} catch (error) {
				refused = error;
			}
			return { ok, refused: refused instanceof SqlLimitError ? (refused as SqlLimitError).message : String(refused) };
		});
		expect(outcome.ok).toBe(100);
		expect(outcome.refused).toMatch(/binds 101 parameters; SQLite in Durable Objects allows 100/);
	});

	it('refuses a write of more than 2 MB, which the local runtime would store, and keeps the row as it was', async () => {
		const outcome = await inObject((sql) => {
			sql.exec('CREATE TABLE big (id INTEGER PRIMARY KEY, a TEXT, b TEXT)');
			sql.exec('INSERT INTO big (id, a, b) VALUES (1, ?, ?)', 'small', 'row');
			let refused = '';
			try {
				sql.exec('UPDATE big SET a = ?, b = ? WHERE id = 1', 'a'.repeat(1_100_000), 'b'.repeat(1_000_000));
			} catch (error) {
				refused = (error as Error).message;
			}
			const kept = sql.exec<{ a: string }>('SELECT a FROM big WHERE id = 1').one().a;
			sql.exec('UPDATE big SET a = ? WHERE id = 1', 'a'.repeat(MAX_ROW_BYTES - 100));
			return { refused, kept };
		});
		expect(outcome.refused).toMatch(/exceeds the 2000000 bytes a row holds in production/);
		expect(outcome.kept).toBe('small');
	});

	it("refuses, through the engine's own store, an instance row whose payload and output exceed 2 MB", async () => {
		const refused = await inObject(async (_sql, state) => {
			const storage = new ObjectStorage(state.storage);
			await storage.ensureSchema();
			const store = new DrizzleInstanceStore(storage.db, state.storage);
			const row = {
				id: 'big-row', type: 't', status: 'completed' as const, payload: JSON.stringify('p'.repeat(1_040_000)), output: JSON.stringify('o'.repeat(1_040_000)),
				errorName: null, errorMessage: null, errorStack: null, errorCode: null, createdAt: 1, updatedAt: 1, version: 1, generation: 0,
			};
			try {
				store.writeInstance(row);
				return 'written';
			} catch (error) {
				return error instanceof SqlLimitError ? 'refused' : String(error);
			}
		});
		expect(refused).toBe('refused');
	});
});
