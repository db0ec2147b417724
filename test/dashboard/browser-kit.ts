// Headless Chromium for the dashboard tests: the build that the npm package
// @sparticuz/chromium ships, driven by playwright-core. Set
// DASHBOARD_SCREENSHOTS=<dir> to keep a screenshot of each page a test names.
import chromium from '@sparticuz/chromium';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium as playwright, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';

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
