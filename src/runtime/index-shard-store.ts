import { and, asc, desc, eq, gt, inArray, lt, lte, notInArray, sql, type SQL } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import type { AnySQLiteColumn } from 'drizzle-orm/sqlite-core';
import * as schema from '../db/schema';
import type { EntryPosition, IndexEntry } from '../engine/index/index-entry';
import { attributeOrder, compareIn, type AttributeCountRequest, type AttributeCounts, type ListFilters, type ShardListQuery } from '../engine/index/index-query';
import { attributesJson, toSqlValue, type CheckedCondition } from '../engine/index/search-attributes';
import { WORKFLOW_STATUSES, type WorkflowStatus } from '../engine/support/statuses';
import { resizeMetricsDelta, type IndexWriteOptions, type PriorRow } from '../engine/index/resize-metrics';
import { IndexMetricsStore } from './index-metrics-store';
import { IndexMetricsRollup, type MarkedRow } from './index-metrics-rollup';
import { DELETED, MOVED, newer, prepareUpserts } from './index-entry-upsert';
import { createdAtMost, storedUpdatedAt } from '../engine/index/updated-bounds';
import { UpdatedWalks } from './index-updated-walks';
import { EntryAges, newestUpdated, type CreatedBefore } from './index-updated-listing';

const { indexEntries: t, indexAttributes: a } = schema;

export { DELETED, MOVED };
/** Rows that are entries, not tombstones. */
const live = () => notInArray(t.status, [MOVED, DELETED]);
/**
 * How long a deletion tombstone is kept after the shard wrote it: far past the life of any
 * write of the deleted incarnation that could still be in flight (docs/decisions.md).
 */
export const DELETED_TOMBSTONE_GRACE_MS = 7 * 86_400_000;
/** Tombstones looked at per query while collecting them (each call loops over chunks up to its limit). */
const COLLECT_CHUNK = 500;

const columns = {
	id: t.id, type: t.type, status: t.status, createdAt: t.createdAt, updatedAt: t.updatedAt, version: t.version, codeVersion: t.codeVersion, parentId: t.parentId,
	attributes: t.attributes, generation: t.generation,
};

/** A row as selected: the attributes still JSON text. */
type SelectedRow = Omit<IndexEntry, 'attributes' | 'generation'> & { attributes: string | null; generation: number };

/** An entry as the shard answers it: its attributes parsed, absent when it has none; its generation absent when 0. */
function toEntry({ attributes, generation, ...row }: SelectedRow): IndexEntry {
	const entry: IndexEntry = generation ? { ...row, generation } : row;
	return attributes ? { ...entry, attributes: JSON.parse(attributes) } : entry;
}

/** Distinct values one shard answers for a count grouped by an attribute (the rest is reported cut). */
export const MAX_GROUPS = 1000;

/** The SQL side of one index shard. Every read is answered from an index that fits it. */
export class IndexShardStore {
	/** The upserts of a delivery (index-entry-upsert.ts); the queries by `updated_at`, bounded by `created_at` (index-updated-walks.ts). */
	private readonly upsert;
	private readonly walks: UpdatedWalks;
	/** How long the entries of each status have stood, which bounds a page in `updatedAt` order (index-updated-listing.ts). */
	private readonly ages: EntryAges;
	/** The row of one id as it stands (a point read by primary key), to tell what a write changed. */
	private readonly current;
	/** Run metrics per minute (engine/index/run-metrics.ts), rolled up from the marks the entries carry. */
	readonly metrics: IndexMetricsStore;
	/** The marks of run metrics on the entries, and their rollup into `metrics` (index-metrics-rollup.ts). */
	readonly rollup: IndexMetricsRollup;
	/** Where the budgeted collection of deletion tombstones stopped (in memory: a new object starts over). */
	private collectFrom: { createdAt: number; id: string } | null = null;

	private readonly insertAttribute;
	private readonly deleteAttributes;

	constructor(
		private readonly db: DrizzleSqliteDODatabase,
		private readonly storage: DurableObjectStorage,
		/** The shard's clock: where its metrics rollup stands. */
		now: () => number = Date.now,
	) {
		const p = sql.placeholder;
		this.upsert = prepareUpserts(db);
		this.walks = new UpdatedWalks(db);
		this.ages = new EntryAges(db);
		this.current = db
			.select({ status: t.status, createdAt: t.createdAt, updatedAt: t.updatedAt, version: t.version, generation: t.generation, attributes: t.attributes, pendingMetrics: t.pendingMetrics, parentId: t.parentId })
			.from(t)
			.where(eq(t.id, p('id')))
			.prepare();
		this.metrics = new IndexMetricsStore(db);
		this.rollup = new IndexMetricsRollup(db, storage.kv, this.metrics, now);
		this.insertAttribute = db.insert(a).values({ entryId: p('entryId'), name: p('name'), value: p('value'), createdAt: p('createdAt') } as never).prepare();
		this.deleteAttributes = db.delete(a).where(eq(a.entryId, p('id'))).prepare();
	}

	/**
	 * Keeps, per id, the newest entry (latest incarnation, then highest
	 * version); older deliveries arriving late change nothing. An entry that wins
	 * with other attributes (or another incarnation) rewrites its attribute rows in
	 * the same transaction; most deliveries (a status change) leave them alone.
	 */
	write(entries: IndexEntry[], options: IndexWriteOptions = {}): void {
		// A copy that a rebalance moves here is no news: the metrics counted it where it landed first.
		const count = !options.moved;
		const one = (delivered: IndexEntry) => {
			// `created_at <= updated_at` on every row: what bounds the queries by updated_at (engine/index/updated-bounds.ts).
			const updatedAt = storedUpdatedAt(delivered);
			const e = updatedAt === delivered.updatedAt ? delivered : { ...delivered, updatedAt };
			const attributes = e.attributes ? attributesJson(e.attributes) : null;
			const prior = this.current.get({ id: e.id }) as (MarkedRow & PriorRow & { attributes: string | null; parentId: string | null }) | undefined;
			// What the write counts rides on the entry's own statement (a mark the rollup adds up later), or, for a
			// delivery the rollup has passed, goes into the minute rows at once. While resizing, against the previous
			// layout's row when this shard has none (engine/index/resize-metrics.ts).
			const delta = count ? resizeMetricsDelta(prior ?? null, options.previous?.[e.id], e) : {};
			const plan = this.rollup.plan(prior, delta, e.updatedAt);
			// The same status, incarnation and parent: their index entries stay as they are (1 row written, not 2).
			const sameKeys = prior !== undefined && prior.status === e.status && prior.createdAt === e.createdAt && prior.parentId === (e.parentId ?? null);
			const won = (sameKeys ? this.upsert.sameKeys : this.upsert.full).get({
				id: e.id, type: e.type, status: e.status, createdAt: e.createdAt, updatedAt: e.updatedAt, version: e.version, codeVersion: e.codeVersion ?? null, parentId: e.parentId ?? null,
				attributes, pendingMetrics: plan.pending, generation: e.generation ?? 0,
			});
			// Counted and indexed only if the shard kept it: a late, older delivery changed nothing.
			if (!won) return;
			this.rollup.wrote(plan, e.id);
			this.ages.wrote(e);
			const unchanged = prior && prior.attributes === attributes && prior.createdAt === e.createdAt && prior.status !== MOVED && prior.status !== DELETED;
			if (unchanged) return;
			if (prior) this.deleteAttributes.run({ id: e.id });
			for (const [name, value] of Object.entries(e.attributes ?? {})) {
				this.insertAttribute.run({ entryId: e.id, name, value: toSqlValue(value), createdAt: e.createdAt });
			}
		};
		// Reading the stored row and writing must not interleave with another write: one transaction each.
		this.storage.transactionSync(() => entries.forEach(one));
	}

	/** Rolls the entries' metric marks up into the minute rows if a minute has closed since the last rollup (index-metrics-rollup.ts). */
	rollUpMetrics(): boolean {
		// Every delivery asks: most find no minute closed, and open no transaction to learn it.
		if (!this.rollup.due()) return false;
		return this.storage.transactionSync(() => this.rollup.rollUpIfDue());
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
				const prior = this.current.get({ id }) as MarkedRow | undefined;
				const won = this.db
					.insert(t)
					.values({ id, type: '', status, createdAt, updatedAt: at, version })
					.onConflictDoUpdate({
						target: t.id,
						set: {
							status,
							attributes: null,
							pendingMetrics: null,
							version: sql`excluded.version`,
							updatedAt: sql`excluded.updated_at`,
							// An item without its incarnation (an older caller) keeps the row's.
							createdAt: sql`CASE WHEN excluded.created_at = 0 THEN ${t.createdAt} ELSE excluded.created_at END`,
						},
						setWhere: newer(sql`1`),
					})
					.returning({ id: t.id })
					.get();
				// The entry's run metrics not rolled up yet go into the minute rows before its row stops being one.
				if (won) this.rollup.fold(prior);
				// A tombstone has no attributes: its entry's rows go (an older tombstone that lost changes nothing).
				this.db.delete(a).where(and(eq(a.entryId, id), sql`EXISTS (SELECT 1 FROM ${t} WHERE ${t.id} = ${id} AND ${t.status} IN (${MOVED}, ${DELETED}))`)).run();
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
	 * Deletes deletion tombstones written before `before` (at most `limit`, oldest created first; those without a
	 * write time are kept). With a `budget` of rows read, it goes on where the last budgeted call stopped (index-updated-walks.ts).
	 */
	collectDeleted(before: number, limit: number, budget?: number): { removed: number; more: boolean } {
		const walked = this.walks.deletedBefore(before, limit, budget ?? Infinity, budget === undefined ? null : this.collectFrom);
		if (budget !== undefined) this.collectFrom = walked.next;
		this.deleteRows(walked.ids, DELETED);
		return { removed: walked.ids.length, more: walked.ids.length === limit && walked.next !== null };
	}

	/** Deletes the rows of `ids` that still have `status`, in one transaction (bound parameters kept under 100 a statement). */
	private deleteRows(ids: string[], status: typeof MOVED | typeof DELETED): void {
		if (ids.length === 0) return;
		this.storage.transactionSync(() => {
			for (let i = 0; i < ids.length; i += 90) {
				// `+status`: found by the primary key, id by id; on the status index SQLite read every tombstone of the status.
				this.db.delete(t).where(and(inArray(t.id, ids.slice(i, i + 90)), sql`+${t.status} = ${status}`)).run();
			}
		});
	}

	/**
	 * At most `limit` live rows after `query.after` in `query.order`. Each part of the answer is
	 * one index-ordered query (`listPlan`); with several parts (statuses, or the values of an
	 * `in` list on the attribute that drives), their rows are merged.
	 */
	list(query: ShardListQuery): IndexEntry[] {
		const parts = listPlan(query);
		const rows = parts.flatMap((part) => this.partRows(query, part).map(toEntry));
		if (parts.length > 1) rows.sort(compareIn(query.order));
		return rows.slice(0, query.limit);
	}

	/** One part's rows: one query, or, for a status in `updatedAt` order, a bounded backward walk (index-updated-listing.ts). */
	private partRows(query: ShardListQuery, part: ListPart): SelectedRow[] {
		if (query.order !== 'updatedAt' || !part.status || part.driver) return listQuery(this.db, query, part).all() as SelectedRow[];
		const walk = (before: CreatedBefore | undefined, size?: number) => listQuery(this.db, query, part, { before, size }).all() as SelectedRow[];
		return newestUpdated(walk, query.limit, () => this.ages.of(part.status!));
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

	/**
	 * Live entries per value of one attribute (of kind `kind`), under the listing's filters, in
	 * value order: the `(name, value, ...)` index groups them without a sort. At most
	 * {@link MAX_GROUPS} values; `more` when there were others.
	 */
	countsBy(request: AttributeCountRequest): AttributeCounts {
		const rows = countsByQuery(this.db, request).all();
		const groups = rows.slice(0, MAX_GROUPS).map((r) => ({ value: request.kind === 'boolean' ? r.value === 1 : r.value, count: r.n }));
		return { groups, more: rows.length > MAX_GROUPS };
	}

	/**
	 * The live rows among `ids` as the run metrics compare a write against them (status, incarnation, generation,
	 * version; null: none, or a tombstone): what a resize's router reads from the previous layout's shard first.
	 */
	priors(ids: string[]): Record<string, PriorRow | null> {
		const found: Record<string, PriorRow | null> = Object.fromEntries(ids.map((id) => [id, null]));
		if (ids.length === 0) return found;
		const rows = this.db
			.select({ id: t.id, status: t.status, createdAt: t.createdAt, version: t.version, generation: t.generation })
			.from(t)
			.where(and(sql`${t.id} IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`, live()))
			.all();
		for (const { id, ...row } of rows) found[id] = row;
		return found;
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
		return (
			this.db
				.select(columns)
				.from(t)
				.where(and(gt(t.id, afterId), live()))
				.orderBy(asc(t.id))
				.limit(limit)
				.all() as SelectedRow[]
		).map(toEntry);
	}

	/**
	 * The oldest `updated_at` of the entries in `status` (undefined: none): a walk of `(status, created_at, id)`
	 * that stops at the first entry created after it (index-updated-walks.ts). The retention sweep arms its alarm from it.
	 */
	oldestUpdated(status: WorkflowStatus): number | undefined {
		return this.walks.oldestUpdated(status);
	}

	/** The entries in `status` last changed at or before `updatedAtMost`, oldest created first: a walk of the entries created by then. */
	updatedBy(status: WorkflowStatus, updatedAtMost: number, limit: number): IndexEntry[] {
		const ids = this.walks.updatedBy(status, updatedAtMost, limit);
		if (ids.length === 0) return [];
		const rows = this.db
			.select(columns)
			.from(t)
			.where(sql`${t.id} IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`)
			.all() as SelectedRow[];
		const order = new Map(ids.map((id, i) => [id, i]));
		return rows.map(toEntry).sort((x, y) => order.get(x.id)! - order.get(y.id)!);
	}
}

/**
 * One index-ordered query of a listing: entries of one status (or every live one), or, when an
 * attribute drives, the rows of that attribute with one value (or any value its condition allows).
 */
export interface ListPart {
	status?: WorkflowStatus;
	/** The attribute whose `(name, value, created_at, entry_id)` index the query walks. */
	driver?: { name: string; condition: CheckedCondition | undefined };
}

/**
 * How a listing is answered, so that every shape walks an index in its order and never sorts
 * (the `updatedAt` order, which no index serves since drizzle/0023, walks `(status, created_at, id)`
 * backwards until no entry further back can be newer: index-updated-listing.ts):
 * - ordered by an attribute: that attribute's index (its condition, if any, bounds the walk;
 *   an `in` list is one walk per value);
 * - by createdAt with an equality (or `in`) on an attribute: that attribute's index, whose rows
 *   carry created_at, so the walk is in the listing's order;
 * - otherwise: the entries' `(status, <time>, id)` index, one walk per status as before, the
 *   attribute conditions checked per row through the attributes' primary key.
 */
export function listPlan(query: ShardListQuery): ListPart[] {
	const byAttribute = attributeOrder(query.order);
	const conditions = query.attributes ?? {};
	let driver: string | undefined = byAttribute?.name;
	if (!driver && query.order === 'createdAt') {
		const names = Object.keys(conditions);
		driver = names.find((n) => conditions[n]!.op === 'eq') ?? names.find((n) => conditions[n]!.op === 'in');
	}
	if (driver === undefined) {
		// A parent's children walk the partial parent index, and an id prefix a range of the primary
		// key (both few rows, sorted): every live status at once.
		if (!query.status?.length && (query.parent !== undefined || query.idPrefix !== undefined)) return [{}];
		// Every live status is one walk per status: the entries keep only the `(status, created_at, id)`
		// index (drizzle/0018 dropped the status-less ones, a row per new entry each; 0023 the updated_at
		// one). In createdAt order each walk reads at most `limit` rows, so a page reads at most one
		// `limit` per status, merged in code; in updatedAt order each reads the entries created within
		// the status's longest age of its page (index-updated-listing.ts) and keeps the `limit` newest.
		const statuses = query.status?.length ? [...new Set(query.status)] : WORKFLOW_STATUSES;
		return statuses.map((status) => ({ status }));
	}
	const condition = conditions[driver];
	if (condition?.op === 'in') return condition.values.map((value) => ({ driver: { name: driver, condition: { op: 'eq', value } } }));
	return [{ driver: { name: driver, condition } }];
}

/** An attribute condition on a value column (the driving rows', or another attribute's in an EXISTS). */
function conditionOn(value: SQL | AnySQLiteColumn, condition: CheckedCondition): SQL {
	switch (condition.op) {
		case 'eq':
			return sql`${value} = ${toSqlValue(condition.value)}`;
		case 'in':
			return sql`${value} IN (${sql.join(condition.values.map((v) => sql`${toSqlValue(v)}`), sql`, `)})`;
		case 'range': {
			const bounds = (['gt', 'gte', 'lt', 'lte'] as const).filter((b) => condition[b] !== undefined);
			const op = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;
			return sql.join(bounds.map((b) => sql`${value} ${sql.raw(op[b])} ${condition[b]!}`), sql` AND `);
		}
	}
}

/**
 * The filters on the entry row: status (one, a list, or every live one), times, code version,
 * parent, id prefix, and each attribute condition but the driving one's, as a lookup of
 * `(entry_id, name)` in the attributes' primary key.
 */
function entryFilters(
	filters: ListFilters & { status?: WorkflowStatus[] },
	status: WorkflowStatus | undefined,
	driver: string | undefined,
	order?: ShardListQuery['order'],
	after?: ShardListQuery['after'],
	/** False past a walk's first chunk: its `(created_at, id)` position is tighter, and SQLite must range on it alone. */
	createdUpper = true,
): SQL[] {
	const where: (SQL | undefined)[] = [];
	if (status) where.push(eq(t.status, status));
	else if (driver !== undefined && filters.status?.length) where.push(inArray(t.status, filters.status));
	else where.push(live());
	if (filters.updatedAfter !== undefined) where.push(gt(t.updatedAt, filters.updatedAfter));
	if (filters.updatedBefore !== undefined) where.push(lt(t.updatedAt, filters.updatedBefore));
	// No index leads with updated_at: the bound it implies on created_at narrows the walk of `(status, created_at, id)`.
	const createdBound = createdUpper ? createdAtMost(filters, order, after) : undefined;
	if (createdBound !== undefined) where.push(lte(t.createdAt, createdBound));
	if (filters.createdAfter !== undefined) where.push(gt(t.createdAt, filters.createdAfter));
	if (filters.createdBefore !== undefined && createdUpper) where.push(lt(t.createdAt, filters.createdBefore));
	// No SQL index: the status/order index walks and this filters (code versions are few per type).
	if (filters.codeVersion !== undefined) where.push(eq(t.codeVersion, filters.codeVersion));
	// The (parent_id, created_at, id) index serves the default order; children of one parent are few.
	if (filters.parent !== undefined) where.push(eq(t.parentId, filters.parent));
	// A range of the primary key (ids are ASCII: the prefix with its last character raised bounds it).
	if (filters.idPrefix !== undefined) {
		const p = filters.idPrefix;
		where.push(sql`${t.id} >= ${p}`, sql`${t.id} < ${p.slice(0, -1) + String.fromCharCode(p.charCodeAt(p.length - 1) + 1)}`);
	}
	for (const [name, condition] of Object.entries(filters.attributes ?? {})) {
		if (name === driver) continue;
		// `other` names the attribute rows of the entry at hand (the driving ones are `index_attributes`).
		// The unary + keeps SQLite from answering it by a range of the value index (all entries' rows
		// in the range, scanned per entry): it looks up (entry_id, name) in the primary key.
		where.push(
			sql`EXISTS (SELECT 1 FROM ${a} AS other WHERE other.entry_id = ${t.id} AND other.name = ${name} AND ${conditionOn(sql.raw('+other.value'), condition)})`,
		);
	}
	return where.filter((w) => w !== undefined);
}

/**
 * The SQL of one part of a shard listing (see `listPlan`): keyset, filters, LIMIT.
 * The default order walks `(status, created_at, id)` backwards for one status and never sorts (a
 * part without a status is a parent's children, through the parent index, or an id prefix, through
 * the primary key); an attribute drives through `(name, value, created_at, entry_id)`. The
 * `updatedAt` order walks the same index from the created_at bound its cursor and `updatedBefore`
 * imply (engine/index/updated-bounds.ts): `walk` asks for one chunk of it, or for the `limit` newest
 * of the rest, sorted (index-updated-listing.ts; docs/decisions.md "One listing index per shard").
 */
export function listQuery(db: DrizzleSqliteDODatabase, query: ShardListQuery, part: ListPart, walk?: { before: CreatedBefore | undefined; size?: number }) {
	const { driver } = part;
	if (!driver) {
		const key = query.order === 'updatedAt' ? t.updatedAt : t.createdAt;
		const where = entryFilters(query, part.status, undefined, query.order, query.after, !walk?.before);
		if (query.after) where.push(sql`(${key}, ${t.id}) < (${query.after.at}, ${query.after.id})`);
		// A page in updatedAt order (index-updated-listing.ts): a chunk of the backward walk in index order (`size`),
		// or the `limit` newest of what lies before the walk's position, sorted.
		if (walk) {
			if (walk.before) where.push(sql`(${t.createdAt}, ${t.id}) < (${walk.before.createdAt}, ${walk.before.id})`);
			const rows = db.select(columns).from(t).where(and(...where));
			return walk.size === undefined ? rows.orderBy(desc(key), desc(t.id)).limit(query.limit) : rows.orderBy(desc(t.createdAt), desc(t.id)).limit(walk.size);
		}
		return db
			.select(columns)
			.from(t)
			.where(and(...where))
			.orderBy(desc(key), desc(t.id))
			.limit(query.limit);
	}
	const byAttribute = attributeOrder(query.order);
	const where = [eq(a.name, driver.name), ...entryFilters(query, part.status, driver.name)];
	if (driver.condition) where.push(conditionOn(a.value, driver.condition));
	if (byAttribute) {
		const direction = byAttribute.direction === 'asc' ? asc : desc;
		if (query.after) {
			const value = toSqlValue(query.after.value!);
			const cmp = byAttribute.direction === 'asc' ? sql.raw('>') : sql.raw('<');
			where.push(sql`(${a.value}, ${a.createdAt}, ${a.entryId}) ${cmp} (${value}, ${query.after.at}, ${query.after.id})`);
		}
		return db
			.select(columns)
			.from(a)
			.innerJoin(t, eq(t.id, a.entryId))
			.where(and(...where))
			.orderBy(direction(a.value), direction(a.createdAt), direction(a.entryId))
			.limit(query.limit);
	}
	if (query.after) where.push(sql`(${a.createdAt}, ${a.entryId}) < (${query.after.at}, ${query.after.id})`);
	return db
		.select(columns)
		.from(a)
		.innerJoin(t, eq(t.id, a.entryId))
		.where(and(...where))
		.orderBy(desc(a.createdAt), desc(a.entryId))
		.limit(query.limit);
}

/** The SQL of a count grouped by an attribute: its index walks `name = ?` in value order, each row joined to its entry for the filters. */
export function countsByQuery(db: DrizzleSqliteDODatabase, request: AttributeCountRequest) {
	const where = [eq(a.name, request.attribute), ...entryFilters(request.filters, undefined, request.attribute)];
	const driving = request.filters.attributes?.[request.attribute];
	if (driving) where.push(conditionOn(a.value, driving));
	return db
		.select({ value: a.value, n: sql<number>`count(*)` })
		.from(a)
		.innerJoin(t, eq(t.id, a.entryId))
		.where(and(...where))
		.groupBy(a.value)
		.orderBy(asc(a.value))
		.limit(MAX_GROUPS + 1);
}
