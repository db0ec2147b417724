import { env } from 'cloudflare:workers';
import { describe, expect, it, vi } from 'vitest';
import { createApp, type ApiEnv } from '../../src/api/app';
import { testRegistry } from '../worker/index';
import { testClock } from '../worker/test-clock';
import { uniqueId } from '../helpers';
import { api } from './helpers';
import { callRole } from '../../src/client/stubs';
import { groupScoped } from '../../src/client/group-scope';
import { placeOf } from '../../src/engine/support/group-id';

const ORIGIN = 'http://shardflow.test';

/** The dashboard of the test Worker's app, with other variables (a token, production). */
async function page(vars: Partial<ApiEnv>, method: string, path: string, init: RequestInit = {}) {
	const app = createApp(testRegistry, { clock: testClock.now });
	const res = await app.fetch(new Request(`${ORIGIN}${path}`, { method, redirect: 'manual', ...init }), { ...(env as unknown as ApiEnv), ...vars });
	return { status: res.status, text: await res.text(), headers: res.headers };
}
const dev = { SHARDFLOW_ENV: 'development' };
const withToken = { API_TOKEN: 'dash-Token-1', SHARDFLOW_ENV: 'production' };

async function signIn(token: string) {
	const res = await page(withToken, 'POST', '/dashboard/login', {
		headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
		body: new URLSearchParams({ token, next: '/dashboard/instances' }),
	});
	return res;
}

describe('dashboard pages', () => {
	it('renders the overview, the list and an instance page as HTML', async () => {
		const id = uniqueId('dash');
		await api('POST', '/workflows', { type: 'payment', id, payload: { amount: 5, currency: 'EUR' } });
		for (const path of ['/dashboard', '/dashboard/instances?type=payment&status=created,waiting', `/dashboard/instances/${id}`, '/dashboard/schedules', '/dashboard/schedules/hourly', `/dashboard/instances?codeVersion=x&parent=${id}`]) {
			const res = await page(dev, 'GET', path);
			expect(res.status, path).toBe(200);
			expect(res.headers.get('content-type')).toMatch(/text\/html/);
			expect(res.text).toMatch(/^<!doctype html>/);
		}
	});

	it('sends /dashboard/ and a page address with a trailing slash to the page without it', async () => {
		for (const [path, to] of [['/dashboard/', '/dashboard'], ['/dashboard/instances/', '/dashboard/instances']] as const) {
			const res = await page(dev, 'GET', path);
			expect(res.status, path).toBe(301);
			expect(new URL(res.headers.get('location')!, ORIGIN).pathname).toBe(to);
		}
		// A form's POST is never redirected (a redirect would turn it into a GET).
		expect((await page(dev, 'POST', '/dashboard/')).status).not.toBe(301);
	});

	it("shows a group's own alerts on the overview of that group (/dashboard?group=eu)", async () => {
		const failing = `eu.eu~${uniqueId('dash-failing')}`;
		const at = testClock.now();
		const euEnv = groupScoped(env as never, placeOf(failing));
		await callRole(euEnv, 'failingReport', ['inbox'], { id: failing, cause: 'cut', count: 4, since: at, at });
		try {
			const config = (text: string) => JSON.parse(/<script type="application\/json" id="overview-config">(.*?)<\/script>/s.exec(text)![1]!);
			const eu = config((await page(dev, 'GET', '/dashboard?group=eu')).text);
			expect(eu.alerts.flatMap((a: { ids?: string[] }) => a.ids ?? [])).toContain(failing);
			const home = config((await page(dev, 'GET', '/dashboard')).text);
			expect(home.alerts.flatMap((a: { ids?: string[] }) => a.ids ?? [])).not.toContain(failing);
		} finally {
			await callRole(euEnv, 'failingWithdraw', ['inbox'], { id: failing });
		}
	});

	it.for([
		['an unknown status', '/dashboard/instances?status=nope', 400, 'unknown status'],
		['an unknown type', '/dashboard/instances?type=nope', 400, 'UNKNOWN_TYPE'],
		['a forged cursor', '/dashboard/instances?cursor=abc', 400, 'INVALID_CURSOR'],
		['a bad time bound', '/dashboard/instances?createdAfter=yesterday', 400, 'milliseconds'],
		['an order the API refuses', '/dashboard/instances?order=sideways', 400, 'must be created, updated, attr.NAME or -attr.NAME'],
		['an order the API refuses, with an id', '/dashboard/instances?order=sideways&id=x', 400, 'INVALID_QUERY</strong> order: must be created, updated'],
		['a limit the API refuses', '/dashboard/instances?limit=5000', 400, 'limit must be a whole number from 1 to 1000'],
		['a limit that is no number', '/dashboard/instances?limit=lots', 400, 'must be a whole number from 1 to 1000'],
		['a reserved id', '/dashboard/instances/__index:payment:0', 400, 'RESERVED_ID'],
		['an unknown instance', '/dashboard/instances/no-such-instance', 404, 'no instance'],
		['an unknown page', '/dashboard/nope', 404, 'ROUTE_NOT_FOUND'],
		['the schedule of an unknown type', '/dashboard/schedules/nope', 404, 'UNKNOWN_TYPE'],
		['the schedule of a type without one', '/dashboard/schedules/payment', 404, 'has no schedule'],
		['a parent filter that is no id', '/dashboard/instances?parent=__index:payment:0', 400, 'INVALID'],
	] as const)('answers %s with a clear 4xx page', async ([, path, status, says]) => {
		const res = await page(dev, 'GET', path);
		expect(res.status).toBe(status);
		expect(res.text).toContain(says);
	});

	it('proxies the API for the pages, and nothing else', async () => {
		expect((await page(dev, 'GET', '/dashboard/api/types/payment')).status).toBe(200);
		expect((await page(dev, 'GET', '/dashboard/api/dashboard/api/types')).status).toBe(404);
	});

	it('refuses a live socket for an unknown type or shard, and a plain GET of it', async () => {
		const ws = { headers: { upgrade: 'websocket', origin: ORIGIN } };
		expect((await page(dev, 'GET', '/dashboard/live/nope/0', ws)).status).toBe(400);
		expect((await page(dev, 'GET', '/dashboard/live/payment/4', ws)).status).toBe(400);
		expect((await page(dev, 'GET', '/dashboard/live/payment/0')).status).toBe(426);
	});
});

describe('dashboard sign-in and cross-site protection', () => {
	it('sends a page to the sign-in form and refuses the API proxy without a session', async () => {
		const res = await page(withToken, 'GET', '/dashboard/instances?type=payment');
		expect(res.status).toBe(303);
		expect(res.headers.get('location')).toBe('/dashboard/login?next=%2Fdashboard%2Finstances%3Ftype%3Dpayment');
		expect((await page(withToken, 'GET', '/dashboard/api/types')).status).toBe(401);
		expect((await page(withToken, 'GET', '/dashboard/live/payment/0', { headers: { upgrade: 'websocket', origin: ORIGIN } })).status).toBe(401);
	});

	it('refuses a wrong token, and sets an HttpOnly, Secure, SameSite=Strict session for the right one', async () => {
		const wrong = await signIn('nope');
		expect(wrong.status).toBe(401);
		expect(wrong.headers.get('set-cookie')).toBeNull();
		const right = await signIn(withToken.API_TOKEN);
		expect(right.status).toBe(303);
		expect(right.headers.get('location')).toBe('/dashboard/instances');
		const cookie = right.headers.get('set-cookie') ?? '';
		expect(cookie).toMatch(/HttpOnly/);
		expect(cookie).toMatch(/Secure/);
		expect(cookie).toMatch(/SameSite=Strict/);
		// Sessions are short (an hour, renewed while used): a copy of a signed-out cookie is good for at most that.
		expect(cookie).toMatch(/Max-Age=3600\b/);
		expect(cookie).not.toContain(withToken.API_TOKEN);
		const session = cookie.split(';')[0]!;
		expect((await page(withToken, 'GET', '/dashboard', { headers: { cookie: session } })).status).toBe(200);
		expect((await page(withToken, 'GET', '/dashboard/api/types', { headers: { cookie: session } })).status).toBe(200);
		// The session is not an API token.
		expect((await page(withToken, 'GET', '/types', { headers: { cookie: session } })).status).toBe(401);
		// Rotating the token ends every session.
		expect((await page({ ...withToken, API_TOKEN: 'rotated' }, 'GET', '/dashboard', { headers: { cookie: session } })).status).toBe(303);
	});

	it('gives a signed-in user the API route a percent-encoded proxy path decodes to, and never the dashboard again', async () => {
		const session = ((await signIn(withToken.API_TOKEN)).headers.get('set-cookie') ?? '').split(';')[0]!;
		const get = (path: string) => page(withToken, 'GET', path, { headers: { cookie: session } });
		expect((await get('/dashboard/%61pi/types')).status).toBe(200);
		expect((await get('/dashboard/api/%74ypes/payment')).status).toBe(200);
		for (const path of ['/dashboard/api/%64ashboard/api/types', '/dashboard/api/%2564ashboard/api/types', '/dashboard/api//dashboard']) {
			const res = await get(path);
			expect(res.status, path).toBe(404);
			expect(JSON.parse(res.text).error.code, path).toBe('ROUTE_NOT_FOUND');
		}
	});

	it('refuses changes from another origin and changes without the dashboard header', async () => {
		const session = ((await signIn(withToken.API_TOKEN)).headers.get('set-cookie') ?? '').split(';')[0]!;
		const post = (headers: Record<string, string>) => page(withToken, 'POST', '/dashboard/api/workflows/x-1/pause', { headers: { cookie: session, ...headers } });
		expect((await post({ origin: 'https://evil.example', 'x-shardflow-dashboard': '1' })).status).toBe(403);
		expect((await post({})).status).toBe(403);
		expect((await post({ origin: ORIGIN })).status).toBe(403);
		expect((await post({ origin: ORIGIN, 'x-shardflow-dashboard': '1' })).status).toBe(404);
		const login = await page(withToken, 'POST', '/dashboard/login', {
			headers: { origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
			body: new URLSearchParams({ token: withToken.API_TOKEN }),
		});
		expect(login.status).toBe(403);
	});

	it('refuses an address that sent too many wrong tokens with 429, even its right token, while other addresses go on', async () => {
		const from = (ip: string, token?: string) => page(withToken, 'GET', '/types', { headers: { 'cf-connecting-ip': ip, ...(token ? { authorization: `Bearer ${token}` } : {}) } });
		const guesser = `198.51.100.${Math.floor(Math.random() * 250)}`;
		const statuses: number[] = [];
		for (let i = 0; i < 21; i++) statuses.push((await from(guesser, `guess-${i}`)).status);
		expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
		expect(statuses).toContain(429);
		const blocked = await from(guesser, withToken.API_TOKEN);
		expect(blocked.status).toBe(429);
		expect(JSON.parse(blocked.text).error.code).toBe('TOO_MANY_FAILED_CREDENTIALS');
		expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
		expect((await from(`${guesser}1`, withToken.API_TOKEN)).status).toBe(200);
		// Requests without any credential are not guesses: they never block anyone.
		const anonymous = `203.0.113.${Math.floor(Math.random() * 250)}`;
		for (let i = 0; i < 15; i++) expect((await from(anonymous)).status).toBe(401);
		expect((await from(anonymous, withToken.API_TOKEN)).status).toBe(200);
	});

	it('refuses the sign-in form with 429 after too many wrong tokens from one address', async () => {
		const ip = `192.0.2.${Math.floor(Math.random() * 125)}`;
		const attempt = (token: string) =>
			page(withToken, 'POST', '/dashboard/login', {
				headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded', 'cf-connecting-ip': ip },
				body: new URLSearchParams({ token }),
			});
		const statuses: number[] = [];
		for (let i = 0; i < 21; i++) statuses.push((await attempt(`wrong-${i}`)).status);
		expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
		expect(statuses).toContain(429);
		const right = await attempt(withToken.API_TOKEN);
		expect(right.status).toBe(429);
		expect(right.text).toContain('too many wrong credentials');
		expect(right.headers.get('set-cookie')).toBeNull();
	});

	it('renews a session in use on pages and API calls alike, but never past 12 hours after the sign-in', async () => {
		const start = Date.now();
		vi.useFakeTimers({ toFake: ['Date'], now: start });
		try {
			let session = ((await signIn(withToken.API_TOKEN)).headers.get('set-cookie') ?? '').split(';')[0]!;
			const api = () => page(withToken, 'GET', '/dashboard/api/types', { headers: { cookie: session } });
			expect((await api()).headers.get('set-cookie')).toBeNull(); // first half: nothing to renew
			let minutes = 0;
			for (; minutes < 13 * 60; minutes += 40) {
				vi.setSystemTime(start + (minutes + 40) * 60_000);
				const res = await api();
				if (res.status !== 200) break;
				const renewed = res.headers.get('set-cookie');
				expect(renewed, `at ${minutes + 40} min`).toMatch(/^shardflow_session=.*Max-Age=\d+.*HttpOnly.*Secure.*SameSite=Strict/);
				session = renewed!.split(';')[0]!;
			}
			// Used every 40 minutes, the session lasted to the 12th hour, and not past it.
			expect(minutes + 40).toBeGreaterThan(11 * 60);
			expect(minutes + 40).toBeLessThanOrEqual(12 * 60 + 40);
			expect((await api()).status).toBe(401);
		} finally {
			vi.useRealTimers();
		}
	});

	it('signs in after an empty or read-only form without counting it as a guess, and keeps a bad return path on the dashboard', async () => {
		const vars = { ...withToken, API_TOKEN_READONLY: 'read-only-Token-9' };
		// Not an address the 429 test above may have blocked (it draws from 192.0.2.0-124).
		const ip = `192.0.2.${125 + Math.floor(Math.random() * 125)}`;
		const attempt = (body: Record<string, string>) =>
			page(vars, 'POST', '/dashboard/login', { headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded', 'cf-connecting-ip': ip }, body: new URLSearchParams(body) });
		for (let i = 0; i < 12; i++) expect((await attempt({ token: '' })).status).toBe(401);
		const readOnly = await attempt({ token: vars.API_TOKEN_READONLY });
		expect(readOnly.status).toBe(401);
		expect(readOnly.text).toContain('read-only token cannot sign in');
		const right = await attempt({ token: vars.API_TOKEN, next: '/dashboard/\nX-Injected: 1' });
		expect(right.status).toBe(303);
		expect(right.headers.get('location')).toBe('/dashboard');
	});

	it("keeps a signed-in user's dashboard working while another address is blocked for guessing", async () => {
		for (let i = 0; i < 12; i++) await page(withToken, 'GET', '/types', { headers: { 'cf-connecting-ip': '198.51.100.250', authorization: 'Bearer nope' } });
		const session = ((await signIn(withToken.API_TOKEN)).headers.get('set-cookie') ?? '').split(';')[0]!;
		const user = { cookie: session, 'cf-connecting-ip': '203.0.113.77' };
		expect((await page(withToken, 'GET', '/dashboard/api/types', { headers: user })).status).toBe(200);
		expect((await page(withToken, 'GET', '/dashboard', { headers: user })).status).toBe(200);
	});

	it('never redirects off the dashboard after signing in', async () => {
		const res = await page(withToken, 'POST', '/dashboard/login', {
			headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
			body: new URLSearchParams({ token: withToken.API_TOKEN, next: '//evil.example/x' }),
		});
		expect(res.headers.get('location')).toBe('/dashboard');
	});

	it.for([
		['GET', '/dashboard'],
		['GET', '/dashboard/instances?type=payment'],
		['GET', '/dashboard/instances/some-id'],
		['GET', '/dashboard/api/types'],
		['GET', '/dashboard/api/workflows?type=payment'],
		['POST', '/dashboard/api/workflows/some-id/terminate'],
		['GET', '/dashboard/live/payment/0'],
	] as const)('is closed at %s %s on a deployment set up as the README says (no API_TOKEN, ALLOW_UNAUTHENTICATED or SHARDFLOW_ENV)', async ([method, path]) => {
		// The test Worker runs with SHARDFLOW_ENV=development: unset it, as a deployment that follows the README has it.
		const readmeDeployment = { API_TOKEN: undefined, ALLOW_UNAUTHENTICATED: undefined, SHARDFLOW_ENV: undefined };
		const headers = { origin: ORIGIN, 'x-shardflow-dashboard': '1', ...(path.includes('/live/') ? { upgrade: 'websocket' } : {}) };
		const res = await page(readmeDeployment, method, path, { headers });
		expect(res.status).toBe(403);
		expect(res.text).toContain('AUTH_NOT_CONFIGURED');
		// The way in under `wrangler dev`, not only production's.
		expect(res.text).toContain('SHARDFLOW_ENV=development in .dev.vars');
	});

	it('is closed on a deployment without a token, unless unauthenticated access is chosen', async () => {
		expect((await page({ SHARDFLOW_ENV: 'production' }, 'GET', '/dashboard')).status).toBe(403);
		expect((await page({ SHARDFLOW_ENV: 'production', ALLOW_UNAUTHENTICATED: 'true' }, 'GET', '/dashboard')).status).toBe(200);
	});
});
