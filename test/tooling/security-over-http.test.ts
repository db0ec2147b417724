import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer } from '../../bench/lib/dev-server.mjs';

// What an unauthenticated stranger can send to a deployment, over real HTTP
// against `wrangler dev`: an open one (as `npm run dev` serves it) and one
// protected by API_TOKEN as production is.
type Server = Awaited<ReturnType<typeof startDevServer>>;
let open: Server;
let protectedServer: Server;
const TOKEN = 'security-test-token-0123456789';

beforeAll(async () => {
	open = await startDevServer({ vars: { SHARDFLOW_ENV: 'development' } });
	protectedServer = await startDevServer({ vars: { SHARDFLOW_ENV: 'production', API_TOKEN: TOKEN } });
}, 120_000);
afterAll(async () => {
	await Promise.all([open?.stop(), protectedServer?.stop()]);
});

/** A GET whose path is sent exactly as written (no client-side normalisation), answered within `ms` or failed. */
function rawGet(server: Server, path: string, ms = 10_000): Promise<{ status: number; body: string }> {
	return new Promise((resolve, reject) => {
		const req = request({ host: '127.0.0.1', port: server.port, path, method: 'GET', timeout: ms }, (res) => {
			let body = '';
			res.on('data', (d) => (body += d));
			res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
		});
		req.on('timeout', () => req.destroy(new Error(`no answer to GET ${path} within ${ms} ms`)));
		req.on('error', reject);
		req.end();
	});
}

const MiB = 1024 * 1024;

/** Streams `mib` MiB with `transfer-encoding: chunked` (no declared length) and resolves with the status, or the error that ended the request. */
function postChunked(server: Server, path: string, headers: Record<string, string>, mib: number): Promise<number | string> {
	return new Promise((resolve) => {
		const req = request({ host: '127.0.0.1', port: server.port, path, method: 'POST', headers: { ...headers, 'transfer-encoding': 'chunked' } }, (res) => {
			res.resume();
			res.on('end', () => resolve(res.statusCode ?? 0));
		});
		req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
		const chunk = Buffer.alloc(MiB, 'a');
		let sent = 0;
		const pump = () => {
			while (sent < mib) {
				sent++;
				if (!req.write(chunk)) return void req.once('drain', pump);
			}
			req.end();
		};
		pump();
	});
}

/**
 * Posts `bytes` with a declared length, as curl and most clients send a file; with `expect`, first
 * `Expect: 100-continue` (curl's way above 1 MiB), sending the body on 100 Continue. Resolves with the
 * answer within 15 s, or what ended the request.
 */
function postDeclared(server: Server, path: string, headers: Record<string, string>, bytes: number, expect: boolean): Promise<{ status: number; body: string } | string> {
	return new Promise((resolve) => {
		const body = Buffer.alloc(bytes, 'a');
		const req = request(
			{ host: '127.0.0.1', port: server.port, path, method: 'POST', timeout: 15_000, headers: { ...headers, 'content-length': String(bytes), ...(expect ? { expect: '100-continue' } : {}) } },
			(res) => {
				let text = '';
				res.on('data', (d) => (text += d));
				res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
			},
		);
		req.on('timeout', () => req.destroy(new Error('no answer within 15 s')));
		req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
		if (expect) req.on('continue', () => req.end(body));
		else req.end(body);
	});
}

/**
 * Posts a 40 MB body and reports the answer and how much the Worker's `workerd`
 * grew meanwhile. wrangler's own proxy holds the body once on its way in (about
 * its size); a Worker that parsed it as well grows by several times that
 * (measured: +254 MiB for a 40 MB sign-in form before the dashboard's limit).
 */
async function postLarge(server: Server, path: string, headers: Record<string, string>) {
	server.peakMemory.reset();
	const before = server.peakMemory.mib();
	const res = await fetch(`${server.url}${path}`, { method: 'POST', headers, body: 'token=' + 'a'.repeat(40 * MiB) });
	const body = await res.text();
	return { status: res.status, body, grewMiB: server.peakMemory.mib() - before };
}

describe('the dashboard proxy is one hop to the API, whatever the path spells', () => {
	it('proxies a percent-encoded dashboard API path to the API route it decodes to, and keeps serving', async () => {
		const res = await rawGet(open, '/dashboard/%61pi/types');
		expect(res.status).toBe(200);
		expect(JSON.parse(res.body).types.map((t: { type: string }) => t.type)).toContain('payment');
		expect((await rawGet(open, '/workflows?limit=1')).status).toBe(200);
	});

	it('refuses a path that leads back into the dashboard, in any spelling, with 404', async () => {
		for (const path of ['/dashboard/api/%64ashboard/api/types', '/dashboard/api/dashboard/api/types', '/dashboard/api/%44ashboard/api/types', '/dashboard/api//dashboard/api/types']) {
			const res = await rawGet(open, path);
			expect(res.status, path).toBe(404);
			expect(JSON.parse(res.body).error.code, path).toBe('ROUTE_NOT_FOUND');
		}
		expect((await rawGet(open, '/workflows?limit=1')).status).toBe(200);
	});
});

describe('bodies are refused before they are read', () => {
	it('answers a 40 MB sign-in form with 413, without parsing it', async () => {
		const res = await postLarge(protectedServer, '/dashboard/login', { origin: protectedServer.url, 'content-type': 'application/x-www-form-urlencoded' });
		expect(res.status).toBe(413);
		expect(res.body).toContain('TOO_LARGE');
		expect(res.grewMiB).toBeLessThan(100);
	});

	it('answers a 40 MB call of the dashboard API in open mode with 413, without reading it', async () => {
		const res = await postLarge(open, '/dashboard/api/workflows', { origin: open.url, 'content-type': 'application/json', 'x-shardflow-dashboard': '1' });
		expect(res.status).toBe(413);
		expect(JSON.parse(res.body).error.code).toBe('TOO_LARGE');
		expect(res.grewMiB).toBeLessThan(100);
	});

	it('answers streamed (chunked) bodies over the limit with 413, each of several at once, and keeps serving', async () => {
		const statuses = await Promise.all(Array.from({ length: 5 }, () => postChunked(open, '/dashboard/api/workflows', { origin: open.url, 'x-shardflow-dashboard': '1', 'content-type': 'application/json' }, 8)));
		expect(statuses).toEqual(Array(5).fill(413));
		expect(await postChunked(open, '/workflows', { 'content-type': 'application/json' }, 4)).toBe(413);
		expect((await rawGet(open, '/workflows?limit=1')).status).toBe(200);
	});

	it('answers a 3 MB bulk operation with 413 TOO_LARGE JSON, sent whole or after Expect: 100-continue, open and with a token', async () => {
		const json = { 'content-type': 'application/json' };
		for (const [server, headers] of [
			[open, json],
			[protectedServer, { ...json, authorization: `Bearer ${TOKEN}` }],
		] as const) {
			for (const expectContinue of [false, true]) {
				const res = await postDeclared(server, '/workflows/bulk', headers, 3_000_000, expectContinue);
				expect(res, `expect: ${expectContinue}`).toMatchObject({ status: 413 });
				expect(JSON.parse((res as { body: string }).body).error.code).toBe('TOO_LARGE');
			}
			expect(await postChunked(server, '/workflows/bulk', headers, 3)).toBe(413);
		}
	});

	it('still signs in with a normal form', async () => {
		const res = await fetch(`${protectedServer.url}/dashboard/login`, {
			method: 'POST',
			redirect: 'manual',
			headers: { origin: protectedServer.url, 'content-type': 'application/x-www-form-urlencoded' },
			body: new URLSearchParams({ token: TOKEN, next: '/dashboard' }),
		});
		expect(res.status).toBe(303);
		expect(res.headers.get('set-cookie')).toMatch(/shardflow_session=/);
	});
});
