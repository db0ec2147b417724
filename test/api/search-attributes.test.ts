import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/api/app';
import { settle, uniqueId } from '../helpers';
import { api } from './helpers';
import { registry } from '../../examples/demo/workflows/registry';

async function createSearchable(id: string, attributes: Record<string, unknown>) {
	const res = await api('POST', '/workflows', { type: 'searchable', id, payload: { customerId: 'x' }, attributes });
	expect(res.status).toBe(201);
	await settle(id);
}

describe('GET /workflows with attr.* filters', () => {
	it('lists by attribute equality, a range and an attribute order, and shows each entry attributes', async () => {
		const customer = uniqueId('http-cust');
		const ids = [0, 1, 2, 3].map((i) => `${customer}-${i}`);
		await Promise.all(ids.map((id, i) => createSearchable(id, { customerId: customer, amount: [50, 150, 100, 300][i], vip: i % 2 === 0 })));
		const res = await api('GET', `/workflows?type=searchable&attr.customerId=${customer}&attr.amount.gte=100&order=-attr.amount`);
		expect(res.status).toBe(200);
		expect(res.json.items.map((e: { id: string; attributes: { amount: number } }) => [e.id, e.attributes.amount])).toEqual([
			[ids[3], 300],
			[ids[1], 150],
			[ids[2], 100],
		]);
		const vip = await api('GET', `/workflows?type=searchable&attr.customerId=${customer}&attr.vip=true&order=attr.amount`);
		expect(vip.json.items.map((e: { id: string }) => e.id)).toEqual([ids[0], ids[2]]);
		const either = await api('GET', `/workflows?type=searchable&attr.customerId=${customer}&attr.amount=50&attr.amount=300&order=attr.amount`);
		expect(either.json.items.map((e: { id: string }) => e.id)).toEqual([ids[0], ids[3]]);
		const byPrefix = await api('GET', `/workflows?type=searchable&idPrefix=${customer}-&attr.amount.lt=120`);
		expect(byPrefix.json.items.map((e: { id: string }) => e.id).sort()).toEqual([ids[0], ids[2]]);
	});

	it('pages an attribute order with the cursor it issued, and refuses that cursor under another order', async () => {
		const customer = uniqueId('http-page');
		const ids = Array.from({ length: 5 }, (_, i) => `${customer}-${i}`);
		await Promise.all(ids.map((id, i) => createSearchable(id, { customerId: customer, amount: 10 - i })));
		const first = await api('GET', `/workflows?type=searchable&attr.customerId=${customer}&order=attr.amount&limit=2`);
		const second = await api('GET', `/workflows?type=searchable&attr.customerId=${customer}&order=attr.amount&limit=2&cursor=${first.json.nextCursor}`);
		expect([...first.json.items, ...second.json.items].map((e: { id: string }) => e.id)).toEqual([ids[4], ids[3], ids[2], ids[1]]);
		const wrong = await api('GET', `/workflows?type=searchable&attr.customerId=${customer}&order=-attr.amount&limit=2&cursor=${first.json.nextCursor}`);
		expect(wrong.status).toBe(400);
		expect(wrong.json.error.code).toBe('INVALID_CURSOR');
	});

	it.for([
		['an undeclared attribute', 'type=searchable&attr.region=eu', /declares no search attribute "region"/],
		['a number that is not one', 'type=searchable&attr.amount=abc', /attr\.amount must be a number/],
		['a boolean that is not one', 'type=searchable&attr.vip=yes', /attr\.vip must be true or false/],
		['a range on a keyword', 'type=searchable&attr.customerId.gte=a', /ranges .* apply to number and datetime/],
		['an attribute without a type', 'attr.customerId=42', /need a type/],
		['an order by an undeclared attribute', 'type=searchable&order=attr.region', /declares no search attribute "region"/],
		['a value and bounds on one attribute', 'type=searchable&attr.amount=1&attr.amount.gt=0', /not both/],
		['an unknown operator', 'type=searchable&attr.amount.between=1', /unknown parameter/],
		['a hexadecimal number', 'type=searchable&attr.amount=0x14', /attr\.amount must be a number in JSON syntax/],
		['a number ending in a point', 'type=searchable&attr.amount.gte=20.', /attr\.amount\.gte must be a number in JSON syntax/],
		['a number starting with a point', 'type=searchable&attr.amount.lt=.2e2', /attr\.amount\.lt must be a number in JSON syntax/],
		['a number with spaces', 'type=searchable&attr.amount=%2020', /must be a number in JSON syntax/],
		['a bare 4-digit datetime (a year, or 2 s into 1970?)', 'type=searchable&attr.dueAt.lt=2024', /attr\.dueAt\.lt must be milliseconds since the epoch \(12 digits or more.*\) or an ISO 8601 date/],
		['an ISO 8601 basic date (1 March 2024, or 5.6 h into 1970?)', 'type=searchable&attr.dueAt.lt=20240301', /attr\.dueAt\.lt must be milliseconds since the epoch \(12 digits or more/],
		['a bare year as createdAfter', 'type=searchable&createdAfter=2024', /createdAfter: must be milliseconds since the epoch \(12 digits or more/],
		['an ISO 8601 basic date as createdBefore', 'createdBefore=20240301', /createdBefore: must be milliseconds/],
		['epoch seconds as updatedAfter', 'updatedAfter=1714557600', /updatedAfter: must be milliseconds/],
		['a datetime on a day the month does not have', 'type=searchable&attr.dueAt.lt=2024-02-30', /attr\.dueAt\.lt must be/],
		['a datetime with a time and no zone', 'type=searchable&attr.dueAt.gt=2024-05-01T10:00', /attr\.dueAt\.gt must be/],
		['a misspelt parameter', 'type=searchable&stauts=waiting', /unknown query parameter "stauts"/],
		['a parameter the listing does not take', 'type=searchable&sort=created', /unknown query parameter "sort"/],
		['the reserved attribute name __proto__', 'type=searchable&attr.__proto__=x', /"__proto__" is reserved/],
		['the reserved attribute name constructor', 'type=searchable&attr.constructor=x', /"constructor" is reserved/],
		['an order by the reserved name prototype', 'type=searchable&order=attr.prototype', /"prototype" is reserved/],
	] as const)('answers 400 INVALID_QUERY for %s', async ([, query, message]) => {
		const res = await api('GET', `/workflows?${query}`);
		expect(res.status).toBe(400);
		expect(res.json.error.code).toBe('INVALID_QUERY');
		expect(res.json.error.message).toMatch(message);
	});

	it('reads numbers in JSON syntax, exponents and negatives included', async () => {
		const customer = uniqueId('http-json-number');
		await Promise.all([0, 1].map((i) => createSearchable(`${customer}-${i}`, { customerId: customer, amount: [-1.5, 2000][i] })));
		const ids = async (query: string) => (await api('GET', `/workflows?type=searchable&attr.customerId=${customer}&${query}&order=attr.amount`)).json.items.map((e: { id: string }) => e.id);
		expect(await ids('attr.amount.gte=2e3')).toEqual([`${customer}-1`]);
		expect(await ids('attr.amount=-1.5')).toEqual([`${customer}-0`]);
		expect(await ids('attr.amount.lt=1E-1')).toEqual([`${customer}-0`]);
	});

	it('reads createdAfter and createdBefore as the attributes read a datetime: ms of 12 digits or more, or ISO 8601', async () => {
		const customer = uniqueId('http-created');
		await createSearchable(`${customer}-0`, { customerId: customer });
		const ids = async (query: string) => (await api('GET', `/workflows?type=searchable&attr.customerId=${customer}&${query}`)).json.items.map((e: { id: string }) => e.id);
		expect(await ids('createdAfter=2000-01-01')).toEqual([`${customer}-0`]);
		expect(await ids('createdBefore=2000-01-01T00:00Z')).toEqual([]);
		expect(await ids(`createdAfter=${Date.UTC(2000, 0, 1)}`)).toEqual([`${customer}-0`]);
		const counts = await api('GET', `/types/searchable/counts?by=attr.customerId&attr.customerId=${customer}&createdAfter=2000-01-01`);
		expect(counts.json.groups).toEqual([{ value: customer, count: 1 }]);
	});

	it('reads a datetime as ms since the epoch (12 digits or more) or ISO 8601, a date alone being midnight UTC', async () => {
		const customer = uniqueId('http-datetime');
		const due = [Date.UTC(2024, 4, 1, 10), Date.UTC(2024, 4, 2)];
		await Promise.all(due.map((dueAt, i) => createSearchable(`${customer}-${i}`, { customerId: customer, dueAt })));
		const ids = async (query: string) => (await api('GET', `/workflows?type=searchable&attr.customerId=${customer}&${query}&order=attr.dueAt`)).json.items.map((e: { id: string }) => e.id);
		expect(await ids('attr.dueAt.lt=2024-05-02')).toEqual([`${customer}-0`]);
		expect(await ids('attr.dueAt.gte=2024-05-02')).toEqual([`${customer}-1`]);
		expect(await ids('attr.dueAt=2024-05-01T12:00:00%2B02:00')).toEqual([`${customer}-0`]);
		expect(await ids('attr.dueAt=2024-05-01T10:00:00.000Z')).toEqual([`${customer}-0`]);
		expect(await ids(`attr.dueAt.gt=${due[0]}`)).toEqual([`${customer}-1`]);
	});

	it.for([
		['__proto__', { ['__proto__']: 'x' }],
		['constructor', { constructor: 'x' }],
		['prototype', { prototype: 'x' }],
	] as const)('answers 400 INVALID_SEARCH_ATTRIBUTES for a create with the reserved attribute name %s, and creates nothing', async ([name]) => {
		const id = uniqueId('http-reserved');
		// Written as text: an object literal's own "__proto__" key would set its prototype instead.
		const body = `{"type":"searchable","id":"${id}","payload":{"customerId":"x"},"attributes":{"${name}":"x"}}`;
		const res = await api('POST', '/workflows', body);
		expect(res.status).toBe(400);
		expect(res.json.error.code).toBe('INVALID_SEARCH_ATTRIBUTES');
		expect(res.json.error.message).toContain(`"${name}" is reserved`);
		expect((await api('GET', `/workflows/${id}`)).status).toBe(404);
	});

	it("answers 400 INVALID_SEARCH_ATTRIBUTES for a create with a datetime beyond JavaScript's Date range, and creates nothing", async () => {
		const id = uniqueId('http-far-date');
		const res = await api('POST', '/workflows', { type: 'searchable', id, payload: { customerId: 'x' }, attributes: { dueAt: -8640000000000001 } });
		expect(res.status).toBe(400);
		expect(res.json.error.code).toBe('INVALID_SEARCH_ATTRIBUTES');
		expect(res.json.error.message).toMatch(/dueAt.*Date can hold/);
		expect((await api('GET', `/workflows/${id}`)).status).toBe(404);
	});

	it('answers 400 INVALID_SEARCH_ATTRIBUTES for a create with an undeclared attribute or a wrong value, and creates nothing', async () => {
		const id = uniqueId('http-bad');
		const res = await api('POST', '/workflows', { type: 'searchable', id, payload: { customerId: 'x' }, attributes: { amount: 'lots' } });
		expect(res.status).toBe(400);
		expect(res.json.error.code).toBe('INVALID_SEARCH_ATTRIBUTES');
		expect((await api('GET', `/workflows/${id}`)).status).toBe(404);
	});
});

describe('GET /types/{type}/counts', () => {
	it('counts instances per value of an attribute under status and attribute filters', async () => {
		const customer = uniqueId('http-count');
		await Promise.all([0, 1, 2].map((i) => createSearchable(`${customer}-${i}`, { customerId: customer, vip: i > 0 })));
		const res = await api('GET', `/types/searchable/counts?by=attr.vip&attr.customerId=${customer}&status=waiting`);
		expect(res.status).toBe(200);
		expect(res.json).toEqual({ type: 'searchable', attribute: 'vip', groups: [{ value: false, count: 1 }, { value: true, count: 2 }], more: false });
		expect((await api('GET', '/types/searchable/counts?by=attr.nope')).status).toBe(400);
	});

	it('counts under updatedAfter and updatedBefore, as the docs promise (ms of 12 digits or more, or ISO 8601)', async () => {
		const customer = uniqueId('http-count-upd');
		const ids = [0, 1, 2].map((i) => `${customer}-${i}`);
		await Promise.all(ids.map((id, i) => createSearchable(id, { customerId: customer, vip: i > 0 })));
		const listed = await api('GET', `/workflows?type=searchable&attr.customerId=${customer}`);
		const mark = Math.max(...listed.json.items.map((e: { updatedAt: number }) => e.updatedAt));
		await new Promise((resolve) => setTimeout(resolve, 5));
		// One instance moves on (it takes an event): only its entry is updated after the mark.
		expect((await api('POST', `/workflows/${ids[1]}/events/advance`, { stage: 'later' })).status).toBeLessThan(300);
		await settle(ids[1]!);
		const after = await api('GET', `/types/searchable/counts?by=attr.vip&attr.customerId=${customer}&updatedAfter=${mark}`);
		expect([after.status, after.json.groups]).toEqual([200, [{ value: true, count: 1 }]]);
		const before = await api('GET', `/types/searchable/counts?by=attr.vip&attr.customerId=${customer}&updatedBefore=${mark + 1}`);
		expect(before.json.groups).toEqual([{ value: false, count: 1 }, { value: true, count: 1 }]);
		const iso = await api('GET', `/types/searchable/counts?by=attr.vip&attr.customerId=${customer}&updatedAfter=${new Date(mark).toISOString()}`);
		expect(iso.json.groups).toEqual([{ value: true, count: 1 }]);
		const year = await api('GET', `/types/searchable/counts?by=attr.vip&updatedAfter=2024`);
		expect([year.status, year.json.error.code]).toEqual([400, 'INVALID_QUERY']);
	});

	it('refuses a parameter it does not take with 400 INVALID_QUERY naming it', async () => {
		const res = await api('GET', '/types/searchable/counts?by=attr.vip&limit=5');
		expect(res.status).toBe(400);
		expect(res.json.error).toMatchObject({ code: 'INVALID_QUERY', message: expect.stringContaining('"limit"') });
	});
});

describe('OpenAPI for search attributes', () => {
	it('documents each type attributes as a schema, in the create body and as list parameters', async () => {
		const document = (await (await createApp(registry).request('/openapi.json', {}, { SHARDFLOW_ENV: 'development' })).json()) as any;
		expect(document.components.schemas['SearchAttributes.payment'].properties).toHaveProperty('customerId');
		expect(document.components.schemas['CreateWorkflow.payment'].properties.attributes).toEqual({ $ref: '#/components/schemas/SearchAttributes.payment' });
		const names = document.paths['/workflows'].get.parameters.map((p: { name: string }) => p.name);
		expect(names).toEqual(expect.arrayContaining(['attr.customerId', 'attr.amount', 'attr.amount.gte', 'attr.amount.lt', 'idPrefix']));
		expect(names).not.toContain('attr.customerId.gte');
	});
});
