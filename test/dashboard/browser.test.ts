// The dashboard in a real browser (see browser-kit.ts), against a real `wrangler dev`.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer } from '../../bench/lib/dev-server.mjs';
import { expectNoPageErrors, launchBrowser, openPage as open, screenshot } from './browser-kit';

type Server = Awaited<ReturnType<typeof startDevServer>>;
let server: Server;
let browser: Browser;

beforeAll(async () => {
	[server, browser] = await Promise.all([startDevServer(), launchBrowser()]);
}, 120_000);
afterAll(async () => {
	await browser?.close();
	await server?.stop();
});

async function call(method: string, path: string, body?: unknown) {
	const res = await fetch(`${server.url}${path}`, {
		method,
		...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
	});
	return { status: res.status, json: (await res.json().catch(() => null)) as any };
}

let counter = 0;
const newId = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${counter++}`;
const createPayment = (id: string, amount = 10) => call('POST', '/workflows', { type: 'payment', id, payload: { amount, currency: 'EUR' } });

/** Waits until the API says so (the index lags an instance by a few ms). */
async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string, timeoutMs = 5000): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await read();
		if (ok(value)) return value;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value).slice(0, 300)}`);
		await new Promise((r) => setTimeout(r, 50));
	}
}
const statusOf = (id: string) => call('GET', `/workflows/${id}`).then((r) => r.json?.status as string);

const openPage = (path: string, viewport?: { width: number; height: number }): Promise<Page> => open(browser, `${server.url}${path}`, viewport);
const shot = screenshot;
const noPageErrors = expectNoPageErrors;

describe('the dashboard in a browser', { timeout: 20_000 }, () => {
	it('shows every type with its counts per status on the overview', async () => {
		const [a, b, c] = [newId('ov'), newId('ov'), newId('ov')];
		await Promise.all([createPayment(a), createPayment(b), createPayment(c)]);
		await until(() => Promise.all([a, b, c].map(statusOf)), (s) => s.every((x) => x === 'waiting'), 'three waiting payments');
		await call('POST', `/workflows/${c}/pause`);
		const counts = await until(
			() => call('GET', '/types').then((r) => r.json.types.find((t: { type: string }) => t.type === 'payment').counts),
			(c) => c.paused >= 1,
			'the index to count the pause',
		);
		const page = await openPage('/dashboard');
		const card = page.locator('[data-type="payment"]');
		expect(await card.locator('[data-count="waiting"]').textContent()).toBe(String(counts.waiting));
		expect(await card.locator('[data-count="paused"]').textContent()).toBe(String(counts.paused));
		expect(await card.locator('footer').textContent()).toContain('4 index shards');
		expect(await page.locator('[data-type="test"]').count()).toBe(1);
		await shot(page, 'overview');
		noPageErrors(page);
		await page.close();
	});

	it('filters the list by type and several statuses through the form', async () => {
		const [waiting, paused] = [newId('flt'), newId('flt')];
		await Promise.all([createPayment(waiting), createPayment(paused)]);
		await until(() => Promise.all([waiting, paused].map(statusOf)), (s) => s.every((x) => x === 'waiting'), 'two waiting payments');
		await call('POST', `/workflows/${paused}/pause`);
		await call('POST', '/workflows', { type: 'test', id: newId('flt-test'), payload: { name: 'x' } });
		await until(() => call('GET', '/workflows?type=payment&status=paused'), (r) => r.json.items.some((i: { id: string }) => i.id === paused), 'the pause in the index');

		const page = await openPage('/dashboard/instances');
		await page.selectOption('select[name="type"]', 'payment');
		await page.check('input[name="status"][value="paused"]');
		await page.check('input[name="status"][value="terminated"]');
		await Promise.all([page.waitForURL(/status=paused/), page.click('button:text("Apply")')]);
		expect(page.url()).toMatch(/type=payment/);
		const rows = page.locator('#instances tbody tr');
		const ids = await rows.evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.id));
		expect(ids).toContain(paused);
		expect(ids).not.toContain(waiting);
		const statuses = await rows.evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.status));
		expect(new Set(statuses)).toEqual(new Set(statuses.filter((s) => s === 'paused' || s === 'terminated')));
		expect(await page.isChecked('input[name="status"][value="paused"]')).toBe(true);
		noPageErrors(page);
		await page.close();
	});

	it('shows the API\'s 400 for a list query it refuses (order=sideways) instead of ignoring it', async () => {
		const page = await open(browser, `${server.url}/dashboard/instances?type=payment&order=sideways`);
		const banner = page.locator('.banner.error[role="alert"]');
		expect(await banner.textContent()).toBe('INVALID_QUERY order: Invalid option: expected one of "created"|"updated"');
		expect(await page.locator('#instances tbody tr').count()).toBe(0);
		expect(await page.locator('#empty').textContent()).toContain('Fix the filter above');
		// No live feed fills in another list under the error, however long the page stays open.
		expect(await page.locator('#live').getAttribute('data-state')).toBe('off');
		await page.waitForTimeout(1500);
		expect(await page.locator('#instances tbody tr').count()).toBe(0);
		await shot(page, 'list-refused-order');
		const response = await page.goto(`${server.url}/dashboard/instances?limit=5000`);
		expect(response?.status()).toBe(400);
		expect(await banner.textContent()).toBe('INVALID_QUERY limit must be a whole number from 1 to 1000');
		await shot(page, 'list-refused-query');
		noPageErrors(page);
		await page.close();
	});

	it('adds an instance created through the API to an open, filtered list without a reload, and leaves out one that does not match', async () => {
		const page = await openPage('/dashboard/instances?type=payment&status=waiting');
		await page.waitForSelector('#live[data-state="live"]');
		const [matching, otherStatus, otherType] = [newId('live'), newId('live-paused'), newId('live-test')];
		const started = Date.now();
		await createPayment(matching);
		await call('POST', '/workflows', { type: 'test', id: otherType, payload: { name: 'no' } });
		await createPayment(otherStatus);
		await until(() => statusOf(otherStatus), (s) => s === 'waiting', 'the second payment to wait');
		await call('POST', `/workflows/${otherStatus}/pause`);
		await page.waitForSelector(`#instances tbody tr[data-id="${matching}"][data-status="waiting"]`, { timeout: 3000 });
		const seenAfter = Date.now() - started;
		// The paused one may have shown while it was waiting; it must be gone once paused.
		await page.waitForSelector(`#instances tbody tr[data-id="${otherStatus}"]`, { state: 'detached', timeout: 3000 });
		expect(await page.locator(`#instances tbody tr[data-id="${otherType}"]`).count()).toBe(0);
		expect(seenAfter).toBeLessThan(3000);
		await shot(page, 'list-live');
		noPageErrors(page);
		await page.close();
	});

	it("grows an instance's timeline while it runs, without a reload", async () => {
		const id = newId('tl');
		await createPayment(id, 77);
		await until(() => statusOf(id), (s) => s === 'waiting', 'the payment to wait');
		const page = await openPage(`/dashboard/instances/${id}`);
		await page.waitForSelector('.tl-row[data-row="do:reserve-funds"] .seg.attempt.ok');
		await page.waitForSelector('.tl-row[data-row="wait:approval"] .seg.wait.open');
		expect(await page.locator('.tl-row[data-row="do:charge-card"]').count()).toBe(0);
		await call('POST', `/workflows/${id}/events/approval`, { approved: true, reviewer: 'tess' });
		await page.waitForSelector('.tl-row[data-row="do:charge-card"] .seg.attempt.ok', { timeout: 4000 });
		await page.waitForSelector('#instance-status .badge.status-completed', { timeout: 4000 });
		expect(await page.locator('.tl-row[data-row="wait:approval"] .seg.wait.open').count()).toBe(0);
		expect(await page.locator('#history tbody tr').count()).toBeGreaterThanOrEqual(9);
		await shot(page, 'instance-completed');
		noPageErrors(page);
		await page.close();
	});

	it('keeps the page size when paging: Next of ?limit=2 shows 2 rows and keeps limit=2', async () => {
		const ids = [newId('pg'), newId('pg'), newId('pg'), newId('pg'), newId('pg')];
		for (const id of ids) await createPayment(id);
		await until(() => call('GET', '/workflows?type=payment&limit=1000'), (r) => ids.every((id) => r.json.items.some((i: { id: string }) => i.id === id)), 'five payments in the index');
		const page = await openPage('/dashboard/instances?type=payment&limit=2');
		expect(await page.locator('#instances tbody tr').count()).toBe(2);
		const next = page.locator('a[rel="next"]');
		expect(await next.getAttribute('href')).toContain('limit=2');
		await next.click();
		await page.waitForLoadState('load');
		expect(new URL(page.url()).searchParams.get('limit')).toBe('2');
		expect(await page.locator('#instances tbody tr').count()).toBe(2);
		noPageErrors(page);
		await page.close();
	});

	it('pauses and resumes an instance from its page, each after a confirmation', async () => {
		const id = newId('ctl');
		await createPayment(id);
		await until(() => statusOf(id), (s) => s === 'waiting', 'the payment to wait');
		const page = await openPage(`/dashboard/instances/${id}`);
		await page.click('button[data-action="pause"]');
		await page.waitForSelector('dialog#confirm[open]');
		await shot(page, 'instance-confirm');
		await page.click('#confirm-ok');
		await page.waitForSelector('#instance-status .badge.status-paused');
		expect(await statusOf(id)).toBe('paused');
		expect(await page.isDisabled('button[data-action="pause"]')).toBe(true);

		// A destructive action's dialog has Cancel focused: a stray Enter changes nothing.
		for (const action of ['terminate', 'restart']) {
			if (await page.isDisabled(`button[data-action="${action}"]`)) continue;
			await page.click(`button[data-action="${action}"]`);
			await page.waitForSelector('dialog#confirm[open]');
			expect(await page.evaluate(() => document.activeElement?.id), action).toBe('confirm-cancel');
			await page.keyboard.press('Enter');
			await page.waitForSelector('dialog#confirm[open]', { state: 'detached' });
			expect(await statusOf(id)).toBe('paused');
		}

		await page.click('button[data-action="resume"]');
		await page.click('#confirm-ok');
		await page.waitForSelector('#control-result.ok-box');
		await until(() => statusOf(id), (s) => s === 'waiting', 'the resumed payment to wait again');
		await page.waitForSelector('#instance-status .badge.status-waiting', { timeout: 4000 });
		// The message says the status the badge shows, not the control's passing "running".
		expect(await page.textContent('#control-result')).toContain(`is ${await page.textContent('#instance-status .badge')} now`);
		noPageErrors(page);
		await page.close();
	});

	it('shows the expected shape of an event, refuses a bad payload with its error, then completes a waiting payment', async () => {
		const id = newId('evt');
		await createPayment(id, 12);
		await until(() => statusOf(id), (s) => s === 'waiting', 'the payment to wait');
		const page = await openPage(`/dashboard/instances/${id}`);
		expect(await page.textContent('#event-schema')).toContain('"reviewer"');
		await page.fill('#event-payload', '{"approved": "yes"}');
		await page.click('button:text("Send event")');
		await page.waitForSelector('#event-result.error-box');
		expect(await page.textContent('#event-result')).toMatch(/INVALID_EVENT_PAYLOAD.*approved/s);
		await shot(page, 'instance-event-refused');
		expect(await statusOf(id)).toBe('waiting');

		await page.fill('#event-payload', '{"approved": true, "reviewer": "rita"}');
		await page.click('button:text("Send event")');
		await page.waitForSelector('#event-result.ok-box');
		await page.waitForSelector('#instance-status .badge.status-completed', { timeout: 4000 });
		expect((await call('GET', `/workflows/${id}`)).json.output).toEqual({ status: 'charged', amount: 12, currency: 'EUR', reviewer: 'rita' });
		noPageErrors(page);
		await page.close();
	});

	it('says an accepted event is buffered when no wait takes it, and shows a wait\'s timeout as a time', async () => {
		const id = newId('buf');
		await createPayment(id);
		await until(() => statusOf(id), (s) => s === 'waiting', 'the payment to wait');
		await call('POST', `/workflows/${id}/pause`);
		await until(() => statusOf(id), (s) => s === 'paused', 'the pause');
		const page = await openPage(`/dashboard/instances/${id}`);
		await page.fill('#event-payload', '{"approved": true, "reviewer": "rita"}');
		await page.click('button:text("Send event")');
		await page.waitForSelector('#event-result.ok-box');
		expect(await page.textContent('#event-result')).toContain('is buffered');
		const waitRow = page.locator('#history tbody tr', { hasText: 'wait.started' });
		expect(await waitRow.locator('summary').textContent()).toMatch(/times out at|no timeout/);
		expect(await waitRow.locator('summary').textContent()).not.toMatch(/\d{13}/);
		await shot(page, 'instance-event-buffered');
		noPageErrors(page);
		await page.close();
	});

	it('closes the event form once the instance finishes and opens it again, with the new run number, after a restart, without a reload', async () => {
		const id = newId('rst');
		await createPayment(id);
		await until(() => statusOf(id), (s) => s === 'waiting', 'the payment to wait');
		const page = await openPage(`/dashboard/instances/${id}`);
		const form = page.locator('#event-card');
		expect(await form.isVisible()).toBe(true);
		await page.fill('#event-payload', '{"approved": true, "reviewer": "rita"}');
		await page.click('button:text("Send event")');
		await page.waitForSelector('#instance-status .badge.status-completed', { timeout: 4000 });
		// The answer stays readable; the form no longer sends (the API would answer 409).
		await page.waitForSelector('#event-closed', { state: 'visible' });
		expect(await page.isDisabled('button:text("Send event")')).toBe(true);
		await shot(page, 'instance-event-closed');
		expect(await page.textContent('#generation')).toBe('0');

		await page.click('button[data-action="restart"]');
		await page.click('#confirm-ok');
		await page.waitForSelector('#instance-status .badge.status-waiting', { timeout: 4000 });
		await page.waitForSelector('#event-closed', { state: 'hidden' });
		expect(await page.isDisabled('button:text("Send event")')).toBe(false);
		expect(await page.textContent('#generation')).toBe('1');

		// A page opened on the finished instance has no form; it appears once a restart makes it wait.
		await page.fill('#event-payload', '{"approved": true, "reviewer": "rita"}');
		await page.click('button:text("Send event")');
		await page.waitForSelector('#instance-status .badge.status-completed', { timeout: 4000 });
		const fresh = await openPage(`/dashboard/instances/${id}`);
		expect(await fresh.locator('#event-card').isVisible()).toBe(false);
		await call('POST', `/workflows/${id}/restart`);
		await fresh.waitForSelector('#event-card', { state: 'visible', timeout: 6000 });
		expect(await fresh.textContent('#generation')).toBe('2');
		noPageErrors(fresh);
		await fresh.close();
		noPageErrors(page);
		await page.close();
	});

	it('is readable at phone width', async () => {
		const page = await openPage('/dashboard/instances?type=payment', { width: 390, height: 844 });
		await page.waitForSelector('#live[data-state="live"]');
		const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
		expect(overflow).toBeLessThanOrEqual(0);
		await shot(page, 'list-phone');
		await page.close();
	});
});
