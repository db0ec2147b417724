import { runInDurableObject } from 'cloudflare:test';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { describe, expect, it } from 'vitest';
import { IndexClient, routeIndexEntry, type ListQuery } from '../../src/client/index-client';
import { instances } from '../../src/client/instance-client';
import { rebalance } from '../../src/client/rebalance';
import { ErrorCode } from '../../src/engine/support/errors';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { compareIn, type ListOrder } from '../../src/engine/index/index-query';
import { defineRegistry } from '../../src/engine/definition/registry';
import type { CheckedCondition, StoredAttributes } from '../../src/engine/index/search-attributes';
import { shardName } from '../../src/engine/object-names';
import type { WorkflowStatus } from '../../src/engine/support/statuses';
import { countsByQuery, listPlan, listQuery } from '../../src/runtime/index-shard-store';
import { Workflow } from '../../src/workflow';
import { settle, stub, testEnv, uniqueId } from '../helpers';
import { testRegistry } from '../worker/index';

const index = () => new IndexClient(testEnv, testRegistry);

/** Every page of a listing, in order. */
async function walk(query: ListQuery, limit: number): Promise<IndexEntry[]> {
	const seen: IndexEntry[] = [];
	let cursor: string | null = null;
	for (let page = 0; page < 500; page++) {
		const result: Awaited<ReturnType<IndexClient['list']>> = await index().list({ ...query, limit, cursor });
		seen.push(...result.items);
		cursor = result.nextCursor;
		if (!cursor) return seen;
	}
	throw new Error('the walk did not end');
}

async function advance(id: string, payload: { stage: string; amount?: number; vip?: boolean; done?: boolean }) {
	await instances.sendEvent(testEnv, { id, event: 'advance', payload });
	await settle(id);
}

describe('search attributes on an instance', () => {
	it('stores the attributes given at create, shows them in the status and lists the instance by them', async () => {
		const id = uniqueId('attr-create');
		await instances.create(testEnv, { type: 'searchable', id, payload: { customerId: 'c' }, attributes: { customerId: `${id}-cust`, amount: 120, vip: true } });
		await settle(id);
		const status = await instances.status(testEnv, { id });
		expect(status.attributes).toEqual({ customerId: `${id}-cust`, amount: 120, vip: true, stage: 'received' });
		const page = await index().list({ type: 'searchable', attributes: { customerId: `${id}-cust` } });
		expect(page.items.map((e) => [e.id, e.attributes])).toEqual([[id, { customerId: `${id}-cust`, amount: 120, vip: true, stage: 'received' }]]);
	});

	it('records step.setAttributes in the history, changes the index entry, and does not apply it again on replay', async () => {
		const id = uniqueId('attr-step');
		await instances.create(testEnv, { type: 'searchable', id, payload: { customerId: 'c' }, attributes: { customerId: id } });
		await settle(id);
		await advance(id, { stage: 'billed', amount: 42 });
		await advance(id, { stage: 'shipped' });
		const history = await instances.history(testEnv, { id, limit: 100 });
		const sets = history.events.filter((e) => e.kind === 'attributes.set');
		expect(sets.map((e) => (e as { step: string }).step)).toEqual(['received', 'stage-0', 'stage-1']);
		expect(sets[1]).toMatchObject({ set: { stage: 'billed', amount: 42 }, attributes: { customerId: id, stage: 'billed', amount: 42 } });
		const [entry] = (await index().list({ type: 'searchable', attributes: { customerId: id } })).items;
		expect(entry).toMatchObject({ status: 'waiting', attributes: { customerId: id, stage: 'shipped', amount: 42 } });
		expect((await index().list({ type: 'searchable', attributes: { customerId: id, stage: 'billed' } })).items).toEqual([]);
	});

	it('refuses an undeclared attribute or a value of the wrong kind at create, and stores nothing', async () => {
		for (const attributes of [{ region: 'eu' }, { amount: '12' }, { vip: 'yes' }, { dueAt: 'tomorrow' }, { customerId: 'x'.repeat(300) }]) {
			const id = uniqueId('attr-bad');
			await expect(instances.create(testEnv, { type: 'searchable', id, payload: { customerId: 'c' }, attributes })).rejects.toMatchObject({
				code: ErrorCode.InvalidSearchAttributes,
			});
			await expect(instances.status(testEnv, { id })).rejects.toMatchObject({ code: ErrorCode.NotFound });
		}
	});
});

/** Attribute values of generated entries: few customers (equality), amounts (ranges, order), two regions, flags. */
function generated(prefix: string, n: number, t0: number): IndexEntry[] {
	const statuses: WorkflowStatus[] = ['running', 'waiting', 'completed', 'errored'];
	return Array.from({ length: n }, (_, i) => {
		const attributes: StoredAttributes = { customerId: `cust-${i % 5}`, stage: i % 2 ? 'eu' : 'us', vip: i % 3 === 0 };
		if (i % 4 !== 3) attributes.amount = (i * 37) % 101;
		if (i % 6 === 0) attributes.dueAt = t0 + i * 1000;
		return { id: `${prefix}-${String(i).padStart(3, '0')}`, type: 'searchable', status: statuses[i % 4]!, createdAt: t0 + (i % 17), updatedAt: t0 + i, version: 1, attributes };
	});
}

function matches(entry: IndexEntry, query: { status?: WorkflowStatus[]; attributes?: Record<string, CheckedCondition> }): boolean {
	if (query.status && !query.status.includes(entry.status)) return false;
	for (const [name, c] of Object.entries(query.attributes ?? {})) {
		const v = entry.attributes?.[name];
		if (v === undefined) return false;
		if (c.op === 'eq' && v !== c.value) return false;
		if (c.op === 'in' && !c.values.includes(v)) return false;
		if (c.op === 'range') {
			const x = v as number;
			if ((c.gt !== undefined && !(x > c.gt)) || (c.gte !== undefined && !(x >= c.gte)) || (c.lt !== undefined && !(x < c.lt)) || (c.lte !== undefined && !(x <= c.lte))) return false;
		}
	}
	return true;
}

describe('attribute queries across shards and pages', () => {
	const cases: [string, Omit<ListQuery, 'type' | 'idPrefix'>, Record<string, CheckedCondition>][] = [
		['keyword equality', { attributes: { customerId: 'cust-2' } }, { customerId: { op: 'eq', value: 'cust-2' } }],
		['boolean equality with a status', { attributes: { vip: true }, status: ['running', 'completed'] }, { vip: { op: 'eq', value: true } }],
		['an in list', { attributes: { customerId: ['cust-1', 'cust-3'] } }, { customerId: { op: 'in', values: ['cust-1', 'cust-3'] } }],
		['a number range', { attributes: { amount: { gte: 20, lt: 70 } } }, { amount: { op: 'range', gte: 20, lt: 70 } }],
		['a range and an equality', { attributes: { amount: { gt: 50 }, stage: 'eu' } }, { amount: { op: 'range', gt: 50 }, stage: { op: 'eq', value: 'eu' } }],
		['ordered by amount, ascending', { order: 'attr:amount:asc' }, { amount: { op: 'range', gte: -1e9 } }],
		['ordered by amount, descending, within a range', { order: 'attr:amount:desc', attributes: { amount: { lte: 60 } } }, { amount: { op: 'range', lte: 60 } }],
		['ordered by customer, with an in list on it', { order: 'attr:customerId:asc', attributes: { customerId: ['cust-0', 'cust-4'] } }, { customerId: { op: 'in', values: ['cust-0', 'cust-4'] } }],
		['ordered by a datetime', { order: 'attr:dueAt:desc' }, { dueAt: { op: 'range', gte: 0 } }],
		['by update time with an equality', { order: 'updatedAt', attributes: { stage: 'us' } }, { stage: { op: 'eq', value: 'us' } }],
	];

	it.for(cases)('answers %s with exactly the matching entries, each once, in order, by pages of 7', async ([, query, expected]) => {
		const prefix = uniqueId('attrq');
		const entries = generated(prefix, 120, 1_000_000);
		await Promise.all(entries.map((e) => routeIndexEntry(testEnv, testRegistry, e)));
		const order = (query.order ?? 'createdAt') as ListOrder;
		const want = entries.filter((e) => matches(e, { ...(query.status ? { status: query.status } : {}), attributes: expected })).sort(compareIn(order));
		const got = await walk({ ...query, type: 'searchable', idPrefix: prefix }, 7);
		expect(got.map((e) => e.id)).toEqual(want.map((e) => e.id));
		expect(want.length).toBeGreaterThan(3);
	});

	it('counts entries per attribute value across shards, under the listing filters', async () => {
		const prefix = uniqueId('attrc');
		const entries = generated(prefix, 80, 2_000_000);
		await Promise.all(entries.map((e) => routeIndexEntry(testEnv, testRegistry, e)));
		const { groups } = await index().countBy({ type: 'searchable', attribute: 'customerId', idPrefix: prefix, status: ['running', 'waiting'], attributes: { vip: false } });
		const want = new Map<string, number>();
		for (const e of entries) if (['running', 'waiting'].includes(e.status) && e.attributes!.vip === false) want.set(e.attributes!.customerId as string, (want.get(e.attributes!.customerId as string) ?? 0) + 1);
		expect(groups).toEqual([...want].sort(([a], [b]) => (a < b ? -1 : 1)).map(([value, count]) => ({ value, count })));
		const vip = await index().countBy({ type: 'searchable', attribute: 'vip', idPrefix: prefix });
		expect(vip.groups).toEqual([
			{ value: false, count: entries.filter((e) => !e.attributes!.vip).length },
			{ value: true, count: entries.filter((e) => e.attributes!.vip).length },
		]);
	});

	it('returns exactly the matching instances across pages while their statuses and attributes change during the walk', async () => {
		const customer = uniqueId('walker');
		const other = `${customer}-other`;
		const ids = Array.from({ length: 40 }, (_, i) => `${customer}-${String(i).padStart(2, '0')}`);
		for (let i = 0; i < ids.length; i += 10) {
			await Promise.all(
				ids.slice(i, i + 10).map((id, j) =>
					instances.create(testEnv, { type: 'searchable', id, payload: { customerId: 'x' }, attributes: { customerId: (i + j) % 4 === 3 ? other : customer, amount: i + j } }),
				),
			);
		}
		await Promise.all(ids.map(settle));
		const matching = ids.filter((_, i) => i % 4 !== 3);
		const seen: string[] = [];
		let cursor: string | null = null;
		let changed = 0;
		const finished = new Set<string>();
		for (let page = 0; page < 30; page++) {
			const result: Awaited<ReturnType<IndexClient['list']>> = await index().list({ type: 'searchable', attributes: { customerId: customer }, limit: 4, cursor });
			seen.push(...result.items.map((e) => e.id));
			cursor = result.nextCursor;
			if (!cursor) break;
			// Move some instances not seen yet: a new stage and amount (the status goes waiting -> running -> waiting), some finish.
			const unseen = ids.filter((id) => !seen.includes(id) && !finished.has(id)).slice(0, 3);
			for (const [k, id] of unseen.entries()) {
				await advance(id, { stage: `p${page}`, amount: 1000 + page, ...(k === 0 ? { done: true } : {}) });
				if (k === 0) finished.add(id);
			}
			changed += unseen.length;
		}
		expect(changed).toBeGreaterThan(10);
		expect([...seen].sort()).toEqual(matching);
	});
});

describe('attribute queries within the SQL limits', () => {
	it('answers the largest query the checks allow in statements of at most 100 bound parameters', async () => {
		const many = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
		// Two lists of 20 (one drives, one is bound whole), every status, a range and a time filter.
		const page = await index().list({
			type: 'searchable', limit: 1000, idPrefix: 'none-such', createdAfter: 0, updatedBefore: Date.now() + 1,
			status: ['running', 'waiting', 'completed', 'errored', 'terminated', 'paused', 'sleeping', 'created', 'queued', 'diverged', 'rolling_back'],
			attributes: { customerId: many('c', 20), stage: many('s', 20), amount: { gte: 0, lt: 10 }, vip: true, dueAt: { gt: 0 } },
		});
		expect(page.items).toEqual([]);
	});

	it('refuses lists that hold more than 40 values together with INVALID_QUERY', async () => {
		const many = (n: number) => Array.from({ length: n }, (_, i) => `v${i}`);
		await expect(index().list({ type: 'searchable', attributes: { customerId: many(20), stage: many(20), vip: [true, false] } })).rejects.toMatchObject({
			code: ErrorCode.InvalidQuery,
			message: expect.stringMatching(/at most 40 values/),
		});
	});
});

describe('attributes through the index guarantees', () => {
	it('keeps the attributes of the newest version when an older delivery arrives late, and drops them with a tombstone', async () => {
		const id = uniqueId('attr-late');
		const shard = stub(shardName('searchable', 0));
		const entry: IndexEntry = { id, type: 'searchable', status: 'waiting', createdAt: 5, updatedAt: 9, version: 3, attributes: { customerId: `${id}-new` } };
		await shard.indexWrite([entry]);
		await shard.indexWrite([{ ...entry, version: 2, attributes: { customerId: `${id}-old` } }]);
		const list = (customerId: string) =>
			shard.indexList({ order: 'createdAt', limit: 10, attributes: { customerId: { op: 'eq', value: customerId } } });
		expect(await list(`${id}-old`)).toEqual({ ok: true, value: [] });
		expect(await list(`${id}-new`)).toMatchObject({ ok: true, value: [{ id, version: 3, attributes: { customerId: `${id}-new` } }] });
		await shard.indexRemove([{ id, version: 4, createdAt: 5 }]);
		expect(await list(`${id}-new`)).toEqual({ ok: true, value: [] });
		const rows = await runInDurableObject(shard, (_, state) => state.storage.sql.exec('SELECT count(*) AS n FROM index_attributes WHERE entry_id = ?', id).one().n);
		expect(rows).toBe(0);
	});

	it('carries the attributes when a resize moves entries to their new shards', async () => {
		class Movable extends Workflow<{}, void> {
			static override readonly type = 'movable';
			static override readonly attributes = { customerId: 'keyword', amount: 'number' } as const;
			async run() {}
		}
		const before = defineRegistry({ movable: { workflow: Movable, shards: 2 } });
		const during = defineRegistry({ movable: { workflow: Movable, shards: 4, previousShards: 2 } });
		const after = defineRegistry({ movable: { workflow: Movable, shards: 4 } });
		const prefix = uniqueId('move');
		const entries: IndexEntry[] = Array.from({ length: 30 }, (_, i) => ({
			id: `${prefix}-${i}`, type: 'movable', status: 'completed', createdAt: 100 + i, updatedAt: 100 + i, version: 2,
			attributes: { customerId: i % 2 ? 'odd' : 'even', amount: i },
		}));
		await Promise.all(entries.map((e) => routeIndexEntry(testEnv, before, e)));
		let cursor: string | undefined;
		for (let i = 0; i < 20; i++) {
			const progress = await rebalance(testEnv, during, 'movable', { ...(cursor ? { cursor } : {}), batchSize: 50 });
			if (progress.done) break;
			cursor = progress.cursor!;
		}
		const client = new IndexClient(testEnv, after);
		const odd = await client.list({ type: 'movable', idPrefix: prefix, attributes: { customerId: 'odd', amount: { gte: 10 } }, order: 'attr:amount:asc', limit: 100 });
		expect(odd.items.map((e) => e.attributes!.amount)).toEqual([11, 13, 15, 17, 19, 21, 23, 25, 27, 29]);
	});
});

describe('attribute query plans', () => {
	const plan = async (query: Parameters<typeof listQuery>[1]) => {
		const shard = stub(shardName('searchable', 1));
		await shard.indexWrite([{ id: uniqueId('plan'), type: 'searchable', status: 'running', createdAt: 1, updatedAt: 1, version: 1, attributes: { customerId: 'p', amount: 1 } }]);
		return runInDurableObject(shard, (_, state) => {
			const db = drizzle(state.storage);
			return listPlan(query).map((part) => {
				const { sql: text, params } = listQuery(db, query, part).toSQL();
				return state.storage.sql.exec(`EXPLAIN QUERY PLAN ${text}`, ...params).toArray().map((row) => String(row.detail)).join('\n');
			});
		});
	};
	const eq = (value: string | number) => ({ op: 'eq' as const, value });

	it.for([
		['keyword equality, by creation', { order: 'createdAt', limit: 50, attributes: { customerId: eq('p') } }],
		['keyword equality with statuses, after a cursor', { order: 'createdAt', limit: 50, status: ['running', 'waiting'], attributes: { customerId: eq('p') }, after: { at: 5, id: 'x' } }],
		['an in list, one walk per value', { order: 'createdAt', limit: 50, attributes: { customerId: { op: 'in', values: ['p', 'q'] } } }],
		['order by a number attribute', { order: 'attr:amount:asc', limit: 50 }],
		['a range ordered by its attribute, after a cursor', { order: 'attr:amount:desc', limit: 50, attributes: { amount: { op: 'range', gte: 1, lt: 9 } }, after: { at: 1, id: 'x', value: 5 } }],
		['equality on one attribute, a range on another', { order: 'createdAt', limit: 50, attributes: { customerId: eq('p'), amount: { op: 'range', gt: 3 } } }],
	] as const)('answers %s from the attributes index, without sorting', async ([, query]) => {
		for (const text of await plan(query as never)) {
			expect(text).toMatch(/(SEARCH|SCAN) index_attributes USING (COVERING )?INDEX index_attributes_value/);
			expect(text).not.toMatch(/SEARCH other EXISTS USING (COVERING )?INDEX index_attributes_value/);
			// The entry by its key: index_entries is keyed by its id (WITHOUT ROWID, drizzle/0020), no separate id index.
			expect(text).toMatch(/SEARCH index_entries USING PRIMARY KEY \(id=\?\)/);
			expect(text).not.toMatch(/TEMP B-TREE/);
		}
	});

	it.for([
		['with a status', ['running'], 'index_entries_status_created'],
		['over every live status (one walk per status)', undefined, 'index_entries_status_created'],
	] as const)('answers a range in the default order %s from the entries index, checking the attribute by primary key, without sorting', async ([, status, expected]) => {
		const texts = await plan({ order: 'createdAt', limit: 50, ...(status ? { status } : {}), attributes: { amount: { op: 'range', gte: 3 } } } as never);
		for (const text of texts) {
			expect(text).toMatch(new RegExp(`INDEX ${expected}\\b`));
			// Not a range of the value index per entry: that scans every entry's row in the range for each one.
			expect(text).toMatch(/SEARCH other EXISTS USING INDEX sqlite_autoindex_index_attributes_1 \(entry_id=\? AND name=\?\)/);
			expect(text).not.toMatch(/TEMP B-TREE/);
		}
	});

	it('answers an id prefix from a range of the primary key (sorting only the ids under the prefix)', async () => {
		const [text] = await plan({ order: 'createdAt', limit: 50, idPrefix: 'pay-1' } as never);
		expect(text).toMatch(/SEARCH index_entries USING PRIMARY KEY \(id>\? AND id<\?\)/);
	});

	it('counts by an attribute value from the attributes index, without sorting', async () => {
		const shard = stub(shardName('searchable', 1));
		const text = await runInDurableObject(shard, (_, state) => {
			const db = drizzle(state.storage);
			const { sql: query, params } = countsByQuery(db, { attribute: 'customerId', kind: 'keyword', filters: { status: ['running'] } }).toSQL();
			return state.storage.sql.exec(`EXPLAIN QUERY PLAN ${query}`, ...params).toArray().map((row) => String(row.detail)).join('\n');
		});
		expect(text).toMatch(/index_attributes USING (COVERING )?INDEX index_attributes_value \(name=\?\)/);
		expect(text).not.toMatch(/TEMP B-TREE/);
	});
});

