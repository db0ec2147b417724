import { checkDeleteFilter, type DeleteFilter } from '../engine/lifecycle/deletion';
import { ErrorCode, ShardflowError } from '../engine/support/errors';
import type { IndexEntry } from '../engine/index/index-entry';
import type { Registry } from '../engine/definition/registry';
import type { WorkflowStatus } from '../engine/support/statuses';
import { callOperation, type ShardflowEnv } from './instance-client';
import { doneMessage, walkShards, type ShardWalkOptions } from './shard-walk';

export interface PurgeOptions extends ShardWalkOptions {
	/** Finished statuses to delete. */
	status: WorkflowStatus[];
	/** Delete instances created before this time (milliseconds since the epoch). */
	createdBefore?: number;
	/** Delete instances last changed before this time. At least one of the two bounds is required. */
	updatedBefore?: number;
	/** Write each instance to the archive bucket before deleting it. */
	archive?: boolean;
}

export interface PurgeProgress {
	type: string;
	/** Shards fully walked so far in this pass, out of `totalShards` (current and previous layout). */
	shardsDone: number;
	totalShards: number;
	/** Live index entries looked at in this call. */
	scanned: number;
	/** Entries that matched the filter in the index. */
	matched: number;
	/** Instances deleted (their storage freed, or their deletion durable and left to their alarm). */
	deleted: number;
	/** Instances that no longer matched when asked (restarted, say), or were already gone. */
	skipped: number;
	/** Instances that did not answer: left for the next pass. */
	failed: number;
	/** Pass back to continue; null once the pass is done. */
	cursor: string | null;
	done: boolean;
	message: string;
}

/** Instance deletions in flight at once during a batch. */
const CONCURRENCY = 32;

/**
 * One resumable batch of "delete every finished instance of a type that
 * matches": walks the type's shards in id order like rebalance and reconcile,
 * picks the entries that match in the index, and asks each instance to delete
 * itself only if its own row matches too (the index may lag). Idempotent: a
 * deleted instance's entry is gone from the walk, and a repeated batch skips
 * what it already deleted.
 */
export async function purge(env: ShardflowEnv, registry: Registry, type: string, options: PurgeOptions): Promise<PurgeProgress> {
	const filter = checkDeleteFilter({ status: options.status, createdBefore: options.createdBefore, updatedBefore: options.updatedBefore });
	const tally = { matched: 0, deleted: 0, skipped: 0, failed: 0 };
	const batch = await walkShards(env, registry, type, 'purge', options, async (_shard, rows) => {
		const matching = rows.filter((row) => listedMatch(row, filter));
		tally.matched += matching.length;
		for (let i = 0; i < matching.length; i += CONCURRENCY) {
			await Promise.all(
				matching.slice(i, i + CONCURRENCY).map(async (row) => {
					tally[await purgeOne(env, row.id, filter, options.archive === true)]++;
				}),
			);
		}
	});
	return {
		type,
		shardsDone: batch.shardsDone,
		totalShards: batch.totalShards,
		scanned: batch.scanned,
		...tally,
		cursor: batch.cursor,
		done: batch.done,
		message: doneMessage(batch.done, options.cursor, `deleted every listed ${type} instance matching the filter`),
	};
}

function listedMatch(row: IndexEntry, filter: DeleteFilter): boolean {
	return (
		filter.status.includes(row.status) &&
		(filter.createdBefore === undefined || row.createdAt < filter.createdBefore) &&
		(filter.updatedBefore === undefined || row.updatedAt < filter.updatedBefore)
	);
}

async function purgeOne(env: ShardflowEnv, id: string, only: DeleteFilter, archive: boolean): Promise<'deleted' | 'skipped' | 'failed'> {
	try {
		const { deleted } = await callOperation(env, 'delete', { id, only, reason: 'purge', ...(archive ? { archive: true } : {}) });
		return deleted ? 'deleted' : 'skipped';
	} catch (error) {
		const code = error instanceof ShardflowError ? error.code : undefined;
		if (code === ErrorCode.NotFound || code === ErrorCode.InvalidId || code === ErrorCode.ReservedId) return 'skipped';
		// A refusal that every instance would answer alike (no archive bucket): the whole call fails.
		if (code === ErrorCode.ArchiveNotConfigured) throw error;
		return 'failed';
	}
}
