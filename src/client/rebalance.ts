import type { IndexEntry } from '../engine/index-entry';
import type { Registry } from '../engine/registry';
import { shardIndex } from '../engine/shard';
import { shardStub } from './index-client';
import type { ShardflowEnv } from './instance-client';
import { unwrap } from './rpc';
import { walkShards, type ShardWalkOptions } from './shard-walk';

export type RebalanceOptions = ShardWalkOptions;

export interface RebalanceProgress {
	type: string;
	shards: number;
	previousShards: number | null;
	/** Shards fully scanned so far in this pass, out of `totalShards`. */
	shardsDone: number;
	totalShards: number;
	scanned: number;
	moved: number;
	/** Pass back to continue; null once the pass is done. */
	cursor: string | null;
	done: boolean;
	/** True once a full pass has finished while `previousShards` is set. */
	canDropPreviousShards: boolean;
	message: string;
}

/**
 * One resumable, idempotent batch of a rebalance: every live entry whose
 * shard differs under the current `shards` is written to its owning shard
 * (keeping the newer version) and then tombstoned where it was. Finished
 * workflows never write again, so this is what lets `previousShards` go.
 */
export async function rebalance(env: ShardflowEnv, registry: Registry, type: string, options: RebalanceOptions = {}): Promise<RebalanceProgress> {
	const config = registry.get(type);
	let moved = 0;
	const batch = await walkShards(env, registry, type, 'rebalance', options, async (shard, rows) => {
		const misplaced = rows.filter((row) => shardIndex(row.id, config.shards) !== shard);
		moved += await moveEntries(env, type, config.shards, shard, misplaced);
	});
	const { done } = batch;
	const canDrop = done && config.previousShards !== undefined;
	return {
		type,
		shards: config.shards,
		previousShards: config.previousShards ?? null,
		shardsDone: batch.shardsDone,
		totalShards: batch.totalShards,
		scanned: batch.scanned,
		moved,
		cursor: batch.cursor,
		done,
		canDropPreviousShards: canDrop,
		message: done
			? canDrop
				? `every ${type} entry is in its shard under shards=${config.shards}: remove previousShards from the registry and deploy`
				: `every ${type} entry is in its shard under shards=${config.shards}`
			: 'pass the cursor to continue',
	};
}

async function moveEntries(env: ShardflowEnv, type: string, shards: number, from: number, entries: IndexEntry[]): Promise<number> {
	if (entries.length === 0) return 0;
	const byTarget = new Map<number, IndexEntry[]>();
	for (const entry of entries) {
		const target = shardIndex(entry.id, shards);
		const group = byTarget.get(target);
		if (group) group.push(entry);
		else byTarget.set(target, [entry]);
	}
	// Copy first, then tombstone: an entry is never missing, only briefly in two places (reads de-duplicate).
	await Promise.all([...byTarget].map(([target, batch]) => unwrap(shardStub(env, type, target).indexWrite(batch))));
	await unwrap(shardStub(env, type, from).indexTombstone(entries.map(({ id, version, createdAt }) => ({ id, version, createdAt }))));
	return entries.length;
}
