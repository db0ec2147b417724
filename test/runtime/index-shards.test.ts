import { evictDurableObject, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { listPlan, listQuery } from '../../src/runtime/index-shard-store';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from '../../src/api/app';
import { IndexClient, routeIndexEntry } from '../../src/client/index-client';
import { instances } from '../../src/client/instance-client';
import { rebalance } from '../../src/client/rebalance';
import { KEYS_OBJECT as CURSOR_KEY_OBJECT, shardName } from '../../src/engine/object-names';
import { ErrorCode } from '../../src/engine/support/errors';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { defineRegistry } from '../../src/engine/definition/registry';
import { WORKFLOW_STATUSES, type WorkflowStatus } from '../../src/engine/support/statuses';
import { shardIndex } from '../../src/engine/index/shard';
import { Workflow } from '../../src/workflow';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId } from '../helpers';
import { testRegistry } from '../worker/index';
import { indexFaults } from '../worker/probes';
import { testClock } from '../worker/test-clock';

afterEach(() => {
	resetClock();
	indexFaults.failWrites = 0;
});

describe('index write path', () => {
	it('delivers the newest entry after the shard fails several times and the instance is evicted in between', async () => {
		const id = uniqueId('faulty');
		indexFaults.failWrites = 3;
		await instances.create(testEnv, { type: 'payment', id, payload: { amount: 9, currency: 'EUR' } });
		await settle(id);
		await evictDurableObject(stub(id));
		for (let i = 0; i < 10 && indexFaults.failWrites + 1 > 0; i++) {
			advanceClock(10 * 60_000);
			await fireAlarm(id);
			const versions = await stub(shardName('payment', shardIndex(id, 4))).indexVersions([id]);
			if (versions.ok && versions.value[id]) break;
		}
		expect(indexFaults.refused).toBeGreaterThanOrEqual(3);
		const status = await instances.status(testEnv, { id });
		const page = await new IndexClient(testEnv, testRegistry).list({ type: 'payment', status: ['waiting'], limit: 1000 });
		expect(page.items.find((e) => e.id === id)).toMatchObject({ status: 'waiting', version: status.version });
	});

	it('ignores an older version that arrives after a newer one', async () => {
		const shard = stub(shardName('payment', 0));
		const entry: IndexEntry = { id: 'late-1', type: 'payment', status: 'completed', createdAt: 1, updatedAt: 20, version: 5 };
		await shard.indexWrite([entry]);
		await shard.indexWrite([{ ...entry, status: 'running', updatedAt: 20, version: 4 }]);
		expect(await shard.indexList({ order: 'createdAt', limit: 10, status: ['running'] })).toEqual({ ok: true, value: [] });
		expect(await shard.indexVersions(['late-1'])).toEqual({ ok: true, value: { 'late-1': 5 } });
	});
});

class Resizable extends Workflow<{}, void> {
	static override readonly type = 'resizable';
	async run() {}
}
const layout = (shards: number, previousShards?: number) =>
	defineRegistry({ resizable: { workflow: Resizable, shards, ...(previousShards ? { previousShards } : {}) } });

async function seed(prefix: string, registry: ReturnType<typeof layout>, n: number, t0: number) {
	const entries: IndexEntry[] = [];
	for (let i = 0; i < n; i++) {
		const status: WorkflowStatus = i % 3 === 0 ? 'completed' : 'running';
		entries.push({ id: `${prefix}-${i}`, type: 'resizable', status, createdAt: t0, updatedAt: t0 + (i % 7), version: 2 });
	}
	await Promise.all(entries.map((e) => routeIndexEntry(testEnv, registry, e)));
	return entries;
}

async function listAll(client: IndexClient, query: Parameters<IndexClient['list']>[0]) {
	const seen: IndexEntry[] = [];
	let cursor: string | null = null;
	for (let page = 0; page < 100; page++) {
		const result = await client.list({ ...query, cursor });
		seen.push(...result.items);
		cursor = result.nextCursor;
		if (!cursor) break;
	}
	return seen;
}

async function rebalanceFully(registry: ReturnType<typeof layout>) {
	let cursor: string | null = null;
	let moved = 0;
	for (let i = 0; i < 100; i++) {
		const progress = await rebalance(testEnv, registry, 'resizable', { cursor, batchSize: 7 });
		moved += progress.moved;
		if (progress.done) return { ...progress, moved };
		cursor = progress.cursor;
	}
	throw new Error('rebalance did not finish');
}

describe.for([
	[4, 8],
	[8, 4],
] as const)('resizing from %i to %i shards', ([from, to]) => {
	it('never shows a stale status, pages each entry exactly once, and loses nothing after rebalance', async () => {
		const prefix = uniqueId(`r${from}to${to}`);
		const before = layout(from);
		const during = layout(to, from);
		const after = layout(to);
		const countsBefore = await new IndexClient(testEnv, before).counts('resizable');
		const entries = await seed(prefix, before, 60, 1_000_000);

		// Some running instances finish under the new layout.
		const finished = entries.filter((e) => e.status === 'running').slice(0, 15);
		await Promise.all(
			finished.map((e) => routeIndexEntry(testEnv, during, { ...e, status: 'completed', updatedAt: e.updatedAt + 100, version: 3 })),
		);
		const finishedIds = new Set(finished.map((e) => e.id));
		const expectRunning = entries.filter((e) => e.status === 'running' && !finishedIds.has(e.id)).map((e) => e.id).sort();
		const mine = (items: IndexEntry[]) => items.filter((e) => e.id.startsWith(`${prefix}-`));

		const reader = new IndexClient(testEnv, during);
		const running = mine(await listAll(reader, { type: 'resizable', status: ['running'], limit: 4 }));
		expect(running.map((e) => e.id).sort()).toEqual(expectRunning);
		const everything = mine(await listAll(reader, { type: 'resizable', limit: 5 }));
		expect(everything).toHaveLength(60);
		expect(new Set(everything.map((e) => e.id)).size).toBe(60);

		const progress = await rebalanceFully(during);
		expect(progress.canDropPreviousShards).toBe(true);
		expect(progress.moved).toBeGreaterThan(0);
		const again = await rebalanceFully(during);
		expect(again.moved).toBe(0);

		const final = new IndexClient(testEnv, after);
		const all = mine(await listAll(final, { type: 'resizable', limit: 9 }));
		expect(all).toHaveLength(60);
		expect(all.filter((e) => e.status === 'running').map((e) => e.id).sort()).toEqual(expectRunning);
		const counts = await final.counts('resizable');
		expect(counts.running - countsBefore.running).toBe(expectRunning.length);
		expect(counts.completed - countsBefore.completed).toBe(60 - expectRunning.length);
	});

	it('removes the move tombstones once a rebalance pass is done, and a late stale write to a shard an entry left never shows again', async () => {
		const prefix = uniqueId(`t${from}to${to}`);
		const during = layout(to, from);
		const entries = await seed(prefix, layout(from), 40, 2_000_000);
		// Running instances finish under the new layout: they tombstone their old shard themselves.
		const finished = entries.filter((e) => e.status === 'running').slice(0, 10);
		await Promise.all(finished.map((e) => routeIndexEntry(testEnv, during, { ...e, status: 'completed', updatedAt: e.updatedAt + 100, version: 3 })));
		const shardsRead = Math.max(from, to);
		expect(await moveTombstones(prefix, shardsRead)).toBeGreaterThan(0);

		const progress = await rebalanceFully(during);
		expect(progress.tombstonesRemoved.moved).toBeGreaterThan(0);
		expect(progress.tombstonesLeft).toBe(false);
		expect(await moveTombstones(prefix, shardsRead)).toBe(0);

		// A delivery of an older version that arrives late at the shard the entry left (an RPC that
		// timed out, an isolate of the old deploy): with the tombstone gone it lands, and stays hidden.
		const moved = finished.filter((e) => shardIndex(e.id, from) !== shardIndex(e.id, to));
		expect(moved.length).toBeGreaterThan(0);
		await Promise.all(moved.map((e) => stub(shardName('resizable', shardIndex(e.id, from))).indexWrite([e])));
		const mine = (items: IndexEntry[]) => items.filter((e) => e.id.startsWith(`${prefix}-`));
		for (const registry of [during, layout(to)]) {
			const reader = new IndexClient(testEnv, registry);
			const running = mine(await listAll(reader, { type: 'resizable', status: ['running'], limit: 6 })).map((e) => e.id);
			for (const e of moved) expect(running).not.toContain(e.id);
			const all = mine(await listAll(reader, { type: 'resizable', limit: 7 }));
			expect(all).toHaveLength(40);
			for (const e of moved) expect(all.find((x) => x.id === e.id)).toMatchObject({ status: 'completed', version: 3 });
		}
		// The stale copies would still be counted by `counts` (which sums shards as they are): remove them for the other tests.
		await Promise.all(
			moved.map((e) =>
				runInDurableObject(stub(shardName('resizable', shardIndex(e.id, from))), (_, state) => void state.storage.sql.exec('DELETE FROM index_entries WHERE id = ?', e.id)),
			),
		);
	});

	it('counts exactly the workflow statuses in GET /types, with numbers, after deletions and a resize (no tombstone status)', async () => {
		const prefix = uniqueId(`c${from}to${to}`);
		const during = layout(to, from);
		const typeCounts = async (registry: ReturnType<typeof layout>) => {
			const app = createApp(registry, { clock: testClock.now });
			const res = await app.fetch(new Request('http://shardflow.test/types'), env);
			expect(res.status).toBe(200);
			return ((await res.json()) as { types: { type: string; counts: Record<string, unknown> }[] }).types.find((t) => t.type === 'resizable')!.counts;
		};
		const countsBefore = await typeCounts(during); // every shard of both layouts: earlier tests left entries in each
		const entries = await seed(prefix, layout(from), 30, 4_000_000);
		// Deleted instances leave deletion tombstones, in both layouts' shards while resizing.
		const deleted = entries.filter((_, i) => i % 5 === 0);
		await Promise.all(deleted.map((e) => routeIndexEntry(testEnv, during, { ...e, version: 3, removed: true })));
		// Running instances that finish under the new layout leave move tombstones in their old shard.
		const finished = entries.filter((e, i) => e.status === 'running' && i % 5 !== 0).slice(0, 8);
		await Promise.all(finished.map((e) => routeIndexEntry(testEnv, during, { ...e, status: 'completed', updatedAt: e.updatedAt + 100, version: 3 })));
		expect(await moveTombstones(prefix, Math.max(from, to))).toBeGreaterThan(0);

		const kept = entries.filter((e) => !deleted.includes(e));
		const running = kept.filter((e) => e.status === 'running' && !finished.includes(e)).length;
		for (const registry of [during, 'rebalanced'] as const) {
			if (registry === 'rebalanced') await rebalanceFully(during);
			const counts = await typeCounts(registry === 'rebalanced' ? layout(to) : registry);
			expect(Object.keys(counts).sort()).toEqual([...WORKFLOW_STATUSES].sort());
			for (const n of Object.values(counts)) expect(n).toSatisfy(Number.isInteger);
			expect((counts.running as number) - (countsBefore.running as number)).toBe(running);
			expect((counts.completed as number) - (countsBefore.completed as number)).toBe(kept.length - running);
		}
	});
});

/** Move tombstones of ids with this prefix, over the first `shards` shards of the `resizable` type. */
describe('resizing with more entries than one statement may bind', () => {
	it('lists 300 finished instances of one shard in one page of 1000 while resizing to 2 shards', async () => {
		const prefix = uniqueId('big-resize');
		const entries = await seed(prefix, layout(1), 300, 5_000_000);
		const during = layout(2, 1);
		// A few new instances written under the new layout.
		const fresh: IndexEntry[] = Array.from({ length: 5 }, (_, i) => ({ id: `${prefix}-new-${i}`, type: 'resizable', status: 'running', createdAt: 5_000_100, updatedAt: 5_000_100, version: 1 }));
		await Promise.all(fresh.map((e) => routeIndexEntry(testEnv, during, e)));
		const page = await new IndexClient(testEnv, during).list({ type: 'resizable', limit: 1000 });
		const mine = page.items.filter((e) => e.id.startsWith(`${prefix}-`));
		expect(mine).toHaveLength(305);
		expect(new Set(mine.map((e) => e.id)).size).toBe(305);
		const overHttp = await createApp(during).fetch(new Request('http://x/workflows?type=resizable&limit=1000'), { ...testEnv, SHARDFLOW_ENV: 'development' } as never);
		expect(overHttp.status).toBe(200);
		expect(entries).toHaveLength(300);
	});

	it('tombstones 1000 entries in one call, and lists none of them after', async () => {
		const shard = stub(shardName('payment', 2));
		const entries: IndexEntry[] = Array.from({ length: 1000 }, (_, i) => ({ id: `tomb-${i}`, type: 'payment', status: 'completed', createdAt: 3, updatedAt: 4, version: 1 }));
		await shard.indexWrite(entries);
		expect((await shard.indexTombstone(entries.map((e) => ({ id: e.id, version: e.version + 1, createdAt: e.createdAt })))).ok).toBe(true);
		const versions = await shard.indexVersions(entries.map((e) => e.id));
		expect(versions).toEqual({ ok: true, value: {} });
	});

	it('answers the versions of 1000 ids from one shard', async () => {
		const shard = stub(shardName('payment', 1));
		const entries: IndexEntry[] = Array.from({ length: 1000 }, (_, i) => ({ id: `versions-${i}`, type: 'payment', status: 'completed', createdAt: 1, updatedAt: 2, version: i + 1 }));
		await shard.indexWrite(entries);
		const versions = await shard.indexVersions(entries.map((e) => e.id));
		expect(versions.ok && Object.keys(versions.value)).toHaveLength(1000);
		expect(versions.ok && versions.value['versions-999']).toBe(1000);
	});
});

async function moveTombstones(prefix: string, shards: number): Promise<number> {
	let total = 0;
	for (let n = 0; n < shards; n++) {
		total += await runInDurableObject(stub(shardName('resizable', n)), (_, state) => {
			try {
				return Number([...state.storage.sql.exec("SELECT count(*) AS n FROM index_entries WHERE status = '__moved' AND id LIKE ?", `${prefix}-%`)][0]!.n);
			} catch {
				return 0; // a shard never written has no table
			}
		});
	}
	return total;
}

describe('listing', () => {
	it.for([
		['createdAt', 5_000_000],
		['updatedAt', 6_000_000],
	] as const)('pages by keyset across shards in (%s desc, id desc) order, each entry once', async ([order, t0]) => {
		const prefix = uniqueId('page');
		const registry = layout(16);
		// createdAt is not unique: every entry shares one, so the order rests on the id tie-break.
		await seed(prefix, registry, 100, t0);
		const query = { type: 'resizable', order, limit: 7, createdAfter: t0 - 1, createdBefore: t0 + 1 };
		const all = (await listAll(new IndexClient(testEnv, registry), query)).filter((e) => e.id.startsWith(prefix));
		expect(all).toHaveLength(100);
		for (let i = 1; i < all.length; i++) {
			const [a, b] = [all[i - 1]!, all[i]!];
			expect(a[order] > b[order] || (a[order] === b[order] && a.id > b.id)).toBe(true);
		}
	});

	it('lists an entry with two copies once when a page ends between them (the stale copy in a lower shard)', async () => {
		const registry = layout(8, 4);
		const t0 = 3_000_000 + Math.floor(Math.random() * 1000);
		// An id whose shard under 4 shards comes before its owner under 8, so its stale copy sorts first.
		let id = uniqueId('pair');
		for (let i = 0; shardIndex(id, 8) < 4; i++) id = `${uniqueId('pair')}-${i}`;
		const entry: IndexEntry = { id, type: 'resizable', status: 'completed', createdAt: t0, updatedAt: t0 + 5, version: 3 };
		await stub(shardName('resizable', shardIndex(id, 8))).indexWrite([entry]);
		await stub(shardName('resizable', shardIndex(id, 4))).indexWrite([{ ...entry, status: 'running', updatedAt: t0 + 1, version: 2 }]);
		const seen = await listAll(new IndexClient(testEnv, registry), { type: 'resizable', limit: 1, createdAfter: t0 - 1, createdBefore: t0 + 1 });
		expect(seen).toEqual([entry]);
		await runInDurableObject(stub(shardName('resizable', shardIndex(id, 4))), (_, state) => void state.storage.sql.exec('DELETE FROM index_entries WHERE id = ?', id));
	});

	it.for([1, 4, 1000])('lists entries with copies in both layouts once, newest status, in updatedAt order too (pages of %i)', async (limit) => {
		const registry = layout(8, 4);
		const t0 = 7_000_000 + Math.floor(Math.random() * 100_000) * 100;
		const prefix = uniqueId('copies');
		const expected: IndexEntry[] = [];
		for (let i = 0; i < 30; i++) {
			const id = `${prefix}-${i}`;
			const entry: IndexEntry = { id, type: 'resizable', status: 'completed', createdAt: t0, updatedAt: t0 + 40 + i, version: 3 };
			await stub(shardName('resizable', shardIndex(id, 8))).indexWrite([entry]);
			// A stale copy left in its previous-layout shard sorts far from the current one in updatedAt order.
			if (i % 3 === 0 && shardIndex(id, 4) !== shardIndex(id, 8)) {
				await stub(shardName('resizable', shardIndex(id, 4))).indexWrite([{ ...entry, status: 'running', updatedAt: t0 + i, version: 2 }]);
			}
			expected.push(entry);
		}
		const client = new IndexClient(testEnv, registry);
		for (const order of ['updatedAt', 'createdAt'] as const) {
			const seen = await listAll(client, { type: 'resizable', order, limit, createdAfter: t0 - 1, createdBefore: t0 + 1 });
			expect([...seen].sort((a, b) => a.updatedAt - b.updatedAt)).toEqual(expected);
		}
		await Promise.all(
			Array.from({ length: 8 }, (_, n) =>
				runInDurableObject(stub(shardName('resizable', n)), (_, state) => {
					if (state.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'index_entries'").toArray().length) {
						state.storage.sql.exec('DELETE FROM index_entries WHERE id LIKE ?', `${prefix}-%`);
					}
				}),
			),
		);
	});

	it('refuses a cursor from another query and a limit out of range', async () => {
		const client = new IndexClient(testEnv, testRegistry);
		await expect(client.list({ type: 'payment', cursor: 'garbage' })).rejects.toMatchObject({ code: ErrorCode.InvalidCursor });
		await expect(client.list({ type: 'payment', limit: 0 })).rejects.toMatchObject({ code: ErrorCode.InvalidQuery });
		await expect(client.list({ type: 'payment', limit: 1001 })).rejects.toMatchObject({ code: ErrorCode.InvalidQuery });
	});

	it('counts instances per status across shards', async () => {
		const client = new IndexClient(testEnv, testRegistry);
		const before = await client.counts('payment');
		const id = uniqueId('counted');
		await instances.create(testEnv, { type: 'payment', id, payload: { amount: 1, currency: 'EUR' } });
		await settle(id);
		const after = await client.counts('payment');
		expect(after.waiting).toBe(before.waiting + 1);
	});
});

describe('shard queries', () => {
	it.for([
		['one status', { order: 'createdAt', limit: 50 }, 'running', 'status_created'],
		['one status after a cursor', { order: 'createdAt', limit: 50, after: { at: 100, id: 'x' } }, 'waiting', 'status_created'],
	] as const)('answer %s from the index of that order, never a scan and sort', async ([, query, status, index]) => {
		const shard = stub(shardName('payment', 0));
		await shard.indexWrite([{ id: 'plan-1', type: 'payment', status: 'running', createdAt: 1, updatedAt: 1, version: 1 }]);
		const plan = await runInDurableObject(shard, (_, state) => {
			const db = drizzle(state.storage);
			const { sql: text, params } = listQuery(db, query as never, status ? { status } : {}).toSQL();
			return state.storage.sql.exec(`EXPLAIN QUERY PLAN ${text}`, ...params).toArray().map((row) => String(row.detail));
		});
		expect(plan.join('\n')).toMatch(new RegExp(`USING (COVERING )?INDEX index_entries_${index}\\b`));
		expect(plan.join('\n')).not.toMatch(/TEMP B-TREE/);
	});

	it.for([
		['one status', { order: 'updatedAt', limit: 50 }, /\(status=\?\)/],
		['one status after a cursor (an entry updated by the cursor was created by it)', { order: 'updatedAt', limit: 50, after: { at: 100, id: 'x' } }, /\(status=\? AND created_at<\?\)/],
		['one status updated before a time (the stuck check: created before it too)', { order: 'updatedAt', limit: 50, updatedBefore: 100 }, /\(status=\? AND created_at<\?\)/],
	] as const)('answer %s by updatedAt as a backward walk of the (status, created_at, id) index in chunks, never a scan or a sort', async ([, query, range]) => {
		const shard = stub(shardName('payment', 0));
		await shard.indexWrite([{ id: 'plan-1', type: 'payment', status: 'running', createdAt: 1, updatedAt: 1, version: 1 }]);
		const plans = await runInDurableObject(shard, (_, state) => {
			const db = drizzle(state.storage);
			// The first chunk, and one further back (index-updated-listing.ts).
			return [undefined, { createdAt: 90, id: 'y' }].map((before) => {
				const { sql: text, params } = listQuery(db, query as never, { status: 'running' }, { before, size: 50 }).toSQL();
				return state.storage.sql.exec(`EXPLAIN QUERY PLAN ${text}`, ...params).toArray().map((row) => String(row.detail)).join('\n');
			});
		});
		// No index leads with updated_at (drizzle/0023): the walk is one status's entries, cut by the created_at bound.
		expect(plans[0]).toMatch(new RegExp(`USING INDEX index_entries_status_created ${range.source}`));
		expect(plans[1]).toMatch(/USING INDEX index_entries_status_created \(status=\? AND .*created_at/);
		for (const plan of plans) {
			expect(plan).not.toMatch(/TEMP B-TREE/);
			expect(plan).not.toMatch(/SCAN index_entries/);
		}
	});

	it.for(['createdAt', 'updatedAt'] as const)('answer every live status by %s as one walk of the status index per status, never a scan or a sort', async (order) => {
		const shard = stub(shardName('payment', 0));
		await shard.indexWrite([{ id: 'plan-1', type: 'payment', status: 'running', createdAt: 1, updatedAt: 1, version: 1 }]);
		const query = { order, limit: 50, after: { at: 100, id: 'x' } } as never;
		const plans = await runInDurableObject(shard, (_, state) => {
			const db = drizzle(state.storage);
			return listPlan(query).map((part) => {
				// updatedAt: the first chunk of each status's backward walk (index-updated-listing.ts).
				const { sql: text, params } = listQuery(db, query, part, order === 'updatedAt' ? { before: undefined, size: 50 } : undefined).toSQL();
				return state.storage.sql.exec(`EXPLAIN QUERY PLAN ${text}`, ...params).toArray().map((row) => String(row.detail)).join('\n');
			});
		});
		expect(plans).toHaveLength(WORKFLOW_STATUSES.length);
		for (const plan of plans) {
			expect(plan).toMatch(/USING (COVERING )?INDEX index_entries_status_created \(status=\?/);
			expect(plan).not.toMatch(/SCAN index_entries/);
			expect(plan).not.toMatch(/TEMP B-TREE/);
		}
	});

	it('writes a new entry as its row and its one listing index (2 rows: no id index, the table is keyed by its id; no updated_at index), a delivery that moves only updated_at as 1, a status change as 2', async () => {
		const shard = stub(shardName('payment', 0));
		const written = await runInDurableObject(shard, (_, state) => {
			const insert = state.storage.sql.exec(
				'INSERT INTO index_entries (id, type, status, created_at, updated_at, version) VALUES (?, ?, ?, ?, ?, ?)',
				'rows-written-1', 'payment', 'running', 3, 3, 1,
			).rowsWritten;
			// A later delivery of the same status moves its updated_at: the row alone (2 before drizzle/0023).
			const update = state.storage.sql.exec(
				"UPDATE index_entries SET updated_at = 4, version = 2 WHERE id = 'rows-written-1'",
			).rowsWritten;
			const status = state.storage.sql.exec(
				"UPDATE index_entries SET status = 'completed', updated_at = 5, version = 3 WHERE id = 'rows-written-1'",
			).rowsWritten;
			return { insert, update, status };
		});
		expect(written).toEqual({ insert: 2, update: 1, status: 2 });
	});

	it("answer a parent's children from the parent index, never a scan and sort; an entry without a parent writes no row of that index", async () => {
		const shard = stub(shardName('payment', 0));
		await shard.indexWrite([
			{ id: 'plan-root', type: 'payment', status: 'running', createdAt: 1, updatedAt: 1, version: 1 },
			{ id: 'plan-child', type: 'payment', status: 'running', createdAt: 2, updatedAt: 2, version: 1, parentId: 'plan-root' },
		]);
		const { plan, written } = await runInDurableObject(shard, (_, state) => {
			const db = drizzle(state.storage);
			const { sql: text, params } = listQuery(db, { order: 'createdAt', limit: 50, parent: 'plan-root' } as never, {}).toSQL();
			return {
				plan: state.storage.sql.exec(`EXPLAIN QUERY PLAN ${text}`, ...params).toArray().map((row) => String(row.detail)),
				// Rows an entry's insert writes (each billed): an entry without a parent writes no row of the parent index.
				written: Object.fromEntries(
					(['root', 'child'] as const).map((kind) => [
						kind,
						state.storage.sql.exec(
							'INSERT INTO index_entries (id, type, status, created_at, updated_at, version, parent_id) VALUES (?, ?, ?, ?, ?, ?, ?)',
							`plan-written-${kind}`, 'payment', 'running', 3, 3, 1, kind === 'child' ? 'plan-root' : null,
						).rowsWritten,
					]),
				),
			};
		});
		expect(plan.join('\n')).toMatch(/USING (COVERING )?INDEX index_entries_parent_created\b/);
		expect(plan.join('\n')).not.toMatch(/TEMP B-TREE/);
		expect(written.child).toBe(written.root! + 1);
	});
});

describe('paging over a changing set', () => {
	it('lists every instance that existed before the walk exactly once while statuses change under it', async () => {
		const createdAfter = Date.now() - 1;
		const prefix = uniqueId('walk');
		const ids = Array.from({ length: 60 }, (_, i) => `${prefix}-${String(i).padStart(2, '0')}`);
		for (let i = 0; i < ids.length; i += 20) {
			await Promise.all(ids.slice(i, i + 20).map((id) => instances.create(testEnv, { type: 'payment', id, payload: { amount: 1, currency: 'EUR' } })));
		}
		await Promise.all(ids.map(settle));
		const client = new IndexClient(testEnv, testRegistry);
		const seen: string[] = [];
		const approved = new Set<string>();
		let cursor: string | null = null;
		let changed = 0;
		for (let page = 0; page < 50; page++) {
			const result = await client.list({ type: 'payment', limit: 10, createdAfter, cursor });
			seen.push(...result.items.map((e) => e.id).filter((id) => id.startsWith(`${prefix}-`)));
			cursor = result.nextCursor;
			if (!cursor) break;
			// Change instances the walk has not reached yet: approve some (waiting -> completed), restart earlier approved ones.
			const unseen = ids.filter((id) => !seen.includes(id));
			const approve = unseen.filter((id) => !approved.has(id)).slice(-3);
			const restart = unseen.filter((id) => approved.has(id)).slice(0, 2);
			await Promise.all(approve.map((id) => instances.sendEvent(testEnv, { id, event: 'approval', payload: { approved: true, reviewer: 'walk' } })));
			await Promise.all(approve.map(settle));
			for (const id of approve) approved.add(id);
			await Promise.all(restart.map((id) => instances.restart(testEnv, { id })));
			await Promise.all(restart.map(settle));
			changed += approve.length + restart.length;
		}
		expect(changed).toBeGreaterThan(10);
		expect([...seen].sort()).toEqual(ids);
	});

	it('lists every instance exactly once while three concurrent writers approve and restart the ones not yet listed', async () => {
		const createdAfter = Date.now() - 1;
		const prefix = uniqueId('race');
		const ids = Array.from({ length: 60 }, (_, i) => `${prefix}-${String(i).padStart(2, '0')}`);
		for (let i = 0; i < ids.length; i += 30) {
			await Promise.all(ids.slice(i, i + 30).map((id) => instances.create(testEnv, { type: 'payment', id, payload: { amount: 1, currency: 'EUR' } })));
		}
		await Promise.all(ids.map(settle));
		const seen: string[] = [];
		const state = new Map(ids.map((id) => [id, 'waiting' as 'waiting' | 'completed' | 'busy']));
		let walking = true;
		let writes = 0;
		const writer = async (n: number) => {
			for (let turn = 0; walking; turn++) {
				const unseen = ids.filter((id) => !seen.includes(id) && state.get(id) !== 'busy');
				const id = unseen[(turn * 7 + n * 13) % Math.max(unseen.length, 1)];
				if (!id) break;
				const before = state.get(id)!;
				state.set(id, 'busy');
				if (before === 'waiting') await instances.sendEvent(testEnv, { id, event: 'approval', payload: { approved: true, reviewer: `w${n}` } });
				else await instances.restart(testEnv, { id });
				await settle(id);
				state.set(id, before === 'waiting' ? 'completed' : 'waiting');
				writes++;
			}
		};
		const walk = async () => {
			const client = new IndexClient(testEnv, testRegistry);
			let cursor: string | null = null;
			try {
				for (let page = 0; page < 100; page++) {
					const result = await client.list({ type: 'payment', limit: 10, createdAfter, cursor });
					seen.push(...result.items.map((e) => e.id).filter((id) => id.startsWith(`${prefix}-`)));
					cursor = result.nextCursor;
					if (!cursor) return;
					await new Promise((resolve) => setTimeout(resolve, 40)); // let the writers overtake the walk
				}
			} finally {
				walking = false;
			}
		};
		await Promise.all([walk(), writer(0), writer(1), writer(2)]);
		expect(writes).toBeGreaterThan(10);
		expect([...seen].sort()).toEqual(ids);
	});
});

describe('cursor key', () => {
	it('is generated once in the __keys object and stays the same across evictions', async () => {
		const keys = stub(CURSOR_KEY_OBJECT);
		const first = await keys.cursorSecret();
		expect(first).toMatchObject({ ok: true, value: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
		await evictDurableObject(keys);
		expect(await keys.cursorSecret()).toEqual(first);
	});

	it('is kept only by __keys: other objects refuse to hand one out, and __keys refuses workflow and index calls', async () => {
		const wrongRole = { ok: false, error: { code: ErrorCode.WrongRole } };
		expect(await stub(shardName('payment', 0)).cursorSecret()).toMatchObject(wrongRole);
		expect(await stub(CURSOR_KEY_OBJECT).describe()).toMatchObject(wrongRole);
		expect(await stub(CURSOR_KEY_OBJECT).indexCounts()).toMatchObject(wrongRole);
	});
});
