import type { FailingSummary } from '../engine/instance/failing-passes';
import { ErrorCode, ShardflowError } from '../engine/support/errors';
import type { BacklogSummary } from '../engine/index/index-backlog';
import { compareEntries, type IndexEntry } from '../engine/index/index-entry';
import type { Registry } from '../engine/definition/registry';
import { reconcileVerdict, type ReconcileVerdict } from '../engine/index/reconcile-verdict';
import { shardIndex } from '../engine/index/shard';
import { routeIndexEntry } from './index-client';
import { callOperation, type ShardflowEnv } from './instance-client';
import { doneMessage, walkShards, type ShardWalkOptions } from './shard-walk';
import { callRole, roleHelpers } from './stubs';

export type ReconcileOptions = ShardWalkOptions;

export interface ReconcileProgress {
	type: string;
	/** Shards fully walked so far in this pass, out of `totalShards` (current and previous layout). */
	shardsDone: number;
	totalShards: number;
	/** Live entries checked in this call. */
	scanned: number;
	unchanged: number;
	/** Stale entries rewritten from their instance. */
	repaired: number;
	/** Entries whose instance does not exist, tombstoned. */
	removed: number;
	/** Entries newer than their instance: reported, left alone. */
	ahead: number;
	/** Instances that did not answer; their entries are left as they were (run again later). */
	unreachable: number;
	/** Pass back to continue; null once the pass is done. */
	cursor: string | null;
	done: boolean;
	message: string;
}

/** Instance RPCs in flight at once during a batch. */
const CONCURRENCY = 32;

/**
 * One resumable, idempotent batch of "rebuild from the truth" for a type's
 * index: walks its shards in id order, asks each listed instance for its
 * current entry and repairs what differs (see `ReconcileVerdict`). It repairs
 * what the shards list; an instance missing from every shard cannot be found
 * this way and is repaired by id with `reindex`.
 */
export async function reconcile(env: ShardflowEnv, registry: Registry, type: string, options: ReconcileOptions = {}): Promise<ReconcileProgress> {
	const tally: Record<ReconcileVerdict | 'unreachable', number> = { unchanged: 0, stale: 0, orphan: 0, ahead: 0, unreachable: 0 };
	const batch = await walkShards(env, registry, type, 'reconcile', options, (shard, rows) =>
		inBatches(rows, CONCURRENCY, async (row) => {
			tally[await reconcileOne(env, registry, type, shard, row)]++;
		}),
	);
	const { done } = batch;
	return {
		type,
		shardsDone: batch.shardsDone,
		totalShards: batch.totalShards,
		scanned: batch.scanned,
		unchanged: tally.unchanged,
		repaired: tally.stale,
		removed: tally.orphan,
		ahead: tally.ahead,
		unreachable: tally.unreachable,
		cursor: batch.cursor,
		done,
		message: doneMessage(done, options.cursor, `checked every listed ${type} entry against its instance`),
	};
}

async function reconcileOne(
	env: ShardflowEnv,
	registry: Registry,
	type: string,
	shard: number,
	listed: IndexEntry,
): Promise<ReconcileVerdict | 'unreachable'> {
	let truth: IndexEntry | null;
	try {
		truth = await callOperation(env, 'currentIndexEntry', { id: listed.id });
	} catch (error) {
		// An id no workflow can have (malformed, reserved) or an object of another role: nothing owns the entry.
		const code = error instanceof ShardflowError ? error.code : undefined;
		if (code === ErrorCode.InvalidId || code === ErrorCode.ReservedId || code === ErrorCode.WrongRole) truth = null;
		else return 'unreachable';
	}
	const verdict = reconcileVerdict(listed, truth, type);
	const here = [type, shard] as [string, number];
	if (verdict === 'orphan') {
		await callRole(env, 'indexTombstone', here, [{ id: listed.id, version: listed.version, createdAt: listed.createdAt }]);
	} else if (verdict === 'stale' && truth) {
		const home = truth.type === type ? shardIndex(truth.id, registry.get(type).shards) : undefined;
		const newest = compareEntries(truth, listed) >= 0 ? truth : listed;
		const tombstone = { id: listed.id, version: newest.version, createdAt: newest.createdAt };
		if (home === shard) {
			// Same position, other content: an upsert keeps the row it has, so clear it first.
			if (compareEntries(truth, listed) === 0) await callRole(env, 'indexTombstone', here, [tombstone]);
			await routeIndexEntry(env, registry, truth);
		} else {
			// A copy outside its home shard (or under another type): write the truth, then retire the copy.
			if (registry.has(truth.type)) await routeIndexEntry(env, registry, truth);
			await callRole(env, 'indexTombstone', here, [tombstone]);
		}
	}
	return verdict;
}

async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
	for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

/**
 * Makes one instance publish its current entry again (and waits for the
 * delivery): the repair for an entry a shard has lost, which `reconcile`
 * cannot see.
 */
export async function reindex(env: ShardflowEnv, id: string): Promise<{ id: string; type: string; version: number; delivered: boolean }> {
	const { entry, delivered } = await callOperation(env, 'reindex', { id });
	return { id: entry.id, type: entry.type, version: entry.version, delivered };
}

/** Instances of `type` whose index delivery has failed and not yet succeeded. */
export const backlogSummary: (env: ShardflowEnv, type: string) => Promise<BacklogSummary> = roleHelpers('backlog').summary;
/** A type's instances whose passes keep failing (engine/instance/failing-passes.ts), as its backlog object has them at `now`. */
export const failingSummary: (env: ShardflowEnv, type: string, now: number) => Promise<FailingSummary> = roleHelpers('backlog').failing;
