import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock, fireAlarm, resetClock, settle, uniqueId } from '../helpers';
import { decodeBase64UrlJson, encodeBase64UrlJson } from '../../src/engine/support/base64url-json';
import { fnv1a32 } from '../../src/engine/index/shard';
import { api, apiWith } from './helpers';
import committedDocument from './openapi.json';
import { createApp } from '../../src/api/app';
import { registry } from '../../examples/demo/workflows/registry';

afterEach(resetClock);

const payment = (id: string) => ({ type: 'payment', id, payload: { amount: 12.5, currency: 'EUR' } });

describe('POST /workflows', () => {
	it('creates an instance with 201, and answers 200 with the same shape when the id exists with that type', async () => {
		const id = uniqueId('api');
		const first = await api('POST', '/workflows', payment(id));
		expect(first).toMatchObject({ status: 201, json: { id, type: 'payment', status: 'created' } });
		const again = await api('POST', '/workflows', payment(id));
		expect(again.status).toBe(200);
		expect(Object.keys(again.json).sort()).toEqual(['id', 'status', 'type']);
	});

	it('generates an id when none is given', async () => {
		const res = await api('POST', '/workflows', { type: 'test', payload: { name: 'anon' } });
		expect(res.status).toBe(201);
		expect(res.json.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
	});

	it('answers 409 when the id belongs to another type', async () => {
		const id = uniqueId('api');
		await api('POST', '/workflows', payment(id));
		expect(await api('POST', '/workflows', { type: 'test', id, payload: { name: 'x' } })).toMatchObject({ status: 409, json: { error: { code: 'TYPE_MISMATCH' } } });
	});

	it.for([
		['an unknown type', { type: 'nope', id: 'x-1', payload: {} }, 'UNKNOWN_TYPE'],
		['a reserved id', { type: 'test', id: '__index:test:0', payload: { name: 'x' } }, 'RESERVED_ID'],
		['an id with a slash', { type: 'test', id: 'a/b', payload: { name: 'x' } }, 'INVALID_ID'],
		['a payload the schema refuses', { type: 'payment', id: 'x-2', payload: { amount: -5, currency: 'EUR' } }, 'INVALID_PAYLOAD'],
		['a missing type', { id: 'x-3', payload: {} }, 'INVALID_REQUEST'],
	] as const)('answers 400 for %s', async ([, body, code]) => {
		expect(await api('POST', '/workflows', body)).toMatchObject({ status: 400, json: { error: { code } } });
	});
});

describe('GET /workflows/:id', () => {
	it('returns the full status straight from the instance', async () => {
		const id = uniqueId('detail');
		await api('POST', '/workflows', { type: 'test', id, payload: { name: 'Detail' } });
		await settle(id);
		advanceClock(1000);
		await fireAlarm(id);
		const res = await api('GET', `/workflows/${id}`);
		expect(res.status).toBe(200);
		expect(res.json).toMatchObject({ id, type: 'test', status: 'completed', payload: { name: 'Detail' }, output: { greeting: 'Hello, Detail!' } });
		expect(res.json.steps.map((s: { name: string }) => s.name)).toEqual(['greet', 'nap']);
		expect(typeof res.json.createdAt).toBe('number');
	});

	it('answers 404 for an unknown instance', async () => {
		expect(await api('GET', `/workflows/${uniqueId('ghost')}`)).toMatchObject({ status: 404, json: { error: { code: 'NOT_FOUND' } } });
	});
});

describe('control routes', () => {
	it('pauses, resumes and terminates with 200 {id, status}, and refuses transitions that make no sense with 409', async () => {
		const id = uniqueId('ctl');
		await api('POST', '/workflows', payment(id));
		await settle(id);
		expect(await api('POST', `/workflows/${id}/pause`)).toMatchObject({ status: 200, json: { id, status: 'paused' } });
		expect(await api('POST', `/workflows/${id}/pause`)).toMatchObject({ status: 409, json: { error: { code: 'INVALID_STATE' } } });
		expect(await api('POST', `/workflows/${id}/resume`)).toMatchObject({ status: 200, json: { id, status: 'running' } });
		expect(await api('POST', `/workflows/${id}/restart`)).toMatchObject({ status: 409 });
		expect(await api('POST', `/workflows/${id}/terminate`)).toMatchObject({ status: 200, json: { id, status: 'terminated' } });
		expect(await api('POST', `/workflows/${id}/restart`)).toMatchObject({ status: 200, json: { id, status: 'created' } });
	});

	it('takes a JSON content-type without a body as no body (a client that always sends the header can restart)', async () => {
		const id = uniqueId('ctl-ct');
		await api('POST', '/workflows', payment(id));
		await settle(id);
		const json = { 'content-type': 'application/json' };
		expect(await api('POST', `/workflows/${id}/terminate`, undefined, json)).toMatchObject({ status: 200, json: { id, status: 'terminated' } });
		expect(await api('POST', `/workflows/${id}/restart`, undefined, json)).toMatchObject({ status: 200, json: { id, status: 'created' } });
		// A body that is there but broken is still refused.
		expect(await api('POST', `/workflows/${id}/restart`, '{"from":', json)).toMatchObject({ status: 400, json: { error: { code: 'MALFORMED_JSON' } } });
	});

	it('refuses a body or a query parameter a route does not take with a 400, and changes nothing (a terminate never drops its rollback silently)', async () => {
		const id = uniqueId('ctl-strict');
		await api('POST', '/workflows', payment(id));
		await settle(id);
		const before = (await api('GET', `/workflows/${id}`)).json.status;
		// Options of a terminate are query parameters: a body that looks like one is refused, not ignored.
		const body = await api('POST', `/workflows/${id}/terminate`, { rollback: true });
		expect((await api('GET', `/workflows/${id}`)).json.status).toBe(before);
		expect(body).toMatchObject({ status: 400, json: { error: { code: 'INVALID_REQUEST', message: expect.stringContaining('rollback=true') } } });
		for (const [method, path, code] of [
			['POST', `/workflows/${id}/terminate?rolback=true`, 'INVALID_QUERY'],
			['POST', `/workflows/${id}/terminate?rollback=true&rollback=false`, 'INVALID_QUERY'],
			['POST', `/workflows/${id}/restart?from=nap`, 'INVALID_QUERY'],
			['POST', `/workflows/${id}/pause?force=true`, 'INVALID_QUERY'],
			['DELETE', `/workflows/${id}?terminat=true`, 'INVALID_QUERY'],
		] as const) {
			expect(await api(method, path), `${method} ${path}`).toMatchObject({ status: 400, json: { error: { code } } });
		}
		expect(await api('POST', `/workflows/${id}/pause`, [1, 2])).toMatchObject({ status: 400, json: { error: { code: 'INVALID_REQUEST' } } });
		expect(await api('GET', `/workflows/${id}/steps?limit=5&sort=desc`)).toMatchObject({ status: 400, json: { error: { code: 'INVALID_QUERY' } } });
		expect((await api('GET', `/workflows/${id}`)).json.status).toBe(before);
		// An empty object carries nothing: clients that always send a body are not refused.
		expect(await api('POST', `/workflows/${id}/pause`, {})).toMatchObject({ status: 200, json: { status: 'paused' } });
		expect(await api('POST', `/workflows/${id}/resume`, ' { } ')).toMatchObject({ status: 200 });
		// What the routes take still works.
		expect(await api('GET', `/workflows/${id}/steps?limit=5`)).toMatchObject({ status: 200 });
		expect(await api('POST', `/workflows/${id}/terminate?rollback=false`)).toMatchObject({ status: 200, json: { id, status: 'terminated' } });
	});

	it('refuses a parameter the batch, admin and type routes do not take (batch-delete?archive=true deletes nothing), takes the cache-buster _ everywhere, and says when a parameter is given twice', async () => {
		const id = uniqueId('strict-batch');
		await api('POST', '/workflows', payment(id));
		await settle(id);
		await api('POST', `/workflows/${id}/terminate`);
		for (const [method, path, body] of [
			['POST', '/workflows/batch-delete?archive=true', { ids: [id] }],
			['POST', '/admin/types/payment/purge?archive=true', { status: ['terminated'], updatedBefore: Date.now() + 60_000, batchSize: 5 }],
			['POST', '/admin/types/payment/reconcile?batchSize=5', undefined],
			['GET', '/types?verbose=1', undefined],
			['GET', '/types/payment/metrics?window=day', undefined],
		] as const) {
			expect(await api(method, path, body), `${method} ${path}`).toMatchObject({ status: 400, json: { error: { code: 'INVALID_QUERY', message: expect.stringContaining('unknown query parameter') } } });
		}
		expect(await api('GET', `/workflows/${id}`)).toMatchObject({ status: 200, json: { status: 'terminated' } });
		expect(await api('GET', `/workflows/${id}?_=1764259200000`)).toMatchObject({ status: 200 });
		expect(await api('GET', `/types?_=1`)).toMatchObject({ status: 200 });
		expect(await api('POST', `/workflows/${id}/restart?rollback=true&rollback=false`)).toMatchObject({ status: 400, json: { error: { code: 'INVALID_QUERY' } } });
		expect(await api('GET', `/workflows/${id}/steps?limit=1&limit=2`)).toMatchObject({ status: 400, json: { error: { message: 'limit is given 2 times; give it once' } } });
	});

	it.for(['pause', 'resume', 'terminate', 'restart'])('answers 404 to %s on an unknown instance', async (action) => {
		expect(await api('POST', `/workflows/${uniqueId('ghost')}/${action}`)).toMatchObject({ status: 404 });
	});
});

describe('POST /workflows/:id/events/:name', () => {
	it('accepts a declared event with 202 and the workflow moves on', async () => {
		const id = uniqueId('ev');
		await api('POST', '/workflows', payment(id));
		expect(await api('POST', `/workflows/${id}/events/approval`, { approved: false, reviewer: 'bob' })).toMatchObject({ status: 202 });
		await settle(id);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'completed', output: { status: 'declined', reviewer: 'bob' } });
	});

	it('answers 400 for an undeclared event or a bad payload, 404 for an unknown instance, 409 once finished', async () => {
		const id = uniqueId('ev');
		await api('POST', '/workflows', payment(id));
		expect(await api('POST', `/workflows/${id}/events/typo`, {})).toMatchObject({ status: 400, json: { error: { code: 'UNKNOWN_EVENT' } } });
		expect(await api('POST', `/workflows/${id}/events/approval`, { approved: 'yes' })).toMatchObject({
			status: 400,
			json: { error: { code: 'INVALID_EVENT_PAYLOAD' } },
		});
		expect(await api('POST', `/workflows/${uniqueId('ghost')}/events/approval`, {})).toMatchObject({ status: 404 });
		await api('POST', `/workflows/${id}/terminate`);
		expect(await api('POST', `/workflows/${id}/events/approval`, { approved: true, reviewer: 'a' })).toMatchObject({ status: 409 });
	});
});

describe('an event POST without a body', () => {
	it('answers 400 when the event declares a payload, even one that {} would satisfy', async () => {
		const id = uniqueId('bell');
		await api('POST', '/workflows', { type: 'doorbell', id });
		await settle(id);
		expect(await api('POST', `/workflows/${id}/events/knock`)).toMatchObject({ status: 400, json: { error: { code: 'INVALID_EVENT_PAYLOAD' } } });
		const pay = uniqueId('ev');
		await api('POST', '/workflows', payment(pay));
		expect(await api('POST', `/workflows/${pay}/events/approval`)).toMatchObject({ status: 400, json: { error: { code: 'INVALID_EVENT_PAYLOAD' } } });
		await settle(id);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'waiting', steps: [{ name: 'knock', status: 'waiting' }] });
	});

	it('is accepted when the event declares no payload (its schema accepts undefined)', async () => {
		const id = uniqueId('bell');
		await api('POST', '/workflows', { type: 'doorbell', id });
		expect(await api('POST', `/workflows/${id}/events/knock`, {})).toMatchObject({ status: 202 });
		expect(await api('POST', `/workflows/${id}/events/ring`)).toMatchObject({ status: 202 });
		await settle(id);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'completed', output: 'someone' });
	});
});

describe('GET /workflows', () => {
	it('lists by type and several statuses, newest first, paging with nextCursor until null', async () => {
		const ids = await Promise.all(
			Array.from({ length: 7 }, async () => {
				const id = uniqueId('list');
				await api('POST', '/workflows', payment(id));
				await settle(id);
				return id;
			}),
		);
		const seen: string[] = [];
		let cursor: string | null = null;
		do {
			const query: string = `/workflows?type=payment&status=waiting,sleeping&limit=3${cursor ? `&cursor=${cursor}` : ''}`;
			const res = await api('GET', query);
			expect(res.status).toBe(200);
			for (const item of res.json.items) expect(Object.keys(item).sort()).toEqual(['createdAt', 'id', 'status', 'type', 'updatedAt']);
			seen.push(...res.json.items.map((i: { id: string }) => i.id));
			cursor = res.json.nextCursor;
		} while (cursor);
		for (const id of ids) expect(seen.filter((s) => s === id)).toHaveLength(1);
	});

	it.for([
		['status=bogus', 'INVALID_QUERY'],
		['type=payment&status=', 'INVALID_QUERY'],
		['limit=0', 'INVALID_QUERY'],
		['limit=1001', 'INVALID_QUERY'],
		['limit=abc', 'INVALID_QUERY'],
		['limit=-1', 'INVALID_QUERY'],
		['cursor=forged', 'INVALID_CURSOR'],
		['type=nope', 'UNKNOWN_TYPE'],
		['createdAfter=yesterday', 'INVALID_QUERY'],
	])('answers 400 to ?%s', async ([query, code]) => {
		expect(await api('GET', `/workflows?${query}`)).toMatchObject({ status: 400, json: { error: { code } } });
	});
});

describe('listing cursors', () => {
	async function twoPayments() {
		for (let i = 0; i < 2; i++) {
			const id = uniqueId('cur');
			await api('POST', '/workflows', payment(id));
			await settle(id);
		}
	}

	/** Moves the cursor's timestamp by 1 ms, keeping the signature, or re-computing the unkeyed checksum of the old format. */
	function forge(cursor: string): string {
		const [body, signature] = cursor.split('.');
		const parts = decodeBase64UrlJson(body!) as unknown[];
		const edited = parts.map((p) => (typeof p === 'number' && p > 1e12 ? p - 1 : p));
		if (signature !== undefined) return `${encodeBase64UrlJson(edited)}.${signature}`;
		const unsigned = edited.slice(0, -1);
		return encodeBase64UrlJson([...unsigned, fnv1a32(`shardflow-cursor:${JSON.stringify(unsigned)}`)]);
	}

	it('refuses with 400 INVALID_CURSOR a cursor edited by hand, even with its checksum re-computed', async () => {
		await twoPayments();
		const { json } = await api('GET', '/workflows?type=payment&limit=1');
		expect(json.nextCursor).toBeTypeOf('string');
		expect((await api('GET', `/workflows?type=payment&limit=1&cursor=${json.nextCursor}`)).status).toBe(200);
		expect(await api('GET', `/workflows?type=payment&limit=1&cursor=${forge(json.nextCursor)}`)).toMatchObject({
			status: 400,
			json: { error: { code: 'INVALID_CURSOR' } },
		});
	});

	it('signs with CURSOR_SECRET when set: a cursor signed under another secret is refused', async () => {
		await twoPayments();
		const page = await apiWith({ CURSOR_SECRET: 'secret-one' }, 'GET', '/workflows?type=payment&limit=1');
		const cursor = page.json.nextCursor as string;
		expect((await apiWith({ CURSOR_SECRET: 'secret-one' }, 'GET', `/workflows?type=payment&limit=1&cursor=${cursor}`)).status).toBe(200);
		expect(await apiWith({ CURSOR_SECRET: 'secret-two' }, 'GET', `/workflows?type=payment&limit=1&cursor=${cursor}`)).toMatchObject({
			status: 400,
			json: { error: { code: 'INVALID_CURSOR' } },
		});
		expect((await api('GET', `/workflows?type=payment&limit=1&cursor=${cursor}`)).status).toBe(400);
	});

	it('binds a cursor to its order: ?order=updated refuses a cursor of the default order', async () => {
		await twoPayments();
		const { json } = await api('GET', '/workflows?type=payment&limit=1');
		expect(await api('GET', `/workflows?type=payment&limit=1&order=updated&cursor=${json.nextCursor}`)).toMatchObject({
			status: 400,
			json: { error: { code: 'INVALID_CURSOR' } },
		});
		expect(await api('GET', '/workflows?type=payment&order=sideways')).toMatchObject({ status: 400, json: { error: { code: 'INVALID_QUERY' } } });
	});
});

describe('GET /types and admin rebalance', () => {
	it('lists every registered type with its shards and counts per status', async () => {
		const res = await api('GET', '/types');
		expect(res.status).toBe(200);
		const payment = res.json.types.find((t: { type: string }) => t.type === 'payment');
		expect(payment).toMatchObject({ type: 'payment', shards: 4 });
		expect(Object.keys(payment.counts)).toContain('waiting');
	});

	it('runs a rebalance pass for a type', async () => {
		let body: { cursor?: string | null } = {};
		for (let i = 0; i < 50; i++) {
			const res = await api('POST', '/admin/types/payment/rebalance', { ...body, batchSize: 50 });
			expect(res.status).toBe(200);
			if (res.json.done) {
				expect(res.json).toMatchObject({ type: 'payment', moved: 0, canDropPreviousShards: false });
				return;
			}
			body = { cursor: res.json.cursor };
		}
		throw new Error('rebalance never finished');
	});
});

describe('OpenAPI', () => {
	// The document names the registry's types, so it is pinned for the production registry
	// (what `npm run dev` serves), not for the test Worker's.
	const productionDocument = async () => (await createApp(registry).request('/openapi.json', {}, { SHARDFLOW_ENV: 'development' })).json() as Promise<any>;

	it('serves an OpenAPI 3.1 document describing every route, with one route per declared event', async () => {
		const res = await api('GET', '/openapi.json');
		expect(res.json.openapi).toBe('3.1.0');
		expect(Object.keys((await productionDocument()).paths).sort()).toEqual(
			[
				'/admin/types/{type}/rebalance',
				'/admin/types/{type}/purge',
				'/admin/types/{type}/reconcile',
				'/admin/workflows/{id}/reindex',
				'/bulk/{id}',
				'/bulk/{id}/cancel',
				'/alerts',
				'/metrics',
				'/schedules',
				'/schedules/{type}/pause',
				'/schedules/{type}/resume',
				'/types',
				'/types/{type}',
				'/types/{type}/metrics',
				'/types/{type}/stream',
				'/types/{type}/counts',
				'/workflows',
				'/workflows/batch',
				'/workflows/batch-delete',
				'/workflows/bulk',
				'/workflows/{id}',
				'/workflows/{id}/events/{name}',
				'/workflows/{id}/events/approval',
				'/workflows/{id}/events/refund-requested',
				'/workflows/{id}/history',
				'/workflows/{id}/pause',
				'/workflows/{id}/restart',
				'/workflows/{id}/resume',
				'/workflows/{id}/steps',
				'/workflows/{id}/stream',
				'/workflows/{id}/terminate',
				'/webhooks/{token}',
			].sort(),
		);
	});

	it('describes the create body as a union discriminated by type, each member with its payload schema', async () => {
		const { components } = await productionDocument();
		expect(components.schemas.CreateWorkflow.discriminator).toEqual({
			propertyName: 'type',
			mapping: {
				test: '#/components/schemas/CreateWorkflow.test',
				payment: '#/components/schemas/CreateWorkflow.payment',
				progress: '#/components/schemas/CreateWorkflow.progress',
				heartbeat: '#/components/schemas/CreateWorkflow.heartbeat',
			},
		});
		expect(components.schemas['CreateWorkflow.payment'].properties.payload).toMatchObject({
			type: 'object',
			properties: { amount: { type: 'number', exclusiveMinimum: 0 }, currency: { type: 'string', minLength: 3, maxLength: 3 } },
			required: ['amount', 'currency'],
		});
	});

	it("gives each event route its event's schema", async () => {
		const { paths } = await productionDocument();
		const approval = paths['/workflows/{id}/events/approval'].post;
		expect(approval.requestBody.content['application/json'].schema).toMatchObject({ properties: { approved: { type: 'boolean' } }, required: ['approved', 'reviewer'] });
		expect(approval.parameters.map((p: { name: string }) => p.name)).toEqual(['id', 'idempotency-key']);
	});

	it('serves exactly the committed document (test/api/openapi.json): the API changes only on purpose', async () => {
		// Key order is not part of the contract; toEqual ignores it.
		expect(await productionDocument()).toEqual(committedDocument);
	});
});

describe('GET /types/:type', () => {
	it("serves the type's payload and event schemas as JSON Schema", async () => {
		const res = await api('GET', '/types/payment');
		expect(res.status).toBe(200);
		expect(res.json).toMatchObject({
			type: 'payment',
			shards: 4,
			payload: { required: true, schema: { type: 'object', required: ['amount', 'currency'] } },
			events: [
				{ name: 'approval', required: true, schema: { type: 'object', required: ['approved', 'reviewer'] } },
				{ name: 'refund-requested', required: true },
			],
		});
	});

	it('says when an event carries nothing: its body may be left out', async () => {
		const res = await api('GET', '/types/doorbell');
		expect(res.json.events).toEqual([
			{ name: 'knock', required: true, schema: { type: 'object', properties: { by: { type: 'string' } } } },
			{ name: 'ring', required: false, schema: {} },
		]);
	});

	it('answers 400 UNKNOWN_TYPE for an unregistered type', async () => {
		expect(await api('GET', '/types/nope')).toMatchObject({ status: 400, json: { error: { code: 'UNKNOWN_TYPE' } } });
	});
});
