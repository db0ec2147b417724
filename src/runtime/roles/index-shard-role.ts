import type { IndexShardAccess, TombstonesCollected } from '../../operations/role-calls';
import type { EntryPosition, IndexEntry } from '../../engine/index/index-entry';
import type { ShardMetrics } from '../../engine/index/run-metrics';
import type { AttributeCountRequest, AttributeCounts, ShardListQuery } from '../../engine/index/index-query';
import type { ObjectStorage } from '../object-storage';
import { shardIndex } from '../../engine/index/shard';
import { DELETED, DELETED_TOMBSTONE_GRACE_MS, IndexShardStore, MOVED } from '../index-shard-store';
import type { IndexWriteOptions as WriteOptions, PriorRow } from '../../engine/index/resize-metrics';
import type { IndexLiveFeed } from './index-live-feed';
import type { ShardMetricsExport } from '../shard-metrics-export';
import type { ShardRetention } from '../index-shard-retention';
import type { ShardAlarm } from '../shard-alarm';
import { nextShardAlarm } from '../../engine/lifecycle/retention-sweep';

/** Deletion tombstones past their grace period collected with each removal a shard takes. */
const COLLECT_ON_REMOVE = 100;
/**
 * Rows each removal's collection reads at most, going on where the last one stopped: no index finds
 * the tombstones by their write time (drizzle/0023), so a shard walks them a part at a time.
 */
const COLLECT_READ_BUDGET = 512;


/**
 * An index shard (`__index:<type>:<n>`): keeps the newest entry per instance
 * of its type. A read of a shard that was never written answers "empty"
 * without creating its tables.
 */
export class IndexShardRole implements IndexShardAccess {
	readonly kind = 'index';
	private store: IndexShardStore | undefined;

	constructor(
		private readonly storage: ObjectStorage,
		/** Dashboards watching this shard (see index-live-feed.ts). */
		readonly live: IndexLiveFeed | undefined,
		/** This shard's number `n` (from its name `__index:<type>:<n>`) and the clock tombstones are dated with. */
		private readonly self: { shard: number; now: () => number },
		/** The shard's one alarm, which its duties share (shard-alarm.ts). */
		private readonly alarmSlot: ShardAlarm,
		/** Expires the finished instances of this shard when their retention runs out (index-shard-retention.ts). */
		private readonly retention?: ShardRetention,
		/** Writes the run metrics to Analytics Engine (shard-metrics-export.ts); absent when `SHARDFLOW_ANALYTICS` is not bound. */
		private readonly analytics?: ShardMetricsExport,
	) {}

	async write(entries: IndexEntry[], options: WriteOptions = {}): Promise<void> {
		const shard = await this.writable();
		const changes = shard.metrics.changes;
		shard.write(entries, options);
		// A delivery in a later minute than the last rollup rolls the closed minutes up (no alarm of its own).
		shard.rollUpMetrics();
		shard.metrics.pruneIfDue(this.self.now());
		if (this.analytics && shard.metrics.changes !== changes) await this.analytics.counted();
		// A moved entry brings its expiry with it (a rebalance copies entries with `moved`).
		await this.retention?.afterWrite(shard, entries);
		if (this.live?.watched) {
			// Only what the shard kept: a late, older delivery changed nothing and is not news.
			const kept = shard.versions(entries.map((e) => e.id));
			this.live.publish(entries.filter((e) => kept[e.id] === e.version));
		}
	}

	async tombstone(items: EntryPosition[]): Promise<void> {
		(await this.writable()).tombstone(items, MOVED, this.self.now());
	}

	/**
	 * Deleted instances: their entries become deletion tombstones. A shard that takes
	 * deletions also collects a few of its deletion tombstones past their grace period,
	 * so they never pile up (no scanner needed).
	 */
	async remove(items: EntryPosition[]): Promise<void> {
		const shard = await this.writable();
		const now = this.self.now();
		shard.tombstone(items, DELETED, now);
		shard.collectDeleted(now - DELETED_TOMBSTONE_GRACE_MS, COLLECT_ON_REMOVE, COLLECT_READ_BUDGET);
	}

	/**
	 * Collects the tombstones that can no longer matter (rebalance calls this once a pass is
	 * done): move tombstones of ids this shard does not own under `shards`, and deletion
	 * tombstones past their grace period. At most `limit` of each; `more` if some remain.
	 */
	collectTombstones(request: { shards: number; limit: number }): TombstonesCollected {
		if (!this.storage.hasSchema) return { moved: 0, deleted: 0, more: false };
		const shard = this.shard();
		const moved = shard.collectMoved((id) => shardIndex(id, request.shards) !== this.self.shard, request.limit);
		const deleted = shard.collectDeleted(this.self.now() - DELETED_TOMBSTONE_GRACE_MS, request.limit);
		return { moved: moved.removed, deleted: deleted.removed, more: moved.more || deleted.more };
	}

	/**
	 * The shard's one alarm: each duty runs and says when it is next due, and the alarm is asked for
	 * the earliest (`nextShardAlarm`): the Analytics Engine export (when bound) and the retention sweep.
	 */
	async alarm(): Promise<void> {
		this.alarmSlot.fired();
		if (!this.storage.hasSchema) return;
		const shard = this.shard();
		// Any alarm of the shard (export, retention) rolls up what a quiet shard has not yet.
		shard.rollUpMetrics();
		const exportDue = this.analytics ? await this.analytics.alarm(shard.metrics) : undefined;
		const sweepDue = this.retention ? await this.retention.sweep(shard) : undefined;
		const next = nextShardAlarm(this.self.now(), [exportDue, sweepDue]);
		if (next !== undefined) await this.alarmSlot.ensureBy(next);
	}

	list(query: ShardListQuery): IndexEntry[] {
		return this.read((shard) => shard.list(query), []);
	}

	counts(): Record<string, number> {
		return this.read((shard) => shard.counts(), {});
	}

	/** This shard's run metrics up to `now` (engine/index/run-metrics.ts). */
	metrics(now: number): ShardMetrics {
		return this.read((shard) => shard.metrics.read(now), { minutes: [], day: { started: 0, completed: 0, errored: 0, terminated: 0 }, durations: { hour: {}, day: {} } });
	}

	countsBy(request: AttributeCountRequest): AttributeCounts {
		return this.read((shard) => shard.countsBy(request), { groups: [], more: false });
	}

	versions(ids: string[]): Record<string, number> {
		return this.read((shard) => shard.versions(ids), {});
	}

	priors(ids: string[]): Record<string, PriorRow | null> {
		return this.read((shard) => shard.priors(ids), Object.fromEntries(ids.map((id) => [id, null])));
	}

	scan(afterId: string, limit: number): IndexEntry[] {
		return this.read((shard) => shard.scan(afterId, limit), []);
	}

	private read<T>(read: (shard: IndexShardStore) => T, empty: T): T {
		return this.storage.hasSchema ? read(this.shard()) : empty;
	}

	private async writable(): Promise<IndexShardStore> {
		await this.storage.ensureSchema();
		return this.shard();
	}

	private shard(): IndexShardStore {
		return (this.store ??= new IndexShardStore(this.storage.db, this.storage.storage, this.self.now));
	}
}
