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
	}, 240_000);
});
