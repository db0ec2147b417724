import type { BacklogSummary } from '../engine/index/index-backlog';
import { inPlace, splitGroupTag } from '../engine/support/group-id';
import type { FailingReport, FailingSummary } from '../engine/instance/failing-passes';
import type { EntryPosition, IndexEntry } from '../engine/index/index-entry';
import type { AttributeCountRequest, AttributeCounts, ShardListQuery } from '../engine/index/index-query';
import type { BulkProgress, BulkSpec } from '../engine/bulk/bulk-job';
import type { LimiterInfo } from '../engine/limiter/limiter';
import { backlogName, bulkName, KEYS_OBJECT, limiterName, scheduleName, shardName, type RoleKind } from '../engine/object-names';
import { ErrorCode, ValidationError } from '../engine/support/errors';
import type { ShardMetrics } from '../engine/index/run-metrics';
import type { IndexWriteOptions as WriteOptions, PriorRow } from '../engine/index/resize-metrics';
import type { ScheduleInfo } from '../engine/schedule/schedule-engine';

/** What a call reaches in an index shard (runtime/roles/index-shard-role.ts). */
export interface IndexShardAccess {
	write(entries: IndexEntry[], options?: WriteOptions): Promise<void>;
	tombstone(items: EntryPosition[]): Promise<void>;
	remove(items: EntryPosition[]): Promise<void>;
	collectTombstones(request: { shards: number; limit: number }): TombstonesCollected;
	list(query: ShardListQuery): IndexEntry[];
	counts(): Record<string, number>;
	countsBy(request: AttributeCountRequest): AttributeCounts;
	metrics(now: number): ShardMetrics;
	versions(ids: string[]): Record<string, number>;
	priors(ids: string[]): Record<string, PriorRow | null>;
	scan(afterId: string, limit: number): IndexEntry[];
}

/** What one tombstone collection removed. */
export interface TombstonesCollected {
	moved: number;
	deleted: number;
	/** More tombstones may be left to collect. */
	more: boolean;
}

/** What a call reaches in a type's delivery backlog (runtime/roles/backlog-role.ts). */
export interface BacklogAccess {
	add(id: string, since: number): Promise<void>;
	remove(id: string): Promise<void>;
	summary(): BacklogSummary;
	reportFailing(report: FailingReport): void;
	withdrawFailing(id: string): void;
	failing(now: number): FailingSummary;
}

/** What a call reaches in the engine's key store (runtime/roles/keys-role.ts). */
export interface KeysAccess {
	cursorSecret(): Promise<string>;
	webhookSecret(): Promise<string>;
}

/** What a call reaches in a type's schedule (runtime/roles/schedule-role.ts). */
export interface ScheduleAccess {
	wake(): Promise<ScheduleInfo>;
	pause(): Promise<ScheduleInfo>;
	resume(): Promise<ScheduleInfo>;
}

/** What a call reaches in a concurrency limiter (runtime/roles/limiter-role.ts). */
export interface LimiterAccess {
	acquire(id: string): Promise<'holding' | 'waiting'>;
	release(id: string): Promise<void>;
	info(): LimiterInfo;
}

/** What a call reaches in a bulk operation (runtime/roles/bulk-role.ts). */
export interface BulkAccess {
	start(spec: BulkSpec): Promise<BulkProgress>;
	progress(): BulkProgress;
	cancel(): BulkProgress;
	/** Deletes a finished job and what it kept; a running one is refused (INVALID_STATE: cancel it first). */
	delete(): Promise<{ id: string; deleted: true }>;
}

/** The module of each non-instance role, as its calls see it (instances have the operation table, ./table.ts). */
export interface RoleModules {
	index: IndexShardAccess;
	backlog: BacklogAccess;
	keys: KeysAccess;
	schedule: ScheduleAccess;
	limiter: LimiterAccess;
	bulk: BulkAccess;
}
export type CallRole = keyof RoleModules & RoleKind;

/** A job id's group part and UUID (a job of another group than the default lives in it, docs/residency.md); undefined if malformed. */
function safeSplit(id: string): ReturnType<typeof splitGroupTag> | undefined {
	try {
		return splitGroupTag(id);
	} catch {
		return undefined;
	}
}

const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * How a caller addresses the object of each role: the parts of its name (engine/object-names.ts).
 * A call's client helper takes these first, then the call's own arguments.
 */
export const roleObjects = {
	index: (type: string, shard: number) => shardName(type, shard),
	backlog: (type: string) => backlogName(type),
	keys: () => KEYS_OBJECT,
	schedule: (type: string) => scheduleName(type),
	limiter: (type: string, key: string) => limiterName(type, key),
	/** Refuses, before any object is touched, an id that is not the UUID a job's start answered (with its group part, in a group other than the default). */
	bulk: (id: string) => {
		const split = typeof id === 'string' ? safeSplit(id) : undefined;
		if (!split || !JOB_ID.test(split.rest)) throw new ValidationError(ErrorCode.InvalidId, 'a bulk operation id is the UUID its start answered');
		return inPlace(split.place, bulkName(split.rest));
	},
} satisfies { [K in CallRole]: (...address: any[]) => string };

/** The parts of the name of a role's object (`[type, shard]` for an index shard). */
export type AddressOf<K extends CallRole> = Parameters<(typeof roleObjects)[K]>;

/**
 * One RPC call of a non-instance role, declared once. The Durable Object's RPC method
 * (named by its key in `roleCalls`) and its typed client surface (`RoleRpc`, reached with
 * the stubs of client/stubs.ts) are both derived from it.
 */
export interface RoleCall<K extends CallRole, Args extends unknown[], Output, Helper extends string = never> {
	role: K;
	/**
	 * The call's client helper in its role's group (`schedules.pause(env, type)`, client/stubs.ts
	 * `roleHelpers`): the object's address, then the call's arguments. Absent: reached with `callRole` only.
	 */
	helper?: Helper;
	/**
	 * The engine's own background calls (index and backlog writes, keys, slots): they do not
	 * count as work of the isolate that somebody waits for (see engine/steps/yield-pacer.ts), or
	 * every instance's index delivery would slow its own run.
	 */
	housekeeping?: true;
	/** Runs inside the object, with the RPC method's arguments: whatever the caller sent. */
	run(role: RoleModules[K], ...args: Args): Output | Promise<Output>;
}

function call<K extends CallRole, Args extends unknown[] = [], Output = unknown, const Helper extends string = never>(
	declared: RoleCall<K, Args, Output, Helper>,
): RoleCall<K, Args, Output, Helper> {
	return declared;
}

/**
 * Every call of the index shards, the delivery backlogs, the key store, the schedules, the
 * limiters and the bulk operations. A new call is one entry here plus its role's code; the
 * Durable Object's method, the client's typed stub and call (`callRole`, `roleHelpers` in
 * client/stubs.ts) follow, and its route, if it has one, is its entry in `./role-http.ts`.
 */
export const roleCalls = {
	// ---- index shard (`__index:<type>:<n>`) ----
	/**
	 * `moved`: copies a rebalance moves here, which the run metrics do not count again; `previous`: while resizing,
	 * the previous layout's rows of the ids (`indexPriors`), which the run metrics count against when this shard has none.
	 */
	indexWrite: call({ role: 'index', housekeeping: true, run: async (shard, entries: IndexEntry[], options?: WriteOptions) => (await shard.write(entries, options), null) }),
	/** Entries that moved to another shard (or whose instance is unknown): tombstones at their position. */
	indexTombstone: call({ role: 'index', housekeeping: true, run: async (shard, items: EntryPosition[]) => (await shard.tombstone(items), null) }),
	/** Entries of deleted instances: deletion tombstones, which only a later incarnation of the id replaces. */
	indexRemove: call({ role: 'index', housekeeping: true, run: async (shard, items: EntryPosition[]) => (await shard.remove(items), null) }),
	indexList: call({ role: 'index', run: (shard, query: ShardListQuery): IndexEntry[] => shard.list(query) }),
	indexCounts: call({ role: 'index', run: (shard): Record<string, number> => shard.counts() }),
	/** The shard's run metrics (per-minute counters and duration histograms) up to `now`. */
	indexMetrics: call({ role: 'index', run: (shard, request: { now: number }): ShardMetrics => shard.metrics(request.now) }),
	/** Live entries per value of one attribute under a listing's filters (at most MAX_GROUPS values; `more` when cut). */
	indexCountsBy: call({ role: 'index', run: (shard, request: AttributeCountRequest): AttributeCounts => shard.countsBy(request) }),
	indexVersions: call({ role: 'index', run: (shard, ids: string[]): Record<string, number> => shard.versions(ids) }),
	/** The live rows of `ids` as the run metrics compare against them (null: none): read from the previous layout's shard while resizing. */
	indexPriors: call({ role: 'index', housekeeping: true, run: (shard, ids: string[]): Record<string, PriorRow | null> => shard.priors(ids) }),
	indexScan: call({ role: 'index', run: (shard, request: { afterId: string; limit: number }): IndexEntry[] => shard.scan(request.afterId, request.limit) }),
	/** Removes move tombstones of ids the shard does not own under `shards`, and deletion tombstones past their grace period. */
	indexCollectTombstones: call({
		role: 'index',
		run: (shard, request: { shards: number; limit: number }): TombstonesCollected => shard.collectTombstones(request),
	}),

	// ---- delivery backlog (`__backlog:<type>`) ----
	backlogAdd: call({ role: 'backlog', housekeeping: true, run: async (backlog, request: { id: string; since: number }) => (await backlog.add(request.id, request.since), null) }),
	backlogRemove: call({ role: 'backlog', housekeeping: true, run: async (backlog, request: { id: string }) => (await backlog.remove(request.id), null) }),
	backlogSummary: call({ role: 'backlog', helper: 'summary', run: (backlog): BacklogSummary => backlog.summary() }),
	/** An instance whose passes keep failing reports itself (engine/instance/failing-passes.ts), and withdraws once one ends. */
	failingReport: call({ role: 'backlog', housekeeping: true, run: (backlog, report: FailingReport) => (backlog.reportFailing(report), null) }),
	failingWithdraw: call({ role: 'backlog', housekeeping: true, run: (backlog, request: { id: string }) => (backlog.withdrawFailing(request.id), null) }),
	failingSummary: call({ role: 'backlog', helper: 'failing', run: (backlog, now: number): FailingSummary => backlog.failing(now) }),

	// ---- the engine's key store (`__keys`) ----
	/** The key material that signs listing cursors when no CURSOR_SECRET is set; generated once, then stable. */
	cursorSecret: call({ role: 'keys', housekeeping: true, run: (keys): Promise<string> => keys.cursorSecret() }),
	/** The key material that signs webhook tokens when no WEBHOOK_SECRET is set; generated once, then stable. */
	webhookSecret: call({ role: 'keys', housekeeping: true, run: (keys): Promise<string> => keys.webhookSecret() }),

	// ---- a type's schedule (`__schedule:<type>`) ----
	/** Creates or updates the schedule from the deployed code, arms its alarm and answers where it stands. */
	scheduleWake: call({ role: 'schedule', helper: 'wake', run: (schedule): Promise<ScheduleInfo> => schedule.wake() }),
	/** No tick runs until a resume. */
	schedulePause: call({ role: 'schedule', helper: 'pause', run: (schedule): Promise<ScheduleInfo> => schedule.pause() }),
	/** Runs again from the next tick after now (ticks passed while paused are not run). */
	scheduleResume: call({ role: 'schedule', helper: 'resume', run: (schedule): Promise<ScheduleInfo> => schedule.resume() }),

	// ---- a concurrency limiter (`__limit:<type>:<key>`) ----
	limiterAcquire: call({ role: 'limiter', housekeeping: true, run: (limiter, request: { id: string }): Promise<'holding' | 'waiting'> => limiter.acquire(request.id) }),
	limiterRelease: call({ role: 'limiter', housekeeping: true, run: async (limiter, request: { id: string }) => (await limiter.release(request.id), null) }),
	/** Who holds the slots of a concurrency key and who waits, in the order they will start. */
	limiterInfo: call({ role: 'limiter', helper: 'info', run: (limiter): LimiterInfo => limiter.info() }),

	// ---- a bulk operation (`__bulk:<id>`) ----
	/** Stores the job and arms its alarm; a job that exists answers its progress (a retried start changes nothing). */
	bulkStart: call({ role: 'bulk', run: (bulk, spec: BulkSpec): Promise<BulkProgress> => bulk.start(spec) }),
	bulkProgress: call({ role: 'bulk', helper: 'progress', run: (bulk): BulkProgress => bulk.progress() }),
	bulkCancel: call({ role: 'bulk', helper: 'cancel', run: (bulk): BulkProgress => bulk.cancel() }),
	bulkDelete: call({ role: 'bulk', helper: 'delete', run: (bulk): Promise<{ id: string; deleted: true }> => bulk.delete() }),
};

export type RoleCalls = typeof roleCalls;
export type RoleCallName = keyof RoleCalls;
export type AnyRoleCall = RoleCall<CallRole, any[], any, string>;
/** The arguments a call takes. */
export type CallArgs<C> = C extends RoleCall<CallRole, infer Args, unknown, any> ? Args : never;
/** What a call answers. */
export type CallOutput<C> = C extends RoleCall<CallRole, any[], infer Output, any> ? Awaited<Output> : never;
/** The role a call is made on. */
export type RoleOf<N extends RoleCallName> = RoleCalls[N]['role'];
