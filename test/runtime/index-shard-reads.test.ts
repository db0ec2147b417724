import { runInDurableObject } from 'cloudflare:test';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { migrate } from 'drizzle-orm/durable-sqlite/migrator';
import { describe, expect, it } from 'vitest';
import migrations from '../../drizzle/migrations';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { DELETED, IndexShardStore } from '../../src/runtime/index-shard-store';
import { stub, uniqueId } from '../helpers';

/**
 * What the index shard reads on its hot paths now that no index leads with `updated_at` (drizzle/0023):
 * each statement's rows read and its query plan, as SQLite reports them on a borrowed object. A plan with
 * `SCAN index_entries` reads every entry of the shard.
 */

const M = 29_600_000; // a minute number (2026)
const at = (minute: number, seconds: number) => minute * 60_000 + seconds * 1000;

interface Statement {
	query: string;
	bindings: SqlStorageValue[];
	rowsRead: number;
	rowsWritten: number;
}

async function shardOn(state: DurableObjectState, clock: { now: number }) {
	const db = drizzle(state.storage);
	await migrate(db, migrations);
	const open = () => new IndexShardStore(db, state.storage, () => clock.now);
	/** The statements `fn` ran, with what each read and wrote. */
	const traced = <T>(fn: () => T): { value: T; statements: Statement[]; rowsRead: number } => {
		const exec = state.storage.sql.exec.bind(state.storage.sql);
		const ran: { query: string; bindings: SqlStorageValue[]; cursor: SqlStorageCursor<Record<string, SqlStorageValue>> }[] = [];
		const tracing = (query: string, ...bindings: SqlStorageValue[]) => {
			const cursor = exec(query, ...bindings);
			ran.push({ query, bindings, cursor });
			return cursor;
		};
		Object.defineProperty(state.storage.sql, 'exec', { value: tracing, configurable: true, writable: true });
		let value: T;
		try {
			value = fn();
		} finally {
			Object.defineProperty(state.storage.sql, 'exec', { value: exec, configurable: true, writable: true });
		}
		const statements = ran.map(({ query, bindings, cursor }) => ({ query, bindings, rowsRead: cursor.rowsRead, rowsWritten: cursor.rowsWritten }));
		return { value, statements, rowsRead: statements.reduce((sum, s) => sum + s.rowsRead, 0) };
	};
	/** The query plan of each statement, one string each. */
	const plans = (statements: Statement[]) =>
		statements
			.filter((s) => /^\s*(select|insert|update|delete|with)/i.test(s.query))
			.map((s) => state.storage.sql.exec(`EXPLAIN QUERY PLAN ${s.query}`, ...s.bindings).toArray().map((row) => String(row.detail)).join('\n'));
	return { open, traced, plans };
}

/** A short run's one delivery: created, running and completed coalesced (it counts a start and a finish). */
const run = (id: string, createdAt: number, updatedAt = createdAt + 1000, status: IndexEntry['status'] = 'completed'): IndexEntry => ({
	id, type: 'payment', status, createdAt, updatedAt, version: 3,
});

describe('index shard reads without an index on updated_at', () => {
	it('a delivery reads its entry by id and writes it, and the rollup after it reads only the entries this object marked: no scan of the shard', () =>
		runInDurableObject(stub(uniqueId('reads-delivery')), async (_, state) => {
			const clock = { now: at(M, 5) };
			const { open, traced, plans } = await shardOn(state, clock);
			const store = open();
			store.write(Array.from({ length: 300 }, (_, i) => run(`old-${i}`, at(M, 0) + i)));
			clock.now = at(M + 2, 0);
			expect(store.rollUpMetrics()).toBe(true);
			// Two runs a minute later: one delivery each, the second a status change of a sleeping run.
			clock.now = at(M + 2, 5);
			store.write([run('sleeper', at(M + 2, 1), at(M + 2, 2), 'sleeping')]);
			const delivery = traced(() => store.write([{ ...run('sleeper', at(M + 2, 1), at(M + 2, 4)), version: 4 }]));
			expect(plans(delivery.statements).join('\n')).not.toMatch(/SCAN index_entries/);
			expect(delivery.statements.reduce((sum, s) => sum + s.rowsWritten, 0)).toBe(2);
			clock.now = at(M + 4, 0);
			const rollup = traced(() => store.rollUpMetrics());
			expect(rollup.value).toBe(true);
			expect(plans(rollup.statements).join('\n')).not.toMatch(/SCAN index_entries/);
			// The sleeper's row (by id), and the minute row it adds to; not the 300 entries rolled up before.
			expect(rollup.rowsRead).toBeLessThan(10);
			// A minute with no delivery: the rollup knows in memory it has nothing to read, and runs no statement.
			clock.now = at(M + 5, 0);
			expect(traced(() => store.rollUpMetrics()).statements).toEqual([]);
			expect(store.metrics.read(clock.now).day).toEqual({ started: 301, completed: 301, errored: 0, terminated: 0 });
		}));

	it('a shard object that starts again scans its entries once for the marks its previous life left, then reads only what it marks', () =>
		runInDurableObject(stub(uniqueId('reads-restart')), async (_, state) => {
			const clock = { now: at(M, 5) };
			const { open, traced, plans } = await shardOn(state, clock);
			open().write(Array.from({ length: 300 }, (_, i) => run(`before-${i}`, at(M, 0) + i)));
			// The object starts again before its rollup: only a scan can find the marks its previous life wrote.
			const restarted = open();
			clock.now = at(M + 2, 0);
			const first = traced(() => restarted.rollUpMetrics());
			expect(first.value).toBe(true);
			expect(plans(first.statements).join('\n')).toMatch(/SCAN index_entries/);
			expect(first.rowsRead).toBeGreaterThanOrEqual(300);
			restarted.write([run('after', at(M + 2, 1))]);
			clock.now = at(M + 4, 0);
			const next = traced(() => restarted.rollUpMetrics());
			expect(next.value).toBe(true);
			expect(plans(next.statements).join('\n')).not.toMatch(/SCAN index_entries/);
			expect(next.rowsRead).toBeLessThan(10);
			expect(restarted.metrics.read(clock.now).day).toEqual({ started: 301, completed: 301, errored: 0, terminated: 0 });
		}));

	it("the retention finds a status's oldest update and its due entries by walking only the entries created before them", () =>
		runInDurableObject(stub(uniqueId('reads-retention')), async (_, state) => {
			const clock = { now: at(M + 10, 0) };
			const { open, traced, plans } = await shardOn(state, clock);
			const store = open();
			// A run created first that finished last (a week asleep), then 1,000 short runs a second apart.
			store.write([run('long', at(M - 10_080, 0), at(M + 9, 0)), ...Array.from({ length: 1000 }, (_, i) => run(`short-${i}`, at(M, 0) + i * 1000))]);
			const oldest = traced(() => store.oldestUpdated('completed'));
			expect(oldest.value).toBe(at(M, 0) + 1000);
			expect(plans(oldest.statements).join('\n')).not.toMatch(/SCAN index_entries/);
			expect(oldest.rowsRead).toBeLessThan(30);
			// Due: the runs last changed by the 50th short run's end; the long one (created before) is read and passed over.
			const due = traced(() => store.updatedBy('completed', at(M, 0) + 50_000, 100));
			expect(due.value.map((e) => e.id).sort()).toEqual(Array.from({ length: 50 }, (_, i) => `short-${i}`).sort());
			expect(plans(due.statements).join('\n')).not.toMatch(/SCAN index_entries/);
			// The 52 entries created by then (an index entry and its row each) and the 50 due read by id: not the shard's 1,001.
			expect(due.rowsRead).toBeLessThan(250);
		}));

	it('a removal collects expired deletion tombstones reading at most its budget, going on where the last one stopped', () =>
		runInDurableObject(stub(uniqueId('reads-tombstones')), async (_, state) => {
			const clock = { now: at(M, 0) };
			const { open, traced, plans } = await shardOn(state, clock);
			const store = open();
			store.write(Array.from({ length: 1200 }, (_, i) => run(`gone-${i}`, at(M - 100, 0) + i)));
			// Deleted in two waves: the first 600 long ago (past their grace), the rest just now.
			store.tombstone(Array.from({ length: 600 }, (_, i) => ({ id: `gone-${i}`, version: 4, createdAt: at(M - 100, 0) + i })), DELETED, at(M - 50, 0));
			store.tombstone(Array.from({ length: 600 }, (_, i) => ({ id: `gone-${600 + i}`, version: 4, createdAt: at(M - 100, 0) + 600 + i })), DELETED, at(M, 0));
			const collected: number[] = [];
			for (let call = 0; call < 4; call++) {
				const one = traced(() => store.collectDeleted(at(M - 10, 0), 100, 512));
				expect(plans(one.statements).join('\n')).not.toMatch(/SCAN index_entries|INDEX index_entries_status_created \(status=\?\)$/m);
				// The walk's rows (each an index entry and its row) and the 100 deleted by id; not the 1,200 tombstones.
				expect(one.rowsRead).toBeLessThan(2 * 256 + 2 * 100 + 50);
				collected.push(one.value.removed);
			}
			expect(collected).toEqual([100, 100, 100, 100]);
			// The rest, unbudgeted (a rebalance's collection): every expired one, none of the recent.
			expect(store.collectDeleted(at(M - 10, 0), 1000)).toEqual({ removed: 200, more: false });
			expect(state.storage.sql.exec(`SELECT count(*) AS n FROM index_entries WHERE status = '${DELETED}'`).one().n).toBe(600);
		}));
});
