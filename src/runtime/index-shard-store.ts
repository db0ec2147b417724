import { and, asc, desc, eq, gt, inArray, lt, notInArray, sql, type SQL } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import * as schema from '../db/schema';
import type { EntryPosition, IndexEntry } from '../engine/index-entry';
import { compareIn, type ShardListQuery } from '../engine/index-query';
import type { WorkflowStatus } from '../engine/types';
import { metricsDelta } from '../engine/run-metrics';
import { IndexMetricsStore } from './index-metrics-store';

const { indexEntries: t } = schema;

/** Status of a tombstone left behind when an entry moves to another shard. */
export const MOVED = '__moved';
/** Status of a tombstone left where a deleted instance's entry was. */
export const DELETED = '__deleted';
/** Rows that are entries, not tombstones. */
const live = () => notInArray(t.status, [MOVED, DELETED]);
/**
 * How long a deletion tombstone is kept after the shard wrote it: far past the life of any
 * write of the deleted incarnation that could still be in flight (docs/decisions.md).
 */
export const DELETED_TOMBSTONE_GRACE_MS = 7 * 86_400_000;
/** Tombstones looked at per query while collecting them (each call loops over chunks up to its limit). */
const COLLECT_CHUNK = 500;

/**
 * Whether the incoming row (`excluded`) is newer than the stored one: a later
 * incarnation of the id (`created_at`), or the same one at a higher version
 * (`compareEntries`). Tombstones written before incarnations counted have
 * `created_at` 0 and compare by version alone.
 */
function newer(orEqual: SQL): SQL {
	return sql`CASE WHEN ${t.createdAt} = 0 OR excluded.created_at = 0
		THEN excluded.version > ${t.version} OR (${orEqual} AND excluded.version >= ${t.version})
		ELSE (excluded.created_at, excluded.version) > (${t.createdAt}, ${t.version})
			OR (${orEqual} AND (excluded.created_at, excluded.version) >= (${t.createdAt}, ${t.version})) END`;
}

const columns = { id: t.id, type: t.type, status: t.status, createdAt: t.createdAt, updatedAt: t.updatedAt, version: t.version, codeVersion: t.codeVersion, parentId: t.parentId };

/** The SQL side of one index shard. Every read is answered from an index that fits it. */
export class IndexShardStore {
	/** The upsert of every delivery, prepared once per shard object. */
	private readonly upsert;
	/** The row of one id as it stands (a point read by primary key), to tell what a write changed. */
	private readonly current;
	/** Run metrics per minute, added to as entries land (engine/run-metrics.ts). */
	readonly metrics: IndexMetricsStore;

	constructor(
		private readonly db: DrizzleSqliteDODatabase<typeof schema>,
		private readonly storage: DurableObjectStorage,
	) {
		const p = sql.placeholder;
		this.upsert = db
			.insert(t)
			.values({ id: p('id'), type: p('type'), status: p('status'), createdAt: p('createdAt'), updatedAt: p('updatedAt'), version: p('version'), codeVersion: p('codeVersion'), parentId: p('parentId') } as never)
			.onConflictDoUpdate({
				target: t.id,
				set: {
					type: sql`excluded.type`, status: sql`excluded.status`, createdAt: sql`excluded.created_at`,
					updatedAt: sql`excluded.updated_at`, version: sql`excluded.version`, codeVersion: sql`excluded.code_version`, parentId: sql`excluded.parent_id`,
				},
				// A move tombstone yields to its own version too: an entry can move back (4 -> 8 -> 4 shards).
				// A deletion tombstone yields only to a later incarnation (its version is past the last entry's).
				setWhere: newer(sql`${t.status} = ${MOVED}`),
			})
			.prepare();
		this.current = db.select({ status: t.status, createdAt: t.createdAt, version: t.version }).from(t).where(eq(t.id, p('id'))).prepare();
		this.metrics = new IndexMetricsStore(db);
	}

	/**
	 * Keeps, per id, the newest entry (latest incarnation, then highest
	 * version); older deliveries arriving late change nothing.
	 */
	write(entries: IndexEntry[], options: { moved?: boolean } = {}): void {
		// A copy that a rebalance moves here is no news: the metrics counted it where it landed first.
		const count = !options.moved;
		const one = (e: IndexEntry) => {
			const prior = count ? (this.current.get({ id: e.id }) as { status: string; createdAt: number; version: number } | undefined) : undefined;
			this.upsert.run({ id: e.id, type: e.type, status: e.status, createdAt: e.createdAt, updatedAt: e.updatedAt, version: e.version, codeVersion: e.codeVersion ?? null, parentId: e.parentId ?? null });
			if (!count) return;
			// Counted only if the shard kept it: a late, older delivery changed nothing.
			const now = this.current.get({ id: e.id }) as { status: string; createdAt: number; version: number } | undefined;
			if (now && now.createdAt === e.createdAt && now.version === e.version && now.status === e.status) this.metrics.record(metricsDelta(prior ?? null, e));
		};
		// One entry (an instance's delivery) needs no transaction of its own: its upsert and metrics
		// run with no await between them, so they are stored together (the implicit transaction).
		if (entries.length === 1) one(entries[0]!);
		else this.storage.transactionSync(() => entries.forEach(one));
	}

	/**
	 * Replaces entries with tombstones at their position: `MOVED` for entries
	 * that went to another shard, `DELETED` for deleted instances. A tombstone
	 * never replaces a newer entry, and no older write can replace it. Its
	 * `updated_at` is when it was written (`at`, the shard's clock), so it can be
	 * collected once it can no longer matter (`collectDeleted`).
	 */
	tombstone(items: EntryPosition[], status: typeof MOVED | typeof DELETED = MOVED, at = 0): void {
		this.storage.transactionSync(() => {
			for (const { id, version, createdAt = 0 } of items) {
				this.db
					.insert(t)
					.values({ id, type: '', status, createdAt, updatedAt: at, version })
					.onConflictDoUpdate({
						target: t.id,
						set: {
							status,
							version: sql`excluded.version`,
							updatedAt: sql`excluded.updated_at`,
							// An item without its incarnation (an older caller) keeps the row's.
							createdAt: sql`CASE WHEN excluded.created_at = 0 THEN ${t.createdAt} ELSE excluded.created_at END`,
						},
						setWhere: newer(sql`1`),
					})
					.run();
			}
		});
	}

	/**
	 * Deletes move tombstones whose id `foreign` says this shard does not own (at most
	 * `limit`): once no layout routes those ids here, no write they guard against can come.
	 * Walks the tombstones in the `(status, created_at, id)` index order.
	 */
	collectMoved(foreign: (id: string) => boolean, limit: number): { removed: number; more: boolean } {
		let removed = 0;
		let after = { createdAt: -1, id: '' };
		for (;;) {
			const chunk = this.db
				.select({ id: t.id, createdAt: t.createdAt })
				.from(t)
				.where(and(eq(t.status, MOVED), sql`(${t.createdAt}, ${t.id}) > (${after.createdAt}, ${after.id})`))
				.orderBy(asc(t.createdAt), asc(t.id))
				.limit(COLLECT_CHUNK)
				.all();
			const doomed = chunk.filter((row) => foreign(row.id)).slice(0, limit - removed).map((row) => row.id);
			this.deleteRows(doomed, MOVED);
			removed += doomed.length;
			if (chunk.length < COLLECT_CHUNK) return { removed, more: false };
			if (removed >= limit) return { removed, more: true };
			after = chunk.at(-1)!;
		}
	}

	/**
	 * Deletes deletion tombstones written before `before` (at most `limit`, oldest first).
	 * Tombstones without a write time (written before they carried one) are kept.
	 */
	collectDeleted(before: number, limit: number): { removed: number; more: boolean } {
		const doomed = this.db
			.select({ id: t.id })
			.from(t)
			.where(and(eq(t.status, DELETED), gt(t.updatedAt, 0), lt(t.updatedAt, before)))
			.orderBy(asc(t.updatedAt), asc(t.id))
			.limit(limit + 1)
			.all()
			.map((row) => row.id);
		const now = doomed.slice(0, limit);
		this.deleteRows(now, DELETED);
		return { removed: now.length, more: doomed.length > limit };
	}

	/** Deletes the rows of `ids` that still have `status`, in one transaction (bound parameters kept under 100 a statement). */
	private deleteRows(ids: string[], status: typeof MOVED | typeof DELETED): void {
		if (ids.length === 0) return;
		this.storage.transactionSync(() => {
			for (let i = 0; i < ids.length; i += 90) {
				this.db.delete(t).where(and(inArray(t.id, ids.slice(i, i + 90)), eq(t.status, status))).run();
			}
		});
	}

	/**
	 * At most `limit` live rows after `query.after`, newest first in
	 * `query.order`. With several statuses, one index-ordered query per status, merged.
	 */
	list(query: ShardListQuery): IndexEntry[] {
		const statuses: (WorkflowStatus | undefined)[] = query.status?.length ? [...new Set(query.status)] : [undefined];
		const rows = statuses.flatMap((status) => this.listOne(query, status));
		if (statuses.length > 1) rows.sort(compareIn(query.order));
		return rows.slice(0, query.limit);
	}

	private listOne(query: ShardListQuery, status: WorkflowStatus | undefined): IndexEntry[] {
		return listQuery(this.db, query, status).all() as IndexEntry[];
	}

	/** Live entries per status. */
	counts(): Record<string, number> {
		const rows = this.db
			.select({ status: t.status, n: sql<number>`count(*)` })
			.from(t)
			.where(live())
			.groupBy(t.status)
			.all();
		return Object.fromEntries(rows.map((r) => [r.status, r.n]));
	}

	/** Versions of the live entries among `ids`: any number of them, bound as one JSON array (one parameter). */
	versions(ids: string[]): Record<string, number> {
		if (ids.length === 0) return {};
		const rows = this.db
			.select({ id: t.id, version: t.version })
			.from(t)
			.where(and(sql`${t.id} IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`, live()))
			.all();
		return Object.fromEntries(rows.map((r) => [r.id, r.version]));
	}

	/** Live entries in id order after `afterId`, for rebalancing. */
	scan(afterId: string, limit: number): IndexEntry[] {
		return this.db
			.select(columns)
			.from(t)
			.where(and(gt(t.id, afterId), live()))
			.orderBy(asc(t.id))
			.limit(limit)
			.all() as IndexEntry[];
	}
}

/**
 * The SQL of one shard listing for one status (or all live ones): keyset, filters, LIMIT.
 * Each order has its own pair of indexes, `(status, <order>, id)` and `(<order>, id)`,
 * so SQLite walks one backwards and never sorts.
 */
export function listQuery(db: DrizzleSqliteDODatabase<typeof schema>, query: ShardListQuery, status: WorkflowStatus | undefined) {
	const key = query.order === 'updatedAt' ? t.updatedAt : t.createdAt;
	const where: (SQL | undefined)[] = [status ? eq(t.status, status) : live()];
	if (query.after) where.push(sql`(${key}, ${t.id}) < (${query.after.at}, ${query.after.id})`);
	if (query.updatedAfter !== undefined) where.push(gt(t.updatedAt, query.updatedAfter));
	if (query.updatedBefore !== undefined) where.push(lt(t.updatedAt, query.updatedBefore));
	if (query.createdAfter !== undefined) where.push(gt(t.createdAt, query.createdAfter));
	if (query.createdBefore !== undefined) where.push(lt(t.createdAt, query.createdBefore));
	// No SQL index: the status/order index walks and this filters (code versions are few per type).
	if (query.codeVersion !== undefined) where.push(eq(t.codeVersion, query.codeVersion));
	// The (parent_id, created_at, id) index serves the default order; children of one parent are few.
	if (query.parent !== undefined) where.push(eq(t.parentId, query.parent));
	return db
		.select(columns)
		.from(t)
		.where(and(...where))
		.orderBy(desc(key), desc(t.id))
		.limit(query.limit);
}
