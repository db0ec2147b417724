import { decodeCursor, encodeCursor } from '../engine/index/cursor';
import { compareEntries, type IndexEntry } from '../engine/index/index-entry';
import { mergeListings } from '../engine/index/merge-listings';
import { ErrorCode, ValidationError } from '../engine/support/errors';
import {
	DEFAULT_LIMIT,
	DEFAULT_ORDER,
	assertValidFilters,
	assertValidLimit,
	assertValidOrder,
	attributeOrder,
	compareValues,
	positionOf,
	type AttributeCounts,
	type ListFilters,
	type ListOrder,
	type ShardRow,
	type TimeOrder,
} from '../engine/index/index-query';
import {
	assertDeclaredAttribute,
	checkAttributeFilters,
	type AttributeDeclaration,
	type AttributeFilters,
	type AttributesOf,
	type AttributeValues,
	type StoredAttributeValue,
} from '../engine/index/search-attributes';
import type { IndexLayout, Registry, ResolvedEntry } from '../engine/definition/registry';
import { readShards, shardIndex } from '../engine/index/shard';
import { openIndexWatch, type WatchEvent, type WatchQuery } from './index-watch';
import { WORKFLOW_STATUSES, type WorkflowStatus } from '../engine/support/statuses';
import { summarizeMetrics, type ShardMetrics, type TypeMetrics } from '../engine/index/run-metrics';
import { cursorKey } from './cursor-key';
import type { ShardflowEnv } from './instance-client';
import { callRole } from './stubs';
import { groupScoped } from './group-scope';
import { groupOfLayout, type LayoutGroups } from './index-group';
import type { ResolvedGroup } from '../engine/groups/groups';

export interface ListQuery<D extends AttributeDeclaration = AttributeDeclaration> extends Omit<ListFilters, 'attributes'> {
	/** Omit to list every registered type (then no attribute condition or order applies). */
	type?: string;
	limit?: number;
	/**
	 * `createdAt` (default): newest created first; a page walk returns every
	 * entry that existed when it began exactly once. `updatedAt`: most recently
	 * changed first; entries updated during a walk can be skipped or repeated.
	 * `attr:<name>:asc|desc`: by a search attribute of the type, then createdAt and id; only
	 * entries that have it; like updatedAt, a value changed during a walk can move an entry.
	 */
	order?: TimeOrder | `attr:${keyof D & string}:${'asc' | 'desc'}`;
	cursor?: string | null;
	/**
	 * Conditions on the type's search attributes (needs `type`), all of which must hold: a value
	 * (equality), a list (any of, up to 20), or bounds `{ gte, lt, ... }` on numbers and datetimes.
	 * @example { customerId: '42', amount: { gte: 100 }, region: ['eu', 'us'] }
	 */
	attributes?: AttributeFilters<D>;
}

/** The workflow definitions of a typed registry (`defineRegistry`), or never for a plain layout. */
type DefinitionsOf<L> = L extends { definitions: infer D extends Record<string, { workflow: unknown }> } ? D : never;
/** The type names a layout knows: a typed registry's keys, else any string. */
export type TypeNameOf<L> = [DefinitionsOf<L>] extends [never] ? string : keyof DefinitionsOf<L> & string;
/** The search attributes of type `T` in layout `L` (any declared name for a plain layout). */
export type DeclaredAttributesOf<L, T> = [DefinitionsOf<L>] extends [never]
	? AttributeDeclaration
	: T extends keyof DefinitionsOf<L>
		? AttributesOf<DefinitionsOf<L>[T]['workflow']>
		: {};

/** A count of one type's entries per value of one attribute (`IndexClient.countBy`), under a listing's filters. */
export type CountByQuery<D extends AttributeDeclaration = AttributeDeclaration> = Omit<ListQuery<D>, 'limit' | 'order' | 'cursor' | 'type'> & {
	type: string;
	attribute: keyof D & string;
};

/** `IndexClient.ofType(type)`: the listing and the grouped count of one type, typed by its attributes. */
export interface TypedIndexReads<D extends AttributeDeclaration> {
	list(query?: Omit<ListQuery<D>, 'type'>): Promise<TypedListPage<D>>;
	countBy(query: Omit<CountByQuery<D>, 'type'>): Promise<AttributeCounts>;
}

/** An index entry of a type whose attributes are `D`. */
export type TypedIndexEntry<D extends AttributeDeclaration> = Omit<IndexEntry, 'attributes'> & { attributes?: AttributeValues<D> };

/** A page of one type's entries, their attributes typed by its class (`ofType(type).list`). */
export interface TypedListPage<D extends AttributeDeclaration> extends Omit<ListPage, 'items'> {
	items: TypedIndexEntry<D>[];
}

export interface ListPage {
	items: IndexEntry[];
	/** Pass back as `cursor` for the next page; null on the last page. */
	nextCursor: string | null;
}

/**
 * Delivers one index entry to the shard that owns its id. While resizing, it
 * also tombstones the entry in its previous-layout shard, so a stale status
 * there cannot surface under a status filter. A removal (a deleted instance)
 * leaves deletion tombstones in both. Before such a write it reads the
 * previous-layout shard's row, which the run metrics count against when the
 * home shard has none (engine/index/resize-metrics.ts): a redelivery of a run
 * counted before the resize is not counted again where it lands.
 */
export async function routeIndexEntry(env: ShardflowEnv, registry: Registry, entry: IndexEntry): Promise<void> {
	const config = registry.get(entry.type);
	const home = shardIndex(entry.id, config.shards);
	const previous = config.previousShards === undefined ? undefined : shardIndex(entry.id, config.previousShards);
	const moving = previous !== undefined && previous !== home;
	const position = { id: entry.id, version: entry.version, createdAt: entry.createdAt };
	if (entry.removed) await callRole(env, 'indexRemove', [entry.type, home], [position]);
	else {
		// Read first, written after: the home write then counts against what the previous shard held, and a retry
		// (the tombstone below failed) finds its own row at home, which it counts against instead.
		const priors = moving ? await callRole(env, 'indexPriors', [entry.type, previous], [entry.id]) : undefined;
		await callRole(env, 'indexWrite', [entry.type, home], [entry], ...(priors ? [{ previous: priors }] : []));
	}
	if (moving) await callRole(env, entry.removed ? 'indexRemove' : 'indexTombstone', [entry.type, previous], [position]);
}

/**
 * Reads of the sharded index: fan out, merge, drop stale copies, page by keyset in a time order
 * or by a search attribute. Typed by the registry it is given: with `defineRegistry`'s, a type
 * name, an attribute name or an attribute value of the wrong kind does not compile.
 *
 * @example
 * const page = await new IndexClient(env, registry).list({ type: 'payment', attributes: { customerId: '42', amount: { gte: 100 } }, order: 'attr:amount:desc' });
 */
export class IndexClient<L extends IndexLayout = IndexLayout> {
	private readonly env: ShardflowEnv;
	private readonly baseEnv: ShardflowEnv;
	/** The group whose index this client reads (docs/residency.md): its shards live in the group's jurisdiction. */
	readonly group: ResolvedGroup;

	constructor(
		env: ShardflowEnv,
		/** The host's registry, or, in a Worker without the workflow classes, `defineIndexLayout` with the same shard counts (and attributes). */
		private readonly registry: L,
		/** `group`: the group to read (default: the default group); one not declared is refused (INVALID_GROUP). */
		options: { group?: string } = {},
	) {
		this.group = groupOfLayout(registry as unknown as LayoutGroups, options.group);
		this.baseEnv = env;
		this.env = groupScoped(env, this.group.place);
	}

	/** The same reads in another group (a group's index holds only its own instances). */
	inGroup(group: string): IndexClient<L> {
		return new IndexClient(this.baseEnv, this.registry, { group });
	}

	/** What a cursor is bound to besides its filters: the type and, outside the default group, the group (a cursor of one group's listing is refused in another's). */
	private cursorScope(type: string | undefined): string | undefined {
		return this.group.place.tag === null ? type : `${type ?? ''}~${this.group.place.tag}`;
	}

	/**
	 * Status changes of the instances of a type that match `status`, live (a query
	 * subscription, see `watchIndex` and docs/streams.md). Resolves once every shard of the
	 * type accepted it: no change after that is missed.
	 * @example for await (const event of await index.watch({ type: 'payment', status: ['errored'] })) page(event);
	 */
	watch(query: WatchQuery): Promise<AsyncGenerator<WatchEvent, void, undefined>> {
		return openIndexWatch(this.env, this.registry, query);
	}

	/**
	 * The reads of one type, typed by its class's `static attributes` (with `defineRegistry`'s
	 * registry): an undeclared attribute, a value of the wrong kind or an order by an undeclared
	 * attribute does not compile.
	 * @example const page = await index.ofType('payment').list({ attributes: { customerId: '42', amount: { gte: 100 } }, order: 'attr:amount:desc' });
	 */
	ofType<T extends TypeNameOf<L>>(type: T): TypedIndexReads<DeclaredAttributesOf<L, T>> {
		return {
			list: (query = {}) => this.list({ ...(query as ListQuery), type }) as Promise<TypedListPage<DeclaredAttributesOf<L, T>>>,
			countBy: (query) => this.countBy({ ...(query as unknown as CountByQuery), type }),
		};
	}

	/** A page of the index; for typed attribute conditions use `ofType(type).list`. */
	async list(query: ListQuery = {}): Promise<ListPage> {
		const limit = query.limit ?? DEFAULT_LIMIT;
		assertValidLimit(limit);
		const order: ListOrder = query.order ?? DEFAULT_ORDER;
		assertValidOrder(order);
		const filters = this.filtersOf(query, order);
		const types = query.type === undefined ? this.registry.types() : [this.registry.get(query.type).type];
		const after = query.cursor ? await decodeCursor(await cursorKey(this.env), query.cursor, order, this.cursorScope(query.type), filters) : undefined;

		// Each shard is asked for what the merge needs, in rounds (merge-listings.ts), not for `limit` rows.
		const shards = types.flatMap((type) => {
			const config = this.registry.get(type);
			return readShards(config).map((n) => ({ config, n }));
		});
		const { window, more } = await mergeListings(shards, { limit, order, after }, async ({ config, n }, from, batch) => {
			const rows = await callRole(this.env, 'indexList', [config.type, n], { ...filters, order, limit: batch, ...(from ? { after: from } : {}) });
			return rows.map((row) => ({ ...row, shard: n, config }));
		});
		const items = await this.dropStale(window);
		const last = window.at(-1);
		return {
			items: items.map(({ id, type, status, createdAt, updatedAt, version, codeVersion, parentId, attributes }) => ({
				id, type, status, createdAt, updatedAt, version, ...(codeVersion ? { codeVersion } : {}), ...(parentId ? { parentId } : {}),
				...(attributes ? { attributes } : {}),
			})),
			nextCursor: more && last ? await encodeCursor(await cursorKey(this.env), positionOf(last, order), order, this.cursorScope(query.type), filters) : null,
		};
	}

	/** The checked filters of a query (INVALID_QUERY naming the first problem), as a listing would apply them. */
	checkFilters(query: ListQuery): ListFilters {
		if (query.type !== undefined) this.registry.get(query.type);
		return this.filtersOf(query, DEFAULT_ORDER);
	}

	/**
	 * The checked filters of a query: the attribute conditions against the type's declaration
	 * (unknown names, values of the wrong kind: INVALID_QUERY), which an order by attribute needs too.
	 */
	private filtersOf(query: ListQuery, order: ListOrder): ListFilters {
		const filters: ListFilters = {
			...(query.status?.length ? { status: query.status } : {}),
			...pick(query, ['createdAfter', 'createdBefore', 'updatedAfter', 'updatedBefore', 'codeVersion', 'parent', 'idPrefix']),
		};
		assertValidFilters(filters);
		const byAttribute = attributeOrder(order);
		const conditions = query.attributes && Object.keys(query.attributes).length > 0 ? query.attributes : undefined;
		if (!conditions && !byAttribute) return filters;
		const declared = this.attributesOf(query.type, byAttribute ? `order ${order}` : 'attribute conditions');
		if (byAttribute) assertDeclaredAttribute(query.type!, declared, byAttribute.name);
		return conditions ? { ...filters, attributes: checkAttributeFilters(query.type!, declared, conditions) } : filters;
	}

	private attributesOf(type: string | undefined, what: string): AttributeDeclaration {
		if (type === undefined) throw new ValidationError(ErrorCode.InvalidQuery, `${what} need a type: search attributes are declared per workflow type`);
		return this.registry.get(type).attributes ?? {};
	}

	/**
	 * Instances of one type per value of one of its search attributes, under a listing's filters
	 * (status, times, other attributes), summed across its shards, in value order. At most 1,000
	 * values per shard (`more` when some were cut). While a resize is under way an entry may be
	 * counted in both layouts' shards, as `counts` does.
	 * @example const { groups } = await index.countBy({ type: 'payment', attribute: 'region', status: ['running'] });
	 */
	async countBy(query: CountByQuery): Promise<AttributeCounts> {
		const filters = this.filtersOf(query as ListQuery, DEFAULT_ORDER);
		const declared = this.attributesOf(query.type, 'a count by attribute');
		const kind = assertDeclaredAttribute(query.type, declared, query.attribute);
		const entry = this.registry.get(query.type);
		const perShard = await Promise.all(
			readShards(entry).map((n) => callRole(this.env, 'indexCountsBy', [entry.type, n], { attribute: query.attribute, kind, filters })),
		);
		const totals = new Map<string, { value: StoredAttributeValue; count: number }>();
		for (const { groups } of perShard) {
			for (const group of groups) {
				const key = JSON.stringify(group.value);
				const seen = totals.get(key);
				if (seen) seen.count += group.count;
				else totals.set(key, { ...group });
			}
		}
		const groups = [...totals.values()].sort((a, b) => compareValues(a.value, b.value));
		return { groups, more: perShard.some((p) => p.more) };
	}

	/** Instances per status for one type, summed across its shards. */
	async counts(type: string): Promise<Record<WorkflowStatus, number>> {
		const entry = this.registry.get(type);
		const perShard = await Promise.all(readShards(entry).map((n) => callRole(this.env, 'indexCounts', [type, n])));
		const total = Object.fromEntries(WORKFLOW_STATUSES.map((s) => [s, 0])) as Record<WorkflowStatus, number>;
		for (const counts of perShard) for (const [status, n] of Object.entries(counts)) total[status as WorkflowStatus] += n;
		return total;
	}

	/**
	 * A type's run metrics at `now`: every shard (both layouts while resizing) answers its
	 * per-minute counters and duration histograms, summed here (engine/index/run-metrics.ts). The
	 * cost is a day of minutes per shard, whatever the number of instances.
	 */
	async metrics(type: string, now: number): Promise<TypeMetrics> {
		return summarizeMetrics(type, now, await this.shardMetrics(type, now));
	}

	/** Each shard's own answer, histograms whole (what `GET /metrics` turns into buckets). */
	async shardMetrics(type: string, now: number): Promise<ShardMetrics[]> {
		const entry = this.registry.get(type);
		return Promise.all(readShards(entry).map((n) => callRole(this.env, 'indexMetrics', [type, n], { now })));
	}

	/**
	 * A copy of an entry is shown only from the shard that owns its id under
	 * the current layout, or from a previous-layout shard while the owner has
	 * nothing as new. So one id appears once, with its newest status.
	 */
	private async dropStale<T extends ShardRow & { config: ReturnType<IndexLayout['get']> }>(window: T[]): Promise<T[]> {
		const newest = new Map<string, T>();
		for (const row of window) {
			const seen = newest.get(row.id);
			if (!seen || compareEntries(row, seen) > 0) newest.set(row.id, row);
		}
		const foreign = [...newest.values()].filter((row) => shardIndex(row.id, row.config.shards) !== row.shard);
		const superseded = new Set<string>();
		const byHome = new Map<string, T[]>();
		for (const row of foreign) {
			const fromPreviousLayout =
				row.config.previousShards !== undefined && shardIndex(row.id, row.config.previousShards) === row.shard;
			if (!fromPreviousLayout) {
				superseded.add(row.id);
				continue;
			}
			const key = `${row.type}\u0000${shardIndex(row.id, row.config.shards)}`;
			const group = byHome.get(key);
			if (group) group.push(row);
			else byHome.set(key, [row]);
		}
		await Promise.all(
			[...byHome].map(async ([key, rows]) => {
				const [type, n] = key.split('\u0000') as [string, string];
				const versions = await callRole(this.env, 'indexVersions', [type, Number(n)], rows.map((r) => r.id));
				for (const row of rows) if ((versions[row.id] ?? -1) >= row.version) superseded.add(row.id);
			}),
		);
		return window.filter((row) => newest.get(row.id) === row && !superseded.has(row.id));
	}
}

function pick<T extends object, K extends keyof T>(source: T, keys: K[]): Partial<Pick<T, K>> {
	const out: Partial<Pick<T, K>> = {};
	for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
	return out;
}
