import { describe, expect, it } from 'vitest';
import { createBatch, MAX_BATCH_CREATE } from '../../src/client/create-batch';
import { settle, testEnv, uniqueId } from '../helpers';
import { ShortLivedWorkflow } from '../worker/workflows';
import { api } from './helpers';

const item = (id: string, n = 1) => ({ type: 'short-lived', id, payload: { n } });

describe('POST /workflows/batch', () => {
	it('creates every item and answers each like a single create: created, existing, or refused with its code', async () => {
		const [a, b, existing] = [uniqueId('batch'), uniqueId('batch'), uniqueId('batch')];
		await api('POST', '/workflows', item(existing, 3));
		const response = await api('POST', '/workflows/batch', {
			items: [item(a, 1), item(b, 2), item(existing, 3), item(existing, 4), { type: 'no-such-type', id: uniqueId('batch') }, { type: 'short-lived', id: '__reserved', payload: { n: 1 } }, { type: 'many', payload: { steps: -1 } }],
		});
		expect(response.status).toBe(200);
		expect(response.json.items).toMatchObject([
			{ result: 'created', status: 201, id: a, type: 'short-lived' },
			{ result: 'created', status: 201, id: b },
			{ result: 'existing', status: 200, id: existing },
			{ result: 'refused', status: 409, id: existing, error: { code: 'PAYLOAD_MISMATCH' } },
			{ result: 'refused', status: 400, error: { code: 'UNKNOWN_TYPE' } },
			{ result: 'refused', status: 400, id: '__reserved', error: { code: 'RESERVED_ID' } },
			{ result: 'refused', status: 400, error: { code: 'INVALID_PAYLOAD' } },
		]);
		// An item without an id is given one up front, so even a refused one names it.
		expect(response.json.items[6].id).toMatch(/^[0-9a-f-]{36}$/);
		await Promise.all([a, b].map(settle));
		expect((await api('GET', `/workflows/${a}`)).json).toMatchObject({ status: 'completed', output: 2 });
		expect((await api('GET', `/workflows/${b}`)).json).toMatchObject({ status: 'completed', output: 4 });
		// The refused payload changed nothing: the existing instance keeps its own.
		expect((await api('GET', `/workflows/${existing}`)).json.payload).toEqual({ n: 3 });
	});

	it.for([
		['an empty batch', { items: [] }],
		[`more than ${MAX_BATCH_CREATE} items`, { items: Array.from({ length: MAX_BATCH_CREATE + 1 }, (_, i) => item(`too-many-${i}`)) }],
		['items that are not an array', { items: { type: 'short-lived' } }],
		['an item without a type', { items: [{ id: 'no-type', payload: { n: 1 } }] }],
		['no items field', [item('bare-array')]],
	] as const)('answers %s with a 400 and creates nothing', async ([, body]) => {
		const response = await api('POST', '/workflows/batch', body);
		expect(response.status).toBe(400);
		expect(response.json.error.code).toBe('INVALID_REQUEST');
		expect((await api('GET', '/workflows/too-many-0')).status).toBe(404);
		expect((await api('GET', '/workflows/bare-array')).status).toBe(404);
	});

	it('creates a full batch of 100 concurrently, and a repeat of it answers every item as existing', async () => {
		const ids = Array.from({ length: MAX_BATCH_CREATE }, () => uniqueId('full'));
		const first = await api('POST', '/workflows/batch', { items: ids.map((id, i) => item(id, i)) });
		expect(first.json.items.map((o: { result: string }) => o.result)).toEqual(ids.map(() => 'created'));
		const again = await api('POST', '/workflows/batch', { items: ids.map((id, i) => item(id, i)) });
		expect(again.json.items.map((o: { result: string }) => o.result)).toEqual(ids.map(() => 'existing'));
		expect(again.json.items.map((o: { id: string }) => o.id)).toEqual(ids);
	});
});

describe('createBatch', () => {
	it('the typed helper creates instances of its class and answers in order', async () => {
		const [a, b] = [uniqueId('typed-batch'), uniqueId('typed-batch')];
		const outcomes = await ShortLivedWorkflow.createBatch(testEnv, [{ id: a, payload: { n: 5 } }, { id: b, payload: { n: 6 } }]);
		expect(outcomes).toMatchObject([{ result: 'created', id: a, type: 'short-lived' }, { result: 'created', id: b }]);
		await settle(a);
		expect((await ShortLivedWorkflow.status(testEnv, a)).output).toBe(10);
	});

	it('refuses a batch of more than 100 with a typed error before creating anything', async () => {
		const id = uniqueId('typed-too-many');
		const items = Array.from({ length: MAX_BATCH_CREATE + 1 }, (_, i) => ({ type: 'short-lived', id: `${id}-${i}`, payload: { n: i } }));
		await expect(createBatch(testEnv, items)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
		expect((await api('GET', `/workflows/${id}-0`)).status).toBe(404);
	});
});
