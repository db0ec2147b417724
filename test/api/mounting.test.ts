import { env } from 'cloudflare:workers';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { createApp, type ApiEnv } from '../../src/host';
import { settle, uniqueId } from '../helpers';
import { testRegistry } from '../worker/index';
import { testClock } from '../worker/test-clock';

/**
 * A host Worker of its own: its routes, its auth (a session header here), and
 * shardflow's API mounted under /workflows-admin behind that auth, with the
 * built-in API_TOKEN check off.
 */
function hostApp(auth: 'api-token' | 'host') {
	const host = new Hono<{ Bindings: ApiEnv }>();
	host.get('/', (c) => c.text('the shop'));
	host.use('/workflows-admin/*', async (c, next) => {
		if (c.req.path.endsWith('/openapi.json')) return next();
		if (c.req.header('x-session') !== 'staff') return c.json({ error: 'who are you?' }, 401);
		await next();
	});
	host.route('/workflows-admin', createApp(testRegistry, { clock: testClock.now, auth }));
	return host;
}

/** The host in production mode: no API_TOKEN, no ALLOW_UNAUTHENTICATED. */
const production = { ...(env as unknown as ApiEnv), SHARDFLOW_ENV: 'production' };

async function call(host: Hono<{ Bindings: ApiEnv }>, method: string, path: string, body?: unknown, headers: Record<string, string> = { 'x-session': 'staff' }) {
	const init: RequestInit = { method, headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) } };
	if (body !== undefined) init.body = JSON.stringify(body);
	const response = await host.fetch(new Request(`http://shop.test${path}`, init), production);
	return { status: response.status, json: (await response.json().catch(() => undefined)) as any };
}

describe("the API mounted under a host's own path", () => {
	const host = hostApp('host');

	it('serves the workflow routes under the mount path, behind the host auth', async () => {
		const id = uniqueId('mounted');
		const created = await call(host, 'POST', '/workflows-admin/workflows', { type: 'test', id, payload: { name: 'Mount' } });
		expect(created).toMatchObject({ status: 201, json: { id, type: 'test', status: 'created' } });
		await settle(id);
		expect((await call(host, 'GET', `/workflows-admin/workflows/${id}`)).json).toMatchObject({ id, status: expect.any(String) });
		expect((await call(host, 'GET', '/workflows-admin/types')).status).toBe(200);
	});

	it("refuses what the host's own middleware refuses, and leaves the host's routes alone", async () => {
		expect(await call(host, 'GET', '/workflows-admin/workflows', undefined, {})).toMatchObject({ status: 401, json: { error: 'who are you?' } });
		const home = await host.fetch(new Request('http://shop.test/'), production);
		expect(await home.text()).toBe('the shop');
		expect((await call(host, 'GET', '/workflows')).status).toBe(404); // nothing outside the mount path
	});

	it("keeps shardflow's JSON errors inside the mount", async () => {
		const res = await call(host, 'GET', '/workflows-admin/workflows/__index:test:0');
		expect(res).toMatchObject({ status: 400, json: { error: { code: 'RESERVED_ID' } } });
	});

	it('names the mount path as the server of its OpenAPI document, with paths relative to it and no bearer scheme', async () => {
		const res = await call(host, 'GET', '/workflows-admin/openapi.json', undefined, {});
		expect(res.status).toBe(200);
		expect(res.json.servers).toEqual([{ url: '/workflows-admin' }]);
		expect(Object.keys(res.json.paths)).toContain('/workflows/{id}');
		expect(res.json.security).toBeUndefined();
	});

	it('keeps the built-in token check when mounted with the default auth, and the document open', async () => {
		const guarded = hostApp('api-token');
		expect(await call(guarded, 'GET', '/workflows-admin/workflows')).toMatchObject({ status: 403, json: { error: { code: 'AUTH_NOT_CONFIGURED' } } });
		const doc = await call(guarded, 'GET', '/workflows-admin/openapi.json', undefined, {});
		expect(doc.status).toBe(200);
		expect(doc.json.security).toEqual([{ bearer: [] }]);
	});
});
