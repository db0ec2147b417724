import { describe, expect, it } from 'vitest';
import { settle, uniqueId } from '../helpers';
import type { ApiEnv } from '../../src/api/app';
import { api, apiWith } from './helpers';

const MiB = 1024 * 1024;

async function existingPayment() {
	const id = uniqueId('hostile');
	await api('POST', '/workflows', { type: 'payment', id, payload: { amount: 1, currency: 'EUR' } });
	await settle(id);
	return { id, before: (await api('GET', `/workflows/${id}`)).json };
}

const deepJson = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('malformed requests get a 4xx JSON error and change nothing', () => {
	it.for([
		['truncated JSON', 'POST', '/workflows', '{"type":"test","id":"a-1",', 'application/json', 400, 'MALFORMED_JSON'],
		['not JSON at all', 'POST', '/workflows', 'hello', 'application/json', 400, 'MALFORMED_JSON'],
		['a JSON array body', 'POST', '/workflows', '[1,2]', 'application/json', 400, 'INVALID_REQUEST'],
		['text/plain', 'POST', '/workflows', '{"type":"test"}', 'text/plain', 415, 'UNSUPPORTED_MEDIA_TYPE'],
		['form data', 'POST', '/workflows', 'type=test', 'application/x-www-form-urlencoded', 415, 'UNSUPPORTED_MEDIA_TYPE'],
		['a body over the limit', 'POST', '/workflows', JSON.stringify({ type: 'test', payload: { name: 'x'.repeat(1.2 * MiB) } }), 'application/json', 413, 'TOO_LARGE'],
		['a payload just over 1 MiB', 'POST', '/workflows', JSON.stringify({ type: 'inbox', id: 'big-1', payload: { expect: 1, pad: 'y'.repeat(MiB) } }), 'application/json', 413, 'TOO_LARGE'],
		['deeply nested JSON', 'POST', '/workflows', `{"type":"test","id":"deep-1","payload":${deepJson(100_000)}}`, 'application/json', 400, undefined],
		['an unknown route', 'GET', '/nope', undefined, undefined, 404, 'ROUTE_NOT_FOUND'],
		['a wrong method', 'DELETE', '/workflows', undefined, undefined, 404, 'ROUTE_NOT_FOUND'],
		['a wrong method on the scrape endpoint (no 405 anywhere in the API)', 'POST', '/metrics', undefined, undefined, 404, 'ROUTE_NOT_FOUND'],
		['an id of 10,000 characters', 'GET', `/workflows/${'a'.repeat(10_000)}`, undefined, undefined, 400, undefined],
		['an id with ..', 'GET', '/workflows/..', undefined, undefined, 404, undefined],
		['creating the id "." that no URL reaches', 'POST', '/workflows', '{"type":"test","id":".","payload":{"name":"x"}}', 'application/json', 400, 'INVALID_ID'],
		['creating the id ".." that no URL reaches', 'POST', '/workflows', '{"type":"test","id":"..","payload":{"name":"x"}}', 'application/json', 400, 'INVALID_ID'],
		['an id with unicode', 'GET', `/workflows/${encodeURIComponent('zahlung-ü')}`, undefined, undefined, 400, 'INVALID_ID'],
		['an id with a control character', 'GET', `/workflows/${encodeURIComponent('a\u0001b')}`, undefined, undefined, 400, 'INVALID_ID'],
		['a reserved id', 'GET', '/workflows/__index:payment:0', undefined, undefined, 400, 'RESERVED_ID'],
		['limit=1e9', 'GET', '/workflows?limit=1e9', undefined, undefined, 400, 'INVALID_QUERY'],
		['a truncated cursor', 'GET', '/workflows?type=payment&cursor=WzEsMTcw', undefined, undefined, 400, 'INVALID_CURSOR'],
		['an unknown status', 'GET', '/workflows?status=running,zombie', undefined, undefined, 400, 'INVALID_QUERY'],
	] as const)('%s', async ([, method, path, body, type, status, code]) => {
		const res = await api(method, path, body, type ? { 'content-type': type } : {});
		expect(res.status).toBe(status);
		expect(res.json?.error?.code, res.text.slice(0, 200)).toBeTypeOf('string');
		if (code) expect(res.json.error.code).toBe(code);
		expect(res.text).not.toMatch(/\bat .*\.(ts|js):\d+/);
	});

	it('leaves the instance and its index entry unchanged after refused events and controls', async () => {
		const { id, before } = await existingPayment();
		const refused = [
			await api('POST', `/workflows/${id}/events/approval`, '{"approved":', { 'content-type': 'application/json' }),
			await api('POST', `/workflows/${id}/events/approval`, { approved: 'maybe' }),
			await api('POST', `/workflows/${id}/events/approval`, JSON.stringify({ approved: true, reviewer: 'x'.repeat(1.1 * MiB) })),
			await api('POST', `/workflows/${id}/events/undeclared`, {}),
			await api('POST', `/workflows/${id}/resume`),
			await api('POST', `/workflows/${id}/restart`),
			await api('POST', '/workflows', { type: 'test', id, payload: { name: 'x' } }),
		];
		for (const res of refused) expect(res.status).toBeGreaterThanOrEqual(400), expect(res.status).toBeLessThan(500);
		const after = (await api('GET', `/workflows/${id}`)).json;
		expect(after).toEqual(before);
		const listed = await api('GET', `/workflows?type=payment&status=waiting&limit=1000`);
		expect(listed.json.items.find((i: { id: string }) => i.id === id)).toMatchObject({ status: 'waiting', updatedAt: before.updatedAt });
	});
});

const routes: [string, string, unknown?][] = [
	['GET', '/workflows'],
	['GET', '/workflows/some-id'],
	['POST', '/workflows', { type: 'test', payload: { name: 'x' } }],
	['POST', '/workflows/batch', { items: [{ type: 'test', payload: { name: 'x' } }] }],
	['POST', '/workflows/some-id/pause'],
	['POST', '/workflows/some-id/resume'],
	['POST', '/workflows/some-id/terminate'],
	['POST', '/workflows/some-id/restart'],
	['POST', '/workflows/some-id/events/approval', {}],
	['GET', '/types'],
	['GET', '/types/payment'],
	['GET', '/types/payment/metrics'],
	['GET', '/metrics'],
	['POST', '/admin/types/payment/rebalance', {}],
	['DELETE', '/workflows/some-id'],
	['POST', '/admin/types/payment/purge', { status: 'completed', createdBefore: 1 }],
	['GET', '/schedules'],
	['POST', '/schedules/hourly/pause'],
	['GET', '/workflows/some-id/stream'],
	// A status no instance has: past the auth, the route answers 400 rather than hold the response open.
	['GET', '/types/payment/stream?status=nope'],
	['GET', '/openapi.json'],
];

describe('authentication with API_TOKEN set', () => {
	const token = 'sekret-Token-123';
	// Each route's probes come from an address of their own: wrong tokens from one address are limited (failed-credentials.ts).
	const address = (path: string) => `198.18.${path.length}.${Math.floor(Math.random() * 250)}`;
	const call = (method: string, path: string, body: unknown, authorization?: string) =>
		apiWith({ API_TOKEN: token }, method, path, {
			headers: { 'cf-connecting-ip': address(path), ...(authorization ? { authorization } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
			...(body !== undefined ? { body: JSON.stringify(body) } : {}),
		});

	it.for(routes)('%s %s refuses a missing, wrong or differently-cased token with 401 JSON and leaks nothing', async ([method, path, body]) => {
		for (const authorization of [undefined, 'Bearer wrong', `Bearer ${token.toUpperCase()}`, `Basic ${token}`, token]) {
			const res = await call(method, path, body, authorization);
			expect(res.status).toBe(401);
			expect(res.json).toEqual({ error: { code: 'UNAUTHORIZED', message: expect.any(String) } });
		}
		const ok = await call(method, path, body, `Bearer ${token}`);
		expect(ok.status).not.toBe(401);
		expect(ok.status).toBeLessThan(500);
	});
});

describe('a read-only token beside API_TOKEN', () => {
	const vars = { API_TOKEN: 'full-Token-123', API_TOKEN_READONLY: 'read-Token-456' };
	const call = (method: string, path: string, token: string, body?: unknown) =>
		apiWith(vars, method, path, {
			headers: { 'cf-connecting-ip': `198.19.0.${Math.floor(Math.random() * 250)}`, authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
			...(body !== undefined ? { body: JSON.stringify(body) } : {}),
		});

	it('reads every GET route and is refused every change with 403 READ_ONLY_TOKEN, changing nothing', async () => {
		for (const [method, path, body] of routes) {
			const res = await call(method, path, vars.API_TOKEN_READONLY, body);
			if (method === 'GET') {
				expect(res.status, path).not.toBe(401);
				expect(res.status, path).not.toBe(403);
				expect(res.status, path).toBeLessThan(500);
			} else {
				expect(res.status, `${method} ${path}`).toBe(403);
				expect(res.json.error.code).toBe('READ_ONLY_TOKEN');
			}
		}
		const id = uniqueId('readonly');
		expect((await call('POST', '/workflows', vars.API_TOKEN_READONLY, { type: 'test', id, payload: { name: 'x' } })).status).toBe(403);
		expect((await call('GET', `/workflows/${id}`, vars.API_TOKEN)).status).toBe(404);
		expect((await call('POST', '/workflows', vars.API_TOKEN, { type: 'test', id, payload: { name: 'x' } })).status).toBe(201);
	});
});

describe('a deployment without API_TOKEN', () => {
	const prod = { SHARDFLOW_ENV: 'production' };
	const call = (vars: Partial<ApiEnv>, method: string, path: string, body: unknown) =>
		apiWith(vars, method, path, body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

	it.for(routes.filter(([, path]) => path !== '/openapi.json'))(
		'%s %s is refused with 403 AUTH_NOT_CONFIGURED in production, reads included',
		async ([method, path, body]) => {
			expect(await call(prod, method, path, body)).toEqual({ status: 403, json: { error: { code: 'AUTH_NOT_CONFIGURED', message: expect.any(String) } } });
		},
	);

	it('names the local option in the 403 AUTH_NOT_CONFIGURED message (SHARDFLOW_ENV=development in .dev.vars), beside the production ones', async () => {
		const res = await call({ API_TOKEN: undefined, ALLOW_UNAUTHENTICATED: undefined, SHARDFLOW_ENV: undefined }, 'GET', '/workflows', undefined);
		expect(res.status).toBe(403);
		const { message } = (res.json as { error: { message: string } }).error;
		for (const option of ['wrangler secret put API_TOKEN', 'ALLOW_UNAUTHENTICATED=true', 'SHARDFLOW_ENV=development', '.dev.vars']) expect(message).toContain(option);
	});

	// The README's deployment: no API_TOKEN secret, no ALLOW_UNAUTHENTICATED, no
	// SHARDFLOW_ENV (its documented default is production). The test Worker runs
	// with SHARDFLOW_ENV=development, so the three are unset here explicitly.
	it.for(routes.filter(([, path]) => path !== '/openapi.json'))(
		'%s %s is refused with 403 AUTH_NOT_CONFIGURED when SHARDFLOW_ENV is unset, as the README deploys it',
		async ([method, path, body]) => {
			const readmeDeployment = { API_TOKEN: undefined, ALLOW_UNAUTHENTICATED: undefined, SHARDFLOW_ENV: undefined };
			expect(await call(readmeDeployment, method, path, body)).toEqual({ status: 403, json: { error: { code: 'AUTH_NOT_CONFIGURED', message: expect.any(String) } } });
		},
	);

	it('keeps /openapi.json open: it describes the routes and reveals no data and no registered type', async () => {
		const res = await call(prod, 'GET', '/openapi.json', undefined);
		expect(res.status).toBe(200);
		expect(Object.keys(res.json.paths)).not.toContain('/workflows/{id}/events/approval');
		expect(Object.keys(res.json.components.schemas)).not.toContain('CreateWorkflow.payment');
	});

	it('serves reads and writes without a token when ALLOW_UNAUTHENTICATED=true or in development', async () => {
		const create = { type: 'test', payload: { name: 'p' } };
		for (const vars of [{ ...prod, ALLOW_UNAUTHENTICATED: 'true' }, { SHARDFLOW_ENV: 'development' }]) {
			expect((await call(vars, 'POST', '/workflows', create)).status).toBe(201);
			expect((await call(vars, 'GET', '/types', undefined)).status).toBe(200);
			expect((await call(vars, 'GET', '/workflows?type=test&limit=1', undefined)).status).toBe(200);
		}
	});
});

describe('oversized cursors', () => {
	it.for(['listing', 'steps'] as const)('a 5,000-character %s cursor answers 400 INVALID_CURSOR', async (which) => {
		const { id } = await existingPayment();
		const path = which === 'listing' ? '/workflows?type=payment&cursor=' : `/workflows/${id}/steps?cursor=`;
		const res = await api('GET', `${path}${'a'.repeat(5000)}`);
		expect(res.status).toBe(400);
		expect(res.json.error.code).toBe('INVALID_CURSOR');
	});
});

describe('a refused cursor is not echoed whole (found from outside: a 60,000-character after came back in the 400)', () => {
	it.for(['history after=', 'stream after='] as const)('a 60,000-character %s answers a short 400 INVALID_CURSOR', async (which) => {
		const { id } = await existingPayment();
		const path = which === 'history after=' ? `/workflows/${id}/history?after=` : `/workflows/${id}/stream?after=`;
		const res = await api('GET', `${path}${'9'.repeat(60_000)}`);
		expect(res.status).toBe(400);
		expect(res.json.error.code).toBe('INVALID_CURSOR');
		expect(JSON.stringify(res.json).length).toBeLessThan(1_000);
	});
});

describe('bulk routes and counts name what was wrong', () => {
	it.for([
		['GET', '/bulk/'],
		['POST', '/bulk/'],
		['DELETE', '/bulk/'],
	] as const)('a 5,000-character bulk job id on %s %s{id} answers 400 INVALID_ID, as every other id route does', async ([method, path]) => {
		const res = await api(method, `${path}${'a'.repeat(5000)}${method === 'POST' ? '/cancel' : ''}`);
		expect(res.status).toBe(400);
		expect(res.json.error.code).toBe('INVALID_ID');
	});

	it('counts without by= answers 400 INVALID_QUERY naming attr.<name> and the type\'s attributes, not a raw schema message', async () => {
		const res = await api('GET', '/types/searchable/counts');
		expect(res.status).toBe(400);
		expect(res.json.error.code).toBe('INVALID_QUERY');
		expect(res.json.error.message).toMatch(/by=attr\.<name>/);
		expect(res.json.error.message).toContain('customerId');
		expect(res.json.error.message).not.toMatch(/expected string|received undefined|Invalid input/i);
	});

	it('counts with a by= that is not attr.<name> answers 400 INVALID_QUERY saying what by takes', async () => {
		const res = await api('GET', '/types/searchable/counts?by=customerId');
		expect(res.status).toBe(400);
		expect(res.json.error).toMatchObject({ code: 'INVALID_QUERY', message: expect.stringContaining('by="customerId" is not attr.<name>') });
		expect(res.json.error.message).toContain('customerId, amount');
	});

	it('counts with by= given twice says so (found from outside: it said a well-formed by was not attr.<name>)', async () => {
		const res = await api('GET', '/types/searchable/counts?by=attr.customerId&by=attr.amount');
		expect(res.status).toBe(400);
		expect(res.json.error).toMatchObject({ code: 'INVALID_QUERY', message: 'by is given 2 times; give it once' });
	});

	it('counts of an unknown type without by= answers UNKNOWN_TYPE first', async () => {
		const res = await api('GET', '/types/no-such-type/counts');
		expect(res.status).toBe(400);
		expect(res.json.error.code).toBe('UNKNOWN_TYPE');
	});

	it.for([1e308, 0, 1.5, -1, 1001])('a bulk ratePerSecond of %s is refused naming the allowed range', async (rate) => {
		const res = await api('POST', '/workflows/bulk', { query: { type: 'searchable' }, action: { kind: 'pause' }, ratePerSecond: rate });
		expect(res.status).toBe(400);
		expect(res.json.error.code).toBe('INVALID_REQUEST');
		expect(res.json.error.message).toMatch(/ratePerSecond.*whole number from 1 to 1000/);
	});
});
