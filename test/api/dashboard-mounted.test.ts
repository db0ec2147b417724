import { env } from 'cloudflare:workers';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { createApp, type ApiEnv } from '../../src/host';
import { uniqueId } from '../helpers';
import { testRegistry } from '../worker/index';
import { testClock } from '../worker/test-clock';
import { api } from './helpers';

/**
 * The dashboard of a package user's own Worker: createApp mounted under a path
 * of the host's Hono app (`app.route('/ops', createApp(registry))`), its
 * scripts and stylesheet served from the bundle, every link, form, redirect and
 * cookie kept under the mount.
 */
const ORIGIN = 'https://shop.test';
const withToken = { ...(env as unknown as ApiEnv), API_TOKEN: 'ops-Token-1', SHARDFLOW_ENV: 'production' };

function host(mount: string, options: { auth?: 'api-token' | 'host' } = {}) {
	const app = new Hono<{ Bindings: ApiEnv }>();
	app.get('/', (c) => c.text('the shop'));
	if (options.auth === 'host') {
		app.use(`${mount}/*`, async (c, next) => (c.req.header('cookie')?.includes('staff=yes') ? next() : c.text('who are you?', 401)));
	}
	app.route(mount, createApp(testRegistry, { clock: testClock.now, ...options }));
	return app;
}

async function get(app: Hono<{ Bindings: ApiEnv }>, path: string, init: RequestInit = {}, vars: ApiEnv = withToken) {
	const res = await app.fetch(new Request(`${ORIGIN}${path}`, { redirect: 'manual', ...init }), vars);
	return { status: res.status, text: await res.text(), headers: res.headers };
}

async function signIn(app: Hono<{ Bindings: ApiEnv }>, base: string, next: string) {
	return get(app, `${base}/login`, {
		method: 'POST',
		headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
		body: new URLSearchParams({ token: withToken.API_TOKEN!, next }),
	});
}

/** Every root-relative URL a page names (links, forms, scripts, stylesheet). */
function urlsOf(html: string): string[] {
	return [...html.matchAll(/\b(?:href|src|action)="(\/[^"]*)"/g)].map((m) => m[1]!);
}

describe('the dashboard mounted under a host path', () => {
	const ops = host('/ops');

	it('sends a page under the mount to its own sign-in, and signs in with a session cookie for the mount path only', async () => {
		const first = await get(ops, '/ops/dashboard/instances?type=payment');
		expect(first.status).toBe(303);
		expect(first.headers.get('location')).toBe('/ops/dashboard/login?next=%2Fops%2Fdashboard%2Finstances%3Ftype%3Dpayment');
		const form = await get(ops, '/ops/dashboard/login?next=%2Fops%2Fdashboard%2Finstances');
		expect(form.text).toContain('action="/ops/dashboard/login"');
		expect(form.text).toContain('value="/ops/dashboard/instances"');
		const signedIn = await signIn(ops, '/ops/dashboard', '/ops/dashboard/instances');
		expect(signedIn.status).toBe(303);
		expect(signedIn.headers.get('location')).toBe('/ops/dashboard/instances');
		expect(signedIn.headers.get('set-cookie')).toMatch(/; Path=\/ops\/dashboard;/);
		// The host's own pages are untouched.
		expect((await get(ops, '/')).text).toBe('the shop');
	});

	it('keeps a return path inside the mount: another path of the host, or the root dashboard, leads to the mounted overview', async () => {
		for (const next of ['/dashboard/instances', '/ops/dashboardx', '/', '//evil.test/ops/dashboard', 'https://evil.test/']) {
			expect((await signIn(ops, '/ops/dashboard', next)).headers.get('location'), next).toBe('/ops/dashboard');
		}
	});

	it('renders the overview, the list and an instance page with every link, form and script under the mount', async () => {
		const id = uniqueId('mounted-dash');
		await api('POST', '/workflows', { type: 'payment', id, payload: { amount: 5, currency: 'EUR' } });
		const session = (await signIn(ops, '/ops/dashboard', '/ops/dashboard')).headers.get('set-cookie')!.split(';')[0]!;
		const seen = new Set<string>();
		for (const path of ['/ops/dashboard', '/ops/dashboard/instances?type=payment', `/ops/dashboard/instances/${id}`, '/ops/dashboard/instances?type=nope', '/ops/dashboard/schedules', '/ops/dashboard/nope']) {
			const res = await get(ops, path, { headers: { cookie: session } });
			expect(res.status, path).toBeLessThan(500);
			for (const url of urlsOf(res.text)) {
				expect(url, `${path} names ${url}`).toMatch(/^\/ops\/dashboard(?:[/?#]|$)/);
				seen.add(url.replace(/[?#].*$/, ''));
			}
		}
		// The shared script and stylesheet, the list's and the instance page's scripts, the navigation and logout.
		for (const url of ['/ops/dashboard/common.js', '/ops/dashboard/dashboard.css', '/ops/dashboard/list.js', '/ops/dashboard/instance.js', '/ops/dashboard/overview.js', '/ops/dashboard/instances', '/ops/dashboard/schedules', '/ops/dashboard/logout']) {
			expect(seen, url).toContain(url);
		}
		// The pages' scripts call the API through the mounted proxy.
		const types = await get(ops, '/ops/dashboard/api/types', { headers: { cookie: session } });
		expect(types.status).toBe(200);
		expect(JSON.parse(types.text).types.map((t: { type: string }) => t.type)).toContain('payment');
		const logout = await get(ops, '/ops/dashboard/logout', { method: 'POST', headers: { cookie: session, origin: ORIGIN } });
		expect(logout.headers.get('location')).toBe('/ops/dashboard/login');
		expect(logout.headers.get('set-cookie')).toMatch(/Path=\/ops\/dashboard/);
	});

	it('serves its browser modules and stylesheet from the bundle, without a session, revalidated by ETag', async () => {
		for (const [file, type, marker] of [
			['common.js', /^text\/javascript/, 'export async function api('],
			['list.js', /^text\/javascript/, "from './common.js'"],
			['instance.js', /^text\/javascript/, "from './timeline.js'"],
			['timeline.js', /^text\/javascript/, 'export function buildTimeline('],
			['overview.js', /^text\/javascript/, "from './common.js'"],
			['dashboard.css', /^text\/css/, '.badge'],
		] as const) {
			const res = await get(ops, `/ops/dashboard/${file}`);
			expect(res.status, file).toBe(200);
			expect(res.headers.get('content-type'), file).toMatch(type);
			expect(res.text, file).toContain(marker);
			const etag = res.headers.get('etag')!;
			expect(etag).toMatch(/^"[0-9a-f]{40}"$/);
			expect(res.headers.get('cache-control')).toBe('public, max-age=0, must-revalidate');
			const again = await get(ops, `/ops/dashboard/${file}`, { headers: { 'if-none-match': etag } });
			expect(again.status, file).toBe(304);
			expect(again.text).toBe('');
		}
		expect((await get(ops, '/ops/dashboard/nope.js')).status).toBe(404);
		// The same files at the root mount (this repository's Worker), where the browser tests load them.
		expect((await get(createApp(testRegistry) as never, '/dashboard/common.js')).status).toBe(200);
	});

	it('works under a mount path with a parameter', async () => {
		const tenants = host('/:tenant/ops');
		const first = await get(tenants, '/acme/ops/dashboard');
		expect(first.headers.get('location')).toBe('/acme/ops/dashboard/login?next=%2Facme%2Fops%2Fdashboard');
		const signedIn = await signIn(tenants, '/acme/ops/dashboard', '/acme/ops/dashboard/instances');
		expect(signedIn.headers.get('location')).toBe('/acme/ops/dashboard/instances');
		const session = signedIn.headers.get('set-cookie')!.split(';')[0]!;
		const list = await get(tenants, '/acme/ops/dashboard/instances', { headers: { cookie: session } });
		expect(list.status).toBe(200);
		for (const url of urlsOf(list.text)) expect(url).toMatch(/^\/acme\/ops\/dashboard(?:[/?#]|$)/);
	});
});

describe("the dashboard behind the host's own auth (auth: 'host')", () => {
	const guarded = host('/admin', { auth: 'host' });
	const production = { ...withToken, API_TOKEN: undefined } as ApiEnv;
	const staff = { cookie: 'staff=yes' };

	it("is refused by the host's middleware, and served to whoever it lets through with no sign-in of its own", async () => {
		expect(await get(guarded, '/admin/dashboard', {}, production)).toMatchObject({ status: 401, text: 'who are you?' });
		expect((await get(guarded, '/admin/dashboard/common.js', {}, production)).status).toBe(401);
		const overview = await get(guarded, '/admin/dashboard', { headers: staff }, production);
		expect(overview.status).toBe(200);
		expect(overview.text).not.toContain('/admin/dashboard/logout');
		expect((await get(guarded, '/admin/dashboard/login', { headers: staff }, production)).headers.get('location')).toBe('/admin/dashboard');
		expect((await get(guarded, '/admin/dashboard/api/types', { headers: staff }, production)).status).toBe(200);
	});

	it('still refuses changes from another site', async () => {
		const id = uniqueId('host-dash');
		await api('POST', '/workflows', { type: 'payment', id, payload: { amount: 5, currency: 'EUR' } });
		const res = await get(guarded, `/admin/dashboard/api/workflows/${id}/terminate`, { method: 'POST', headers: { ...staff, origin: 'https://evil.test', 'x-shardflow-dashboard': '1' } }, production);
		expect(res.status).toBe(403);
		expect(JSON.parse(res.text).error.code).toBe('CROSS_SITE_REQUEST');
	});
});
