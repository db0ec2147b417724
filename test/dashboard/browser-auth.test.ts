// With API_TOKEN set, in a real browser against a real `wrangler dev` in production mode.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer } from '../../bench/lib/dev-server.mjs';
import { expectNoPageErrors, launchBrowser, openPage, screenshot } from './browser-kit';

const TOKEN = 'browser-Token-42';
let server: Awaited<ReturnType<typeof startDevServer>>;
let browser: Browser;

beforeAll(async () => {
	[server, browser] = await Promise.all([startDevServer({ vars: { API_TOKEN: TOKEN } }), launchBrowser()]);
}, 120_000);
afterAll(async () => {
	await browser?.close();
	await server?.stop();
});

describe('the dashboard of a deployment with API_TOKEN', { timeout: 20_000 }, () => {
	it('refuses the pages without the token, and works after signing in once', async () => {
		const created = await fetch(`${server.url}/workflows`, {
			method: 'POST',
			headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
			body: JSON.stringify({ type: 'payment', id: 'secret-pay', payload: { amount: 3, currency: 'EUR' } }),
		});
		expect(created.status).toBe(201);

		const page = await openPage(browser, `${server.url}/dashboard/instances/secret-pay`);
		expect(new URL(page.url()).pathname).toBe('/dashboard/login');
		expect(await page.textContent('h1')).toBe('Sign in');
		expect(await page.content()).not.toContain('amount');
		expect((await page.request.get(`${server.url}/dashboard/api/workflows/secret-pay`)).status()).toBe(401);
		await screenshot(page, 'login');

		await page.fill('input[name="token"]', 'wrong-token');
		await page.click('button:text("Sign in")');
		expect(await page.textContent('.banner.error')).toContain('not');

		await page.fill('input[name="token"]', TOKEN);
		await Promise.all([page.waitForURL(/\/dashboard\/instances\/secret-pay$/), page.click('button:text("Sign in")')]);
		expect(await page.textContent('h1')).toBe('secret-pay');
		// The page's own scripts reach the API through the session: the timeline fills in, live.
		await page.waitForSelector('.tl-row[data-row="wait:approval"]');
		const cookies = await page.context().cookies();
		expect(cookies).toEqual([expect.objectContaining({ name: 'shardflow_session', httpOnly: true, sameSite: 'Strict', path: '/dashboard' })]);
		expect(cookies[0]!.value).not.toContain(TOKEN);
		expect(page.url()).not.toContain(TOKEN);

		// The live sockets need the session too; with it the list goes live.
		await page.goto(`${server.url}/dashboard/instances?type=payment`);
		await page.waitForSelector('#live[data-state="live"]');
		await page.waitForSelector('#instances tbody tr[data-id="secret-pay"]');
		expectNoPageErrors(page);
		await page.close();
	});
});
