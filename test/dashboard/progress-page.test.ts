import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { startDevServer } from '../../bench/lib/dev-server.mjs';
import { expectNoPageErrors, launchBrowser, openPage, screenshot } from './browser-kit';

type Server = Awaited<ReturnType<typeof startDevServer>>;
const persistTo = mkdtempSync(join(tmpdir(), 'shardflow-progress-'));
let server: Server | undefined;
let browser: Browser | undefined;
afterAll(async () => {
	await browser?.close();
	await server?.stop();
	rmSync(persistTo, { recursive: true, force: true });
});

const shown = (page: import('playwright-core').Page) =>
	page.$$eval('#log li', (items) => items.map((li) => ({ done: Number((li as HTMLElement).dataset.done), seq: Number((li as HTMLElement).dataset.seq) })));

describe('the live progress example page', () => {
	it('shows progress messages in order while the workflow runs, across a kill -9 of the runtime and a reconnect, with no gap and no duplicate', async () => {
		server = await startDevServer({ persistTo });
		browser = await launchBrowser();
		const page = await openPage(browser, `${server.url}/examples/progress`);
		await page.click('#start');
		await page.waitForFunction(() => document.querySelectorAll('#log li').length >= 3, null, { timeout: 30_000 });
		await screenshot(page, 'progress-running');

		const port = server.port;
		await server.crash(); // mid-run: wrangler and workerd die at once, nothing flushed
		const beforeCrash = await shown(page);
		expect(beforeCrash.length).toBeLessThan(20);
		await page.waitForFunction(() => document.getElementById('state')?.dataset.state === 'reconnecting', null, { timeout: 10_000 });
		await screenshot(page, 'progress-reconnecting');
		server = await startDevServer({ persistTo, port });

		await page.waitForFunction(() => document.getElementById('state')?.dataset.state === 'completed', null, { timeout: 120_000 });
		await screenshot(page, 'progress-completed');
		const messages = await shown(page);
		expect(messages.map((m) => m.done)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
		const seqs = messages.map((m) => m.seq);
		expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
		expect(await page.getAttribute('.bar', 'aria-valuenow')).toBe('100');
		expectNoPageErrors(page);
		await page.close();
	}, 240_000);

	it("lists the run's custom messages on the dashboard's instance page, newest first, as they arrive", async () => {
		server ??= await startDevServer({ persistTo });
		browser ??= await launchBrowser();
		const created = await fetch(`${server.url}/workflows`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ type: 'progress', payload: { parts: 6, partMs: 400 } }),
		});
		const { id } = (await created.json()) as { id: string };
		const page = await openPage(browser, `${server.url}/dashboard/instances/${id}`);
		await page.waitForSelector('#messages-card:not([hidden]) #messages tbody tr', { timeout: 15_000 });
		await page.waitForSelector('#instance-status .badge.status-completed', { timeout: 30_000 });
		await page.waitForFunction(() => document.querySelectorAll('#messages tbody tr').length === 6, null, { timeout: 5_000 });
		const rows = await page.$$eval('#messages tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '')));
		expect(rows.map((r) => r[0])).toEqual(['6', '5', '4', '3', '2', '1']);
		expect(rows.every((r) => r[2] === 'progress')).toBe(true);
		expect(rows[0]![3]).toContain('"percent":100');
		expect(await page.locator('#messages-count').textContent()).toContain('6 messages');
		await screenshot(page, 'dashboard-instance-messages');
		expectNoPageErrors(page);
		await page.close();
	}, 90_000);
});
