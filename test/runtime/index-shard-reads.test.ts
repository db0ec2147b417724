import { runInDurableObject } from 'cloudflare:test';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { migrate } from 'drizzle-orm/durable-sqlite/migrator';
import { describe, expect, it } from 'vitest';
import migrations from '../../drizzle/migrations';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import type { ShardListQuery } from '../../src/engine/index/index-query';
import { DELETED, IndexShardStore } from '../../src/runtime/index-shard-store';
import { newestUpdated } from '../../src/runtime/index-updated-listing';
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

	it('a page in updatedAt order reads the entries created within the longest age of its status; one entry that stood a week makes it read them all, and it stays exact', () =>
		runInDurableObject(stub(uniqueId('reads-updated-order')), async (_, state) => {
			const clock = { now: at(M + 30, 0) };
			const { open, traced, plans } = await shardOn(state, clock);
			const store = open();
			// 1,000 short runs a second apart, each finished a second after it started.
			store.write(Array.from({ length: 1000 }, (_, i) => run(`short-${String(i).padStart(4, '0')}`, at(M, 0) + i * 1000)));
			const query: ShardListQuery = { order: 'updatedAt', limit: 50, status: ['completed'] };
			const newest = (ids: string[]) => ids.slice(0, 50);
			const byUpdate = () =>
				state.storage.sql
					.exec<{ id: string }>(`SELECT id FROM index_entries WHERE status = 'completed' ORDER BY updated_at DESC, id DESC`)
					.toArray()
					.map((row) => row.id);
			// The first page in this order of the object's life learns the ages (one scan), the next reads a page's worth.
			store.list(query);
			const page = traced(() => store.list(query));
			expect(page.value.map((e) => e.id)).toEqual(newest(byUpdate()));
			expect(plans(page.statements).join('\n')).not.toMatch(/SCAN index_entries|TEMP B-TREE/);
			// A page and its margin, not the 1,000 entries.
			expect(page.rowsRead).toBeLessThan(2 * (50 + 32) + 10);
			// A page further on, after a cursor.
			const after = { at: page.value.at(-1)!.updatedAt, id: page.value.at(-1)!.id };
			const next = traced(() => store.list({ ...query, after }));
			expect(next.value.map((e) => e.id)).toEqual(byUpdate().slice(50, 100));
			expect(next.rowsRead).toBeLessThan(2 * (50 + 32) + 10);
			// A run created a week before that finished after all of them: the newest update, found only by reading every entry.
			store.write([run('long', at(M - 10_080, 0), at(M, 0) + 1_000_500)]);
			const withLong = traced(() => store.list(query));
			expect(withLong.value.map((e) => e.id)).toEqual(newest(byUpdate()));
			expect(withLong.value[0]!.id).toBe('long');
			expect(withLong.rowsRead).toBeGreaterThan(1000);
		}));

	it('the stuck check (running, updated before a threshold, in updatedAt order) reads only the running entries created before it: no scan', () =>
		runInDurableObject(stub(uniqueId('reads-stuck')), async (_, state) => {
			const clock = { now: at(M + 120, 0) };
			const { open, traced, plans } = await shardOn(state, clock);
			open().write([
				...Array.from({ length: 1000 }, (_, i) => run(`done-${i}`, at(M, 0) + i * 1000)),
				...Array.from({ length: 5 }, (_, i) => run(`busy-${i}`, at(M, 0) + i * 60_000, at(M, 0) + i * 60_000 + 500, 'running')),
			]);
			// A shard object that just started: its first page in this order ends in its first chunk, so it learns no ages.
			const stuck = traced(() => open().list({ order: 'updatedAt', status: ['running'], updatedBefore: at(M + 3, 0), limit: 1000 }));
			expect(stuck.value.map((e) => e.id)).toEqual(['busy-2', 'busy-1', 'busy-0']);
			expect(plans(stuck.statements).join('\n')).not.toMatch(/SCAN index_entries/);
			expect(stuck.rowsRead).toBeLessThan(20);
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

describe('a page in updatedAt order from a backward walk by creation (newestUpdated)', () => {
	/** `n` rows created 0-9 ms apart, each standing up to `longest` ms, walked as the shard's statements would. */
	const rowsOf = (n: number, longest: number, seed: number) => {
		let x = seed;
		const next = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32);
		let at = 1_000_000;
		return Array.from({ length: n }, (_, i) => {
			at += Math.floor(next() * 10);
			return { id: `r-${i}`, createdAt: at, updatedAt: at + Math.floor(next() * longest) };
		});
	};
	const byCreation = (a: { createdAt: number; id: string }, b: { createdAt: number; id: string }) => (a.createdAt !== b.createdAt ? b.createdAt - a.createdAt : a.id < b.id ? 1 : -1);
	const byUpdate = (a: { updatedAt: number; id: string }, b: { updatedAt: number; id: string }) => (a.updatedAt !== b.updatedAt ? b.updatedAt - a.updatedAt : a.id < b.id ? 1 : -1);

	it.for([
		[200, 5, 1],
		[200, 5_000, 2],
		[6_000, 20, 3],
		[6_000, 1_000_000, 4],
		[9_000, 300, 5],
	] as const)('gives the same page as a sort of every row (%i rows standing up to %i ms)', ([n, longest, seed]) => {
		const rows = rowsOf(n, longest, seed);
		const walked = [...rows].sort(byCreation);
		const maxAge = Math.max(...rows.map((r) => r.updatedAt - r.createdAt));
		for (const limit of [1, 7, 50, 1000]) {
			let read = 0;
			const walk = (before: { createdAt: number; id: string } | undefined, size?: number) => {
				const rest = before ? walked.filter((r) => byCreation(r, before) > 0) : walked;
				const answer = size === undefined ? [...rest].sort(byUpdate).slice(0, limit) : rest.slice(0, size);
				read += size === undefined ? rest.length : answer.length;
				return answer;
			};
			const page = newestUpdated(walk, limit, () => maxAge);
			expect(page).toEqual([...rows].sort(byUpdate).slice(0, limit));
			// Short ages: a page and a few chunks; never more than the rows there are.
			if (longest <= 20 && limit <= 50) expect(read).toBeLessThan(limit + 400);
			expect(read).toBeLessThanOrEqual(n);
		}
	});
});
