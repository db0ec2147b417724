import type { BulkProgress, BulkSpec } from '../engine/bulk-job';
import type { ErrorBody } from '../engine/errors';
import { errorFromBody, toErrorBody, ShardflowError } from '../engine/errors';
import type { BacklogSummary } from '../engine/index-backlog';
import type { EntryPosition, IndexEntry } from '../engine/index-entry';
import type { ShardMetrics } from '../engine/run-metrics';
import type { AttributeCountRequest, AttributeCounts, ShardListQuery } from '../engine/index-query';
import type { ScheduleInfo } from '../engine/schedule-engine';
import type { LimiterInfo } from '../engine/limiter';
import type { InputOf, OperationName, Operations, OutputOf } from '../operations/table';

/**
 * Every RPC method of `WorkflowRunner` answers with this envelope instead of
 * throwing: a thrown error loses its class and code on the way across RPC.
 */
export type RpcResult<T> = { ok: true; value: T } | { ok: false; error: ErrorBody };

/**
 * The RPC surface of a `WorkflowRunner` in its workflow-instance role: one
 * method per control operation (`src/operations/table.ts`), named by its `rpc`.
 */
export type InstanceRpc = {
	[K in OperationName as Operations[K]['rpc']]: (input?: InputOf<K>) => Promise<RpcResult<OutputOf<K>>>;
};

/** Turns an RPC envelope back into a value or a typed error. */
export async function unwrap<T>(result: Promise<RpcResult<T>> | RpcResult<T>): Promise<T> {
	const settled = await result;
	if (!settled.ok) throw errorFromBody(settled.error);
	return settled.value;
}

/** Runs `fn` and wraps its outcome for RPC; unexpected errors are logged and reported as INTERNAL. */
export async function wrap<T>(fn: () => T | Promise<T>): Promise<RpcResult<T>> {
	try {
		return { ok: true, value: await fn() };
	} catch (error) {
		if (!(error instanceof ShardflowError)) console.error('shardflow: unexpected error', error);
		return { ok: false, error: toErrorBody(error) };
	}
}

/** The RPC surface of a `WorkflowRunner` in its index-shard role. */
export interface IndexRpc {
	/** `moved`: copies a rebalance moves here, which the run metrics do not count again. */
	indexWrite(entries: IndexEntry[], options?: { moved?: boolean }): Promise<RpcResult<null>>;
	/** Entries that moved to another shard (or whose instance is unknown): tombstones at their position. */
	indexTombstone(items: EntryPosition[]): Promise<RpcResult<null>>;
	/** Entries of deleted instances: deletion tombstones, which only a later incarnation of the id replaces. */
	indexRemove(items: EntryPosition[]): Promise<RpcResult<null>>;
	indexList(query: ShardListQuery): Promise<RpcResult<IndexEntry[]>>;
	indexCounts(): Promise<RpcResult<Record<string, number>>>;
	/** Live entries per value of one attribute under a listing's filters (at most MAX_GROUPS values; `more` when cut). */
	indexCountsBy(request: AttributeCountRequest): Promise<RpcResult<AttributeCounts>>;
	indexVersions(ids: string[]): Promise<RpcResult<Record<string, number>>>;
	/** The shard's run metrics (per-minute counters and duration histograms) up to `now`. */
	indexMetrics(request: { now: number }): Promise<RpcResult<ShardMetrics>>;
	indexScan(request: { afterId: string; limit: number }): Promise<RpcResult<IndexEntry[]>>;
	/** Removes move tombstones of ids the shard does not own under `shards`, and deletion tombstones past their grace period. */
	indexCollectTombstones(request: { shards: number; limit: number }): Promise<RpcResult<{ moved: number; deleted: number; more: boolean }>>;
}

/** The RPC surface of a `WorkflowRunner` in its delivery-backlog role (`__backlog:<type>`). */
export interface BacklogRpc {
	backlogAdd(request: { id: string; since: number }): Promise<RpcResult<null>>;
	backlogRemove(request: { id: string }): Promise<RpcResult<null>>;
	backlogSummary(): Promise<RpcResult<BacklogSummary>>;
}

/** The RPC surface of a type's schedule (`__schedule:<type>`). */
export interface ScheduleRpc {
	/** Creates or updates the schedule from the deployed code, arms its alarm and answers where it stands. */
	scheduleWake(): Promise<RpcResult<ScheduleInfo>>;
	schedulePause(): Promise<RpcResult<ScheduleInfo>>;
	scheduleResume(): Promise<RpcResult<ScheduleInfo>>;
}

/** The RPC surface of a bulk operation (`__bulk:<id>`). */
export interface BulkRpc {
	/** Stores the job and arms its alarm; a job that exists answers its progress (a retried start changes nothing). */
	bulkStart(spec: BulkSpec): Promise<RpcResult<BulkProgress>>;
	bulkProgress(): Promise<RpcResult<BulkProgress>>;
	bulkCancel(): Promise<RpcResult<BulkProgress>>;
}

/** The RPC surface of a concurrency limiter (`__limit:<type>:<key>`). */
export interface LimiterRpc {
	limiterAcquire(request: { id: string }): Promise<RpcResult<'holding' | 'waiting'>>;
	limiterRelease(request: { id: string }): Promise<RpcResult<null>>;
	limiterInfo(): Promise<RpcResult<LimiterInfo>>;
}

/** The RPC surface of the engine's `__keys` object. */
export interface KeysRpc {
	/** The key material that signs listing cursors when no CURSOR_SECRET is set; generated once, then stable. */
	cursorSecret(): Promise<RpcResult<string>>;
	/** The key material that signs webhook tokens when no WEBHOOK_SECRET is set; generated once, then stable. */
	webhookSecret(): Promise<RpcResult<string>>;
}
