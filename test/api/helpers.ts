import { env, exports } from 'cloudflare:workers';
import { createApp, type ApiEnv } from '../../src/api/app';
import { testRegistry } from '../worker/index';
import { testClock } from '../worker/test-clock';

/** A request through the Worker's real fetch handler (the Hono app). */
export async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
	const init: RequestInit = { method, headers: { ...headers } };
	if (body !== undefined) {
		init.body = typeof body === 'string' ? body : JSON.stringify(body);
		(init.headers as Record<string, string>)['content-type'] ??= 'application/json';
	}
	const response = await (exports as unknown as { default: Fetcher }).default.fetch(`http://shardflow.test${path}`, init);
	const text = await response.text();
	let json: any;
	try {
		json = JSON.parse(text);
	} catch {
		json = undefined;
	}
	return { status: response.status, json, text, headers: response.headers };
}

/** The same app with other variables (an API token, production mode). */
export async function apiWith(vars: Partial<ApiEnv>, method: string, path: string, init: RequestInit = {}) {
	const app = createApp(testRegistry, { clock: testClock.now });
	const response = await app.fetch(new Request(`http://shardflow.test${path}`, { method, ...init }), { ...(env as unknown as ApiEnv), ...vars });
	return { status: response.status, json: (await response.json().catch(() => undefined)) as any };
}
