/// <reference types="node" />
// Runs on plain Node (bundled by bench/lib/harness.mjs, `--expose-gc`): the real IndexClient lists
// one page of `limit` over `shards` index shards held in memory behind the shard RPC (each answer a
// copy, as an RPC's is), and reports the rows it asked for, the rounds, and the heap the listing
// took above what the shards themselves hold: what one list request costs the API Worker's isolate.
import { IndexClient } from '../../src/client/index-client';
import type { ShardflowEnv } from '../../src/client/instance-client';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { compareIn, type ShardListQuery } from '../../src/engine/index/index-query';
import { defineIndexLayout } from '../../src/engine/definition/registry';
import { shardIndex } from '../../src/engine/index/shard';
import { INDEX_PREFIX } from '../../src/engine/object-names';

const [shardCount, perShard, limit] = [Number(process.argv[2] ?? 256), Number(process.argv[3] ?? 1000), Number(process.argv[4] ?? 1000)];
const shards = new Map<string, IndexEntry[]>();
for (let i = 0; i < shardCount * perShard; i++) {
	const id = `listed-${i}`;
	const name = `${INDEX_PREFIX}spread:${shardIndex(id, shardCount)}`;
	const entry: IndexEntry = { id, type: 'spread', status: 'running', createdAt: 1_700_000_000_000 + i, updatedAt: 1_700_000_000_000 + i, version: 1 };
	shards.set(name, [...(shards.get(name) ?? []), entry]);
}
for (const rows of shards.values()) rows.sort(compareIn('createdAt'));
const seen = { requested: 0, returned: 0, calls: 0, perShard: new Map<string, number>() };
const rpc = (name: string) => ({
	indexList: async (query: ShardListQuery) => {
		seen.calls++;
		seen.requested += query.limit;
		seen.perShard.set(name, (seen.perShard.get(name) ?? 0) + 1);
		const rows = shards.get(name) ?? [];
		const after = query.after;
		const start = after ? rows.findIndex((e) => e.createdAt < after.at || (e.createdAt === after.at && e.id < after.id)) : 0;
		const page = (start < 0 ? [] : rows.slice(start, start + query.limit)).map((e) => structuredClone(e));
		seen.returned += page.length;
		return { ok: true, value: page };
	},
	indexVersions: async () => ({ ok: true, value: {} }),
});
const env = { CURSOR_SECRET: 'harness', WORKFLOW_RUNNER: { getByName: rpc, idFromName: () => undefined, get: () => undefined } } as unknown as ShardflowEnv;
const client = new IndexClient(env, defineIndexLayout({ spread: { shards: shardCount } }));

const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
const before = process.memoryUsage().heapUsed;
let peak = before;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 1);
const page = await client.list({ type: 'spread', limit });
peak = Math.max(peak, process.memoryUsage().heapUsed);
clearInterval(sampler);
console.log(
	JSON.stringify({ items: page.items.length, rowsRequested: seen.requested, rowsReturned: seen.returned, rounds: Math.max(...seen.perShard.values()), heapMiB: (peak - before) / 2 ** 20 }),
);
