// Headless Chromium for the dashboard tests: the build that the npm package
// @sparticuz/chromium ships, driven by playwright-core. Set
// DASHBOARD_SCREENSHOTS=<dir> to keep a screenshot of each page a test names.
import chromium from '@sparticuz/chromium';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium as playwright, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { startDevServer } from '../../bench/lib/dev-server.mjs';

export async function launchBrowser(): Promise<Browser> {
	// Without --single-process (meant for Lambda), closing a page's context does not end the browser.
	const args = chromium.args.filter((arg) => arg !== '--single-process');
	return playwright.launch({ executablePath: await chromium.executablePath(), args, headless: true });
}

const pageErrors = new WeakMap<Page, string[]>();

export async function openPage(browser: Browser, url: string, viewport = { width: 1280, height: 860 }): Promise<Page> {
	const page = await browser.newPage({ viewport });
	const errors: string[] = [];
	pageErrors.set(page, errors);
	page.on('pageerror', (e) => errors.push(e.message));
	await page.goto(url);
	return page;
}

/** The page's scripts threw nothing. */
export function expectNoPageErrors(page: Page): void {
	expect(pageErrors.get(page)).toEqual([]);
}

export async function screenshot(page: Page, name: string): Promise<void> {
	const dir = process.env.DASHBOARD_SCREENSHOTS;
	if (!dir) return;
	mkdirSync(dir, { recursive: true });
	await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
}

/** A JSON call to the API of the server under test: its status and parsed body (null when it has none). */
export async function callApi(baseUrl: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
	const res = await fetch(`${baseUrl}${path}`, {
		method,
		...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
	});
	return { status: res.status, json: (await res.json().catch(() => null)) as any };
}

type DevServer = Awaited<ReturnType<typeof startDevServer>>;

/**
 * A `wrangler dev` of the dashboard's test Worker (the product's types plus a schedule, parent
 * and child types, a code version and an archive) and a headless browser, started before a
 * file's tests and stopped after them: what the dashboard's browser test files share.
 */
export function dashboardUnderTest(options: Parameters<typeof startDevServer>[0] = { configs: ['test/worker/dashboard.wrangler.jsonc'] }) {
	let server: DevServer | undefined;
	let browser: Browser | undefined;
	beforeAll(async () => {
		[server, browser] = await Promise.all([startDevServer(options), launchBrowser()]);
	}, 120_000);
	afterAll(async () => {
		await browser?.close();
		await server?.stop();
	});
	const started = () => {
		if (!server || !browser) throw new Error('the dev server and the browser start in beforeAll');
		return { server, browser };
	};
	return {
		/** The server's base URL (`http://127.0.0.1:<port>`). */
		get url(): string {
			return started().server.url;
		},
		get browser(): Browser {
			return started().browser;
		},
		/** A JSON call to the server's API. */
		call: (method: string, path: string, body?: unknown) => callApi(started().server.url, method, path, body),
		/** A new page at a path of the server. */
		openPage: (path: string, viewport?: { width: number; height: number }): Promise<Page> => openPage(started().browser, `${started().server.url}${path}`, viewport),
	};
}

/** Waits until a read says so (the index lags an instance by a few ms); polls every 50 ms. */
export async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string, timeoutMs = 8000): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await read();
		if (ok(value)) return value;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value).slice(0, 300)}`);
		await new Promise((r) => setTimeout(r, 50));
	}
}
