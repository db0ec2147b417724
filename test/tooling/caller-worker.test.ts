import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer } from '../../bench/lib/dev-server.mjs';

type Server = { url: string; stop: () => Promise<void> };
let server: Server;

// Two Workers in one `wrangler dev`: the caller (served) binds the engine's
// namespace by script name, exactly as it would once both are deployed.
beforeAll(async () => {
	server = await startDevServer({ configs: ['examples/caller-worker/wrangler.jsonc', 'wrangler.jsonc'] });
}, 90_000);
afterAll(() => server?.stop());

const post = (path: string, body: unknown) =>
	fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('a second Worker bound to the same namespace', () => {
	it('creates, signals, reads and lists payment workflows through the typed helpers', async () => {
		const created = await post('/checkout', { amount: 30, currency: 'CHF' });
		expect(created.status).toBe(201);
		const { id } = (await created.json()) as { id: string };
		expect((await post(`/checkout/${id}/approve`, { reviewer: 'zoe' })).status).toBe(202);
		let status: { status: string; output: unknown } | undefined;
		for (let i = 0; i < 50; i++) {
			status = (await (await fetch(`${server.url}/checkout/${id}`)).json()) as typeof status;
			if (status?.status === 'completed') break;
			await new Promise((r) => setTimeout(r, 100));
		}
		expect(status).toMatchObject({ status: 'completed', output: { status: 'charged', amount: 30, currency: 'CHF', reviewer: 'zoe' } });
		let listed: { items: { id: string; status: string }[] } | undefined;
		for (let i = 0; i < 50; i++) {
			listed = (await (await fetch(`${server.url}/checkouts`)).json()) as typeof listed;
			if (listed?.items.some((item) => item.id === id && item.status === 'completed')) break;
			await new Promise((r) => setTimeout(r, 100));
		}
		expect(listed?.items.find((item) => item.id === id)).toMatchObject({ status: 'completed' });
	});

	it('gets typed errors across the binding: a reserved id is refused before any object is touched', async () => {
		const res = await fetch(`${server.url}/checkout/__index:payment:0`);
		expect(res.status).toBe(400);
		expect(await res.json()).toMatchObject({ error: { code: 'RESERVED_ID' } });
	});

	it("reaches an eu group's object through the engine Worker, which gets no --var (only the first Worker does): no WRONG_JURISDICTION locally", async () => {
		const res = await fetch(`${server.url}/checkout/eu.eu~no-such-${Date.now()}`);
		// The caller answers every typed error 400; the engine's object was reached and has no such instance.
		expect(await res.json()).toMatchObject({ error: { code: 'NOT_FOUND' } });
	});
});
