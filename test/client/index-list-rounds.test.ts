import { describe, expect, it } from 'vitest';
import { IndexClient, type ListQuery } from '../../src/client/index-client';
import type { ShardflowEnv } from '../../src/client/instance-client';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { compareIn, type ShardListQuery } from '../../src/engine/index/index-query';
import { defineIndexLayout } from '../../src/engine/definition/registry';
import { shardIndex } from '../../src/engine/index/shard';
import { INDEX_PREFIX } from '../../src/engine/object-names';

/**
 * Index shards in memory behind the shard RPC (`indexList`, `indexVersions`), counting every
 * row a listing asks for and gets. The shard list follows the SQL one (src/runtime/index-shard-store.ts
 * `listQuery`): status and time filters, rows strictly after `after`, newest first, at most `limit`.
 */
function memoryShards() {
	const shards = new Map<string, Map<string, IndexEntry>>();
	const seen = { calls: 0, requested: 0, returned: 0, callsPerShard: new Map<string, number>() };
	const shard = (name: string) => {
		let rows = shards.get(name);
		if (!rows) shards.set(name, (rows = new Map()));
		return rows;
	};
	const rpc = (name: string) => ({
		indexList: async (query: ShardListQuery) => {
			seen.calls++;
			seen.requested += query.limit;
			seen.callsPerShard.set(name, (seen.callsPerShard.get(name) ?? 0) + 1);
			const key = query.order as 'createdAt' | 'updatedAt';
			const after = query.after;
			const rows = [...shard(name).values()]
				.filter((e) => !query.status?.length || query.status.includes(e.status))
				.filter((e) => query.createdAfter === undefined || e.createdAt > query.createdAfter)
				.filter((e) => query.createdBefore === undefined || e.createdAt < query.createdBefore)
				.filter((e) => !after || e[key] < after.at || (e[key] === after.at && e.id < after.id))
				.sort(compareIn(query.order))
				.slice(0, query.limit);
			await new Promise((resolve) => setTimeout(resolve, 0));
			seen.returned += rows.length;
			return { ok: true, value: rows.map((e) => ({ ...e })) };
		},
		indexVersions: async (ids: string[]) => ({
			ok: true,
			value: Object.fromEntries(ids.flatMap((id) => (shard(name).has(id) ? [[id, shard(name).get(id)!.version]] : []))),
		}),
	});
	const env = { CURSOR_SECRET: 'test-secret', WORKFLOW_RUNNER: { getByName: rpc } } as unknown as ShardflowEnv;
	const put = (type: string, n: number, entry: IndexEntry) => shard(`${INDEX_PREFIX}${type}:${n}`).set(entry.id, entry);
	const reset = () => Object.assign(seen, { calls: 0, requested: 0, returned: 0, callsPerShard: new Map() });
	return { env, seen, put, reset };
}

/** Rounds of one listing: every shard asked in a round was asked in every round before it, so the most calls to one shard. */
const rounds = (seen: { callsPerShard: Map<string, number> }) => Math.max(...seen.callsPerShard.values());

const entry = (id: string, createdAt: number, status: IndexEntry['status'] = 'running'): IndexEntry => ({
	id, type: 'spread', status, createdAt, updatedAt: createdAt + (createdAt % 13), version: 1,
});

/** `n` entries of type `spread`, each in the shard its id routes to, created one ms apart. */
function seedSpread(store: ReturnType<typeof memoryShards>, shards: number, n: number, status: (i: number) => IndexEntry['status'] = () => 'running') {
	const all: IndexEntry[] = [];
	for (let i = 0; i < n; i++) {
		const e = entry(`e-${i}`, 1_000_000 + i, status(i));
		store.put('spread', shardIndex(e.id, shards), e);
		all.push(e);
	}
	return all;
}

async function walk(client: IndexClient, query: ListQuery) {
	const seen: IndexEntry[] = [];
	let cursor: string | null = null;
	for (let page = 0; page < 1000; page++) {
		const result = await client.list({ ...query, cursor });
		seen.push(...result.items);
		cursor = result.nextCursor;
		if (!cursor) return seen;
	}
	throw new Error('the walk did not end');
}

const LIMIT = 1000;
const SHARDS = 256;
/** The documented bound (docs/deploying.md "Production limits"): what a listing of 1000 over 256 evenly filled shards may ask for. */
const BOUND = 2 * LIMIT + SHARDS * 4;

describe('a listing over 256 shards', () => {
	it.for(['createdAt', 'updatedAt'] as const)(`asks the shards for at most 2 x limit + 4 per shard rows when entries are spread evenly (%s order)`, async (order) => {
		const store = memoryShards();
		const all = seedSpread(store, SHARDS, 10_000);
		const client = new IndexClient(store.env, defineIndexLayout({ spread: { shards: SHARDS } }));
		const page = await client.list({ type: 'spread', limit: LIMIT, order });
		expect(page.items.map((e) => e.id)).toEqual([...all].sort(compareIn(order)).slice(0, LIMIT).map((e) => e.id));
		expect(page.nextCursor).not.toBeNull();
		expect(store.seen.requested).toBeLessThanOrEqual(BOUND);
		expect(store.seen.returned).toBeLessThanOrEqual(BOUND);
		expect(rounds(store.seen)).toBeLessThanOrEqual(3);
	});

	it('walks 10,000 evenly spread entries in pages of 1000, each once in order, within the bound on every page', async () => {
		const store = memoryShards();
		const all = seedSpread(store, SHARDS, 10_000);
		const client = new IndexClient(store.env, defineIndexLayout({ spread: { shards: SHARDS } }));
		let cursor: string | null = null;
		const seen: string[] = [];
		for (let page = 0; page < 20; page++) {
			store.reset();
			const result = await client.list({ type: 'spread', limit: LIMIT, cursor });
			expect(store.seen.requested).toBeLessThanOrEqual(BOUND);
			seen.push(...result.items.map((e) => e.id));
			cursor = result.nextCursor;
			if (!cursor) break;
		}
		expect(seen).toEqual([...all].sort(compareIn('createdAt')).map((e) => e.id));
	});

	it('returns the exact page in two rounds when every matching entry is in one shard', async () => {
		const store = memoryShards();
		// Every shard holds completed entries; the 1500 running ones all route to shard 7.
		seedSpread(store, SHARDS, 5000, () => 'completed');
		const running: IndexEntry[] = [];
		for (let k = 0; running.length < 1500; k++) {
			if (shardIndex(`s-${k}`, SHARDS) !== 7) continue;
			const e = entry(`s-${k}`, 1_002_000 + (k % 5000));
			store.put('spread', 7, e);
			running.push(e);
		}
		running.sort(compareIn('createdAt'));
		const client = new IndexClient(store.env, defineIndexLayout({ spread: { shards: SHARDS } }));
		const page = await client.list({ type: 'spread', limit: LIMIT, status: ['running'] });
		expect(page.items.map((e) => e.id)).toEqual(running.slice(0, LIMIT).map((e) => e.id));
		expect(page.nextCursor).not.toBeNull();
		expect(rounds(store.seen)).toBe(2);
		// Round 1 asks every shard for 8; round 2 asks shard 7 alone for the rest of the page and the row after it.
		expect(store.seen.requested).toBeLessThanOrEqual(SHARDS * 8 + LIMIT + 1);
		expect(store.seen.returned).toBe(LIMIT + 1);
		const rest = await client.list({ type: 'spread', limit: LIMIT, status: ['running'], cursor: page.nextCursor });
		expect(rest.items.map((e) => e.id)).toEqual(running.slice(LIMIT, 2 * LIMIT).map((e) => e.id));
	});

	it('returns the exact page in at most 3 rounds when half the entries are in one shard', async () => {
		const store = memoryShards();
		const all: IndexEntry[] = [];
		let k = 0;
		for (let i = 0; i < 4000; i++) {
			// Every other entry has an id that routes to shard 3; the rest are spread.
			let id = `h-${i}`;
			while (i % 2 === 0 && shardIndex(id, SHARDS) !== 3) id = `h3-${k++}`;
			const e = entry(id, 2_000_000 + i);
			store.put('spread', shardIndex(e.id, SHARDS), e);
			all.push(e);
		}
		const client = new IndexClient(store.env, defineIndexLayout({ spread: { shards: SHARDS } }));
		const page = await client.list({ type: 'spread', limit: LIMIT });
		expect(page.items.map((e) => e.id)).toEqual([...all].sort(compareIn('createdAt')).slice(0, LIMIT).map((e) => e.id));
		// Shard 3 is asked for what its density says it holds of the page, not for a doubling batch (7 rounds).
		expect(rounds(store.seen)).toBeLessThanOrEqual(3);
		expect(store.seen.requested).toBeLessThanOrEqual(SHARDS * 8 + (rounds(store.seen) - 1) * (2 * LIMIT + SHARDS + 1));
		expect(store.seen.returned).toBeLessThanOrEqual(BOUND + LIMIT);
	});
});

describe('a listing asks what the merge needs and keeps every guarantee', () => {
	it.for([
		[1, 50],
		[4, 7],
		[16, 1],
		[16, 100],
		[37, 20],
	] as const)('over %i shards in pages of %i: lists every entry once, in order, with every filter', async ([shards, limit]) => {
		const store = memoryShards();
		const all = seedSpread(store, shards, 600, (i) => (i % 3 === 0 ? 'completed' : 'running'));
		const client = new IndexClient(store.env, defineIndexLayout({ spread: { shards } }));
		for (const order of ['createdAt', 'updatedAt'] as const) {
			const query = { type: 'spread', limit, order, status: ['running' as const], createdAfter: 1_000_100, createdBefore: 1_000_500 };
			const expected = all.filter((e) => e.status === 'running' && e.createdAt > 1_000_100 && e.createdAt < 1_000_500).sort(compareIn(order));
			expect((await walk(client, query)).map((e) => e.id)).toEqual(expected.map((e) => e.id));
		}
	});

	it('lists one entry with copies in both layouts once, with its newest status, whatever the page size', async () => {
		const store = memoryShards();
		const during = defineIndexLayout({ spread: { shards: 8, previousShards: 4 } });
		const expected: IndexEntry[] = [];
		for (let i = 0; i < 200; i++) {
			const e = { ...entry(`c-${i}`, 3_000_000 + Math.floor(i / 3)), version: 2 };
			const [home, previous] = [shardIndex(e.id, 8), shardIndex(e.id, 4)];
			// A third of the entries moved: their stale copy (older version, another status) is still in the previous shard.
			if (i % 3 === 0 && home !== previous) store.put('spread', previous, { ...e, status: 'waiting', version: 1 });
			// Another third were written under the old layout only.
			store.put('spread', i % 3 === 1 ? previous : home, { ...e, status: 'completed' });
			expected.push({ ...e, status: 'completed' });
		}
		expected.sort(compareIn('createdAt'));
		const client = new IndexClient(store.env, during);
		for (const limit of [1, 2, 3, 10, 64, 1000]) {
			const seen = await walk(client, { type: 'spread', limit });
			expect(seen).toEqual(expected);
		}
	});

	it('lists every type when none is given, merged in one order', async () => {
		const store = memoryShards();
		const layout = defineIndexLayout({ spread: { shards: 16 }, other: { shards: 3 } });
		const all: IndexEntry[] = [];
		for (let i = 0; i < 300; i++) {
			const e = { ...entry(`t-${i}`, 4_000_000 + i), type: i % 4 === 0 ? 'other' : 'spread' };
			store.put(e.type, shardIndex(e.id, e.type === 'other' ? 3 : 16), e);
			all.push(e);
		}
		const seen = await walk(new IndexClient(store.env, layout), { limit: 40 });
		expect(seen.map((e) => e.id)).toEqual([...all].sort(compareIn('createdAt')).map((e) => e.id));
	});
});
