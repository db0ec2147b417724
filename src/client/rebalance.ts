import type { IndexEntry } from '../engine/index/index-entry';
import type { Registry } from '../engine/definition/registry';
import { shardIndex } from '../engine/index/shard';
import { readShards } from '../engine/index/shard';
import type { ShardflowEnv } from './instance-client';
import { walkShards, type ShardWalkOptions } from './shard-walk';
import { callRole } from './stubs';

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
	/**
	 * Tombstones removed when this call finished a pass: move tombstones of ids a shard no
	 * longer owns, and deletion tombstones past their grace period (docs/decisions.md).
	 */
	tombstonesRemoved: { moved: number; deleted: number };
	/** Some collectable tombstones remain (a shard stopped at its limit): call again. */
	tombstonesLeft: boolean;
	message: string;
}

/** Tombstones of each kind one shard removes per finished pass. */
const TOMBSTONES_PER_SHARD = 5000;

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
	// Once every entry is in its owner's shard, a move tombstone elsewhere guards nothing: reads
	// show a foreign copy only from a previous-layout shard while its owner has nothing as new.
	const collected = done ? await collectTombstones(env, type, readShards(config), config.shards) : { moved: 0, deleted: 0, more: false };
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
		tombstonesRemoved: { moved: collected.moved, deleted: collected.deleted },
		tombstonesLeft: collected.more,
		message: done
			? (canDrop
					? `every ${type} entry is in its shard under shards=${config.shards}: remove previousShards from the registry and deploy`
					: `every ${type} entry is in its shard under shards=${config.shards}`) +
				(collected.more ? '; more tombstones can go: call again' : '')
			: 'pass the cursor to continue',
	};
}

async function collectTombstones(env: ShardflowEnv, type: string, shardNumbers: number[], shards: number) {
	const results = await Promise.all(
		shardNumbers.map((n) => callRole(env, 'indexCollectTombstones', [type, n], { shards, limit: TOMBSTONES_PER_SHARD })),
	);
	return results.reduce((sum, r) => ({ moved: sum.moved + r.moved, deleted: sum.deleted + r.deleted, more: sum.more || r.more }), { moved: 0, deleted: 0, more: false });
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
	await Promise.all([...byTarget].map(([target, batch]) => callRole(env, 'indexWrite', [type, target], batch, { moved: true })));
	await callRole(env, 'indexTombstone', [type, from], entries.map(({ id, version, createdAt }) => ({ id, version, createdAt })));
	return entries.length;
}
