// The dashboard in a real browser (see browser-kit.ts), against a real `wrangler dev`.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { dashboardUnderTest, expectNoPageErrors, screenshot, until } from './browser-kit';

// The dashboard's test Worker: the product's types plus a schedule, parent and child types, a code version and an archive.
const server = dashboardUnderTest();
const { call, openPage } = server;

let counter = 0;
const newId = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${counter++}`;
const createPayment = (id: string, amount = 10) => call('POST', '/workflows', { type: 'payment', id, payload: { amount, currency: 'EUR' } });

const statusOf = (id: string) => call('GET', `/workflows/${id}`).then((r) => r.json?.status as string);

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
		const page = await openPage(`/dashboard/instances?type=payment&order=sideways`);
		const banner = page.locator('.banner.error[role="alert"]');
		expect(await banner.textContent()).toBe('INVALID_QUERY order: must be created, updated, attr.NAME or -attr.NAME');
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
		await page.waitForSelector(`#instances tbody tr[data-id="${matching}"][data-status="waiting"]`, { timeout: 15_000 });
		const seenAfter = Date.now() - started;
		// The paused one may have shown while it was waiting; it must be gone once paused.
		await page.waitForSelector(`#instances tbody tr[data-id="${otherStatus}"]`, { state: 'detached', timeout: 15_000 });
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
		await page.waitForSelector('.tl-row[data-row="do:charge-card"] .seg.attempt.ok', { timeout: 15_000 });
		await page.waitForSelector('#instance-status .badge.status-completed', { timeout: 15_000 });
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
		await page.waitForSelector('#instance-status .badge.status-waiting', { timeout: 15_000 });
		// The message says the status the badge shows, not the control's passing "running".
		expect(await page.textContent('#control-result')).toContain(`is ${await page.textContent('#instance-status .badge')} now`);
		noPageErrors(page);
		await page.close();
	});

	it('terminates with the rollbacks of the completed steps run first when the dialog asks for them', async () => {
		const id = newId('term-rb');
		await createPayment(id);
		await until(() => statusOf(id), (s) => s === 'waiting', 'the payment to wait');
		const page = await openPage(`/dashboard/instances/${id}`);
		await page.click('button[data-action="terminate"]');
		await page.waitForSelector('dialog#confirm[open]');
		expect(await page.isChecked('#terminate-rollback')).toBe(false);
		await page.check('#terminate-rollback');
		await shot(page, 'instance-terminate-rollback');
		await page.click('#confirm-ok');
		await page.waitForSelector('#instance-status .badge.status-terminated', { timeout: 15_000 });
		expect((await call('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'terminated', rollback: { reason: 'terminated', state: 'completed' } });
		noPageErrors(page);
		await page.close();
	});

	it('shows the wait a terminate cut short as cancelled on the timeline', async () => {
		const id = newId('cancelled');
		await createPayment(id);
		await until(() => statusOf(id), (s) => s === 'waiting', 'the payment to wait');
		expect((await call('POST', `/workflows/${id}/terminate`)).status).toBe(200);
		const page = await openPage(`/dashboard/instances/${id}`);
		await page.waitForSelector('#instance-status .badge.status-terminated');
		const wait = page.locator('.tl-row[data-row^="wait:"]');
		await wait.first().waitFor();
		expect(await wait.first().locator('.tl-took').textContent()).toContain('cancelled');
		expect(await wait.first().locator('.seg.cancelled').count()).toBe(1);
		await shot(page, 'instance-cancelled');
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
		await page.waitForSelector('#instance-status .badge.status-completed', { timeout: 15_000 });
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
		await page.waitForSelector('#instance-status .badge.status-completed', { timeout: 15_000 });
		// The answer stays readable; the form no longer sends (the API would answer 409).
		await page.waitForSelector('#event-closed', { state: 'visible' });
		expect(await page.isDisabled('button:text("Send event")')).toBe(true);
		await shot(page, 'instance-event-closed');
		expect(await page.textContent('#generation')).toBe('0');

		await page.click('button[data-action="restart"]');
		await page.click('#confirm-ok');
		await page.waitForSelector('#instance-status .badge.status-waiting', { timeout: 15_000 });
		await page.waitForSelector('#event-closed', { state: 'hidden' });
		expect(await page.isDisabled('button:text("Send event")')).toBe(false);
		expect(await page.textContent('#generation')).toBe('1');

		// A page opened on the finished instance has no form; it appears once a restart makes it wait.
		await page.fill('#event-payload', '{"approved": true, "reviewer": "rita"}');
		await page.click('button:text("Send event")');
		await page.waitForSelector('#instance-status .badge.status-completed', { timeout: 15_000 });
		const fresh = await openPage(`/dashboard/instances/${id}`);
		expect(await fresh.locator('#event-card').isVisible()).toBe(false);
		await call('POST', `/workflows/${id}/restart`);
		await fresh.waitForSelector('#event-card', { state: 'visible', timeout: 15_000 });
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

	it('shows runs per minute and run times per type on the overview, and updates them without a reload', async () => {
		const id = newId('met');
		await createPayment(id);
		await until(() => statusOf(id), (s) => s === 'waiting', 'the payment to wait');
		await call('POST', `/workflows/${id}/events/approval`, { approved: true, reviewer: 'mo' });
		await until(() => statusOf(id), (s) => s === 'completed', 'the payment to complete');
		const page = await openPage('/dashboard');
		const hour = page.locator('[data-metrics="payment"] tr[data-window="hour"]').first();
		await hour.waitFor();
		const startedBefore = Number((await hour.locator('[data-metric="started"]').textContent())!.replace(/,/g, ''));
		expect(startedBefore).toBeGreaterThanOrEqual(1);
		const runTime = page.locator('[data-metrics="payment"] tr[data-window="hour"] [data-metric="p50"]');
		// A number keeps its unit (a no-break space): a long duration wraps between its parts, never inside one.
		expect(await runTime.textContent()).toMatch(/^\d+(\.\d)?\u00a0(ms|s)$/);
		expect(await page.evaluate(() => [...document.querySelectorAll('.metric-table td')].filter((td) => td.scrollWidth > td.clientWidth).length)).toBe(0);
		expect(await page.locator('[data-metrics="payment"] .spark-col').count()).toBe(60);
		// Live: a run started now shows within the 5 s refresh, without a reload.
		await createPayment(newId('met-live'));
		await page.waitForFunction(
			(before) => Number(document.querySelector('[data-metrics="payment"] tr[data-window="hour"] [data-metric="started"]')?.textContent?.replace(/,/g, '')) > before,
			startedBefore,
			{ timeout: 15_000 },
		);
		await shot(page, 'overview');
		const phone = await openPage('/dashboard', { width: 390, height: 844 });
		await phone.locator('[data-metrics="payment"] tr[data-window="day"]').first().waitFor();
		expect(await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
		await shot(phone, 'overview-phone');
		noPageErrors(page);
		noPageErrors(phone);
		await Promise.all([page.close(), phone.close()]);
	});

	it("shows a type's schedule: its cron, next ticks, recent runs linked to their instances, and pauses and resumes it", { timeout: 40_000 }, async () => {
		const schedules = await until(() => call('GET', '/schedules'), (r) => r.json.schedules[0]?.lastRuns.length > 0, 'a heartbeat tick to run', 25_000);
		const run = schedules.json.schedules[0].lastRuns[0];
		const list = await openPage('/dashboard/schedules');
		expect(await list.locator('#schedules tr[data-type="heartbeat"] .mono').textContent()).toBe('*/10 * * * * *');
		await Promise.all([list.waitForURL(/\/schedules\/heartbeat$/), list.click('#schedules a:text("heartbeat")')]);
		const page = list;
		expect(await page.textContent('#schedule-cron')).toBe('*/10 * * * * *');
		const ticks = await page.locator('#next-ticks time').evaluateAll((els) => els.map((el) => Number((el as HTMLElement).dataset.ms)));
		expect(ticks).toHaveLength(5);
		expect(ticks.slice(1).map((t, i) => t - ticks[i]!)).toEqual([10_000, 10_000, 10_000, 10_000]);
		const row = page.locator(`#schedule-runs tr[data-tick="${run.tick}"]`);
		expect(await row.getAttribute('data-outcome')).toBe('started');
		expect(await page.textContent('#schedule-missed')).toMatch(/^\d+ in the runs below$/);
		await shot(page, 'schedule');
		const phone = await openPage('/dashboard/schedules/heartbeat', { width: 390, height: 844 });
		expect(await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
		await shot(phone, 'schedule-phone');
		await phone.close();

		await page.click('button[data-schedule-action="pause"]');
		await page.click('#confirm-ok');
		await page.waitForSelector('#schedule-state.schedule-paused');
		expect((await call('GET', '/schedules')).json.schedules[0].state).toBe('paused');
		expect(await page.textContent('#next-ticks')).toContain('Paused');
		await page.click('button[data-schedule-action="resume"]');
		await page.click('#confirm-ok');
		await page.waitForSelector('#schedule-state.schedule-active');
		expect((await call('GET', '/schedules')).json.schedules[0].state).toBe('active');

		await Promise.all([page.waitForURL(new RegExp(`/instances/${encodeURIComponent(run.instanceId)}$`)), row.locator('a').click()]);
		expect(await page.textContent('h1')).toBe(run.instanceId);
		noPageErrors(page);
		await page.close();
	});

	it("links a parent to its children and back, and shows the tree of a parent's children with their statuses", async () => {
		const id = newId('order');
		await call('POST', '/workflows', { type: 'order', id, payload: { orderId: id } });
		await until(() => call('GET', `/workflows?parent=${id}`), (r) => r.json.items.length === 2 && r.json.items.some((i: { status: string }) => i.status === 'completed') && r.json.items.some((i: { status: string }) => i.status === 'waiting'), 'a completed receipt and a waiting shipment');
		const page = await openPage(`/dashboard/instances/${id}`);
		const tree = page.locator('#children');
		expect(await tree.locator(`li[data-child="${id}::receipt"] .badge`).textContent()).toBe('completed');
		expect(await tree.locator(`li[data-child="${id}::ship"] .badge`).textContent()).toBe('waiting');
		await shot(page, 'instance-children');
		await Promise.all([page.waitForURL(/%3A%3Aship$/), tree.locator(`li[data-child="${id}::ship"] a`).click()]);
		expect(await page.locator('#parent-link a').textContent()).toBe(id);
		await page.waitForSelector('.tl-row[data-row="wait:ship"]');
		await Promise.all([page.waitForURL(new RegExp(`/instances/${id}$`)), page.click('#parent-link a')]);
		// The list of one parent's children, from the tree's link.
		await Promise.all([page.waitForURL(/parent=/), page.click('#children a:text("All children in the list")')]);
		const ids = await page.locator('#instances tbody tr').evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.id).sort());
		expect(ids).toEqual([`${id}::receipt`, `${id}::ship`]);
		expect(await page.textContent('#parent-filter')).toContain(id);
		noPageErrors(page);
		await page.close();
	});

	it('restarts a finished instance from a chosen step and shows the earlier run on request', async () => {
		const id = newId('from');
		await createPayment(id, 30);
		await until(() => statusOf(id), (s) => s === 'waiting', 'the payment to wait');
		await call('POST', `/workflows/${id}/events/approval`, { approved: true, reviewer: 'ann' });
		await until(() => statusOf(id), (s) => s === 'completed', 'the payment to complete');
		const page = await openPage(`/dashboard/instances/${id}`);
		await page.waitForSelector('.tl-row[data-row="do:charge-card"]');
		await page.click('button[data-action="restart"]');
		await page.waitForSelector('dialog#confirm[open] #restart-from');
		const options = await page.locator('#restart-from option').allTextContents();
		expect(options[0]).toContain('the beginning');
		expect(options.some((o) => o.startsWith('step "charge-card"'))).toBe(true);
		await page.selectOption('#restart-from', { label: options.find((o) => o.startsWith('step "charge-card"'))! });
		await shot(page, 'instance-restart-from');
		await page.click('#confirm-ok');
		await page.waitForSelector('#control-result:not(:empty)', { timeout: 15_000 });
		expect(await page.textContent('#control-result')).toContain('restart: done');
		await page.waitForSelector('#generation:text("1")', { timeout: 15_000 });
		await page.waitForSelector('#instance-status .badge.status-completed', { timeout: 15_000 });
		const history = (await call('GET', `/workflows/${id}/history`)).json;
		const restarted = history.events.find((e: { kind: string }) => e.kind === 'workflow.restarted');
		expect(restarted).toMatchObject({ from: 'charge-card', fromType: 'do' });
		// The current run kept reserve-funds and the approval: only charge-card ran again.
		expect(history.events.filter((e: { kind: string }) => e.kind === 'step.started').map((e: { step: string }) => e.step)).toEqual(['charge-card']);

		await page.waitForSelector('.run-picker:not([hidden])');
		await page.selectOption('#run-select', '0');
		const historyCount = (text: string) => page.waitForFunction((t) => document.querySelector('#history-count')?.textContent?.includes(t), text);
		await historyCount('in run 1 (an earlier run)');
		const kinds = await page.locator('#history tbody td.kind').allTextContents();
		expect(kinds).toContain('event.consumed');
		expect(kinds).not.toContain('workflow.restarted');
		await page.waitForSelector('.tl-row[data-row="do:reserve-funds"]');
		await shot(page, 'instance-earlier-run');
		await page.selectOption('#run-select', '');
		await historyCount('in run 2,');
		expect(await page.locator('#history tbody td.kind').allTextContents()).toContain('workflow.restarted');
		noPageErrors(page);
		await page.close();
	});

	it('deletes an instance after a confirmation: archived first it stays readable, without the archive it is gone', async () => {
		const [kept, gone] = [newId('del-arch'), newId('del')];
		for (const id of [kept, gone]) {
			await createPayment(id);
			await until(() => statusOf(id), (s) => s === 'waiting', 'the payment to wait');
			await call('POST', `/workflows/${id}/terminate`);
			await until(() => statusOf(id), (s) => s === 'terminated', 'the terminate');
		}
		const page = await openPage(`/dashboard/instances/${kept}`);
		await page.click('button[data-action="delete"]');
		await page.waitForSelector('dialog#confirm[open] #delete-archive');
		expect(await page.evaluate(() => document.activeElement?.id)).toBe('confirm-cancel');
		expect(await page.isChecked('#delete-archive')).toBe(true);
		await shot(page, 'instance-delete');
		await Promise.all([page.waitForEvent('load'), page.click('#confirm-ok')]);
		await page.waitForSelector('.archived-badge');
		expect((await call('GET', `/workflows/${kept}`)).json.archived).toBe(true);

		await page.goto(`${server.url}/dashboard/instances/${gone}`);
		await page.click('button[data-action="delete"]');
		await page.uncheck('#delete-archive');
		await page.click('#confirm-ok');
		await page.waitForSelector('#control-result.ok-box');
		expect(await page.textContent('#control-result')).toContain(`Deleted ${gone}`);
		expect((await call('GET', `/workflows/${gone}`)).status).toBe(404);
		noPageErrors(page);
		await page.close();
	});

	it('filters by code version and shows the columns the operator chose, remembered after a reload', async () => {
		const [payment, other] = [newId('cv'), newId('cv-test')];
		await createPayment(payment);
		await call('POST', '/workflows', { type: 'test', id: other, payload: { name: 'cv' } });
		await until(() => call('GET', '/workflows?codeVersion=2026-11-26.2&limit=1000'), (r) => r.json.items.some((i: { id: string }) => i.id === payment), 'the payment in the index');
		const page = await openPage('/dashboard/instances');
		await page.fill('input[name="codeVersion"]', '2026-11-26.2');
		await Promise.all([page.waitForURL(/codeVersion=2026-11-26.2/), page.click('button:text("Apply")')]);
		const ids = await page.locator('#instances tbody tr').evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.id));
		expect(ids).toContain(payment);
		expect(ids).not.toContain(other);
		const cell = page.locator(`#instances tbody tr[data-id="${payment}"] [data-col="codeVersion"]`);
		expect(await cell.isVisible()).toBe(false);
		await page.click('#columns-menu summary');
		await page.check('#columns-menu input[value="codeVersion"]');
		await page.uncheck('#columns-menu input[value="updatedAt"]');
		expect(await cell.textContent()).toBe('2026-11-26.2');
		expect(await cell.isVisible()).toBe(true);
		await shot(page, 'list-columns');
		await page.reload();
		expect(await page.locator(`#instances tbody tr[data-id="${payment}"] [data-col="codeVersion"]`).isVisible()).toBe(true);
		expect(await page.locator('#instances thead [data-col="updatedAt"]').isVisible()).toBe(false);
		noPageErrors(page);
		await page.close();
	});

	it('shows whole step names on the desktop timeline, wrapped within the name column, with the time beside them', async () => {
		const id = newId('long-names');
		await call('POST', '/workflows', { type: 'long-step-names', id, payload: {} });
		await until(() => statusOf(id), (s) => s === 'completed', 'the run to complete');
		const page = await openPage(`/dashboard/instances/${id}`);
		await page.waitForSelector('.tl-row[data-row="do:ok"]');
		const long = 'reserve-the-warehouse-stock-for-every-line-of-the-order-and-tell-the-customer';
		const unbroken = 'averyveryverylongstepnamewithoutanyplacetobreakitatallwhatsoever';
		for (const name of [long, unbroken]) {
			const row = page.locator(`.tl-row[data-row="do:${name}"]`);
			expect(await row.locator('.tl-label').textContent()).toBe(name);
			// Nothing of the name is cut off: neither the label nor the column it sits in hides any of it.
			for (const part of ['.tl-label', '.tl-name']) {
				expect(await row.locator(part).evaluate((el) => el.scrollWidth <= el.clientWidth + 1 && el.scrollHeight <= el.clientHeight + 1), `${name} ${part}`).toBe(true);
			}
			expect(await row.locator('.tl-took').isVisible()).toBe(true);
			// The bars keep their width beside the name column.
			expect((await row.locator('.tl-track').boundingBox())!.width).toBeGreaterThan(600);
		}
		await shot(page, 'desktop-long-step-names');
		noPageErrors(page);
		await page.close();
	});

	it('reads at phone width: folded filters, ticks apart, whole step names, durations and markers without hover, history details on their own line', async () => {
		const id = newId('phone-with-a-long-name');
		await createPayment(id);
		await until(() => statusOf(id), (s) => s === 'waiting', 'the payment to wait');
		await call('POST', `/workflows/${id}/pause`);
		await call('POST', `/workflows/${id}/resume`);
		await until(() => statusOf(id), (s) => s === 'waiting', 'the payment to wait again');
		await call('POST', `/workflows/${id}/events/approval`, { approved: true, reviewer: 'phone' });
		await until(() => statusOf(id), (s) => s === 'completed', 'the payment to complete');

		const list = await openPage('/dashboard/instances?type=payment', { width: 390, height: 844 });
		expect(await list.locator('#filters-fold').getAttribute('open')).toBeNull();
		const firstRow = await list.locator('#instances tbody tr').first().boundingBox();
		expect(firstRow!.y + firstRow!.height).toBeLessThan(844);
		expect(await list.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
		await shot(list, 'phone');
		await list.close();

		const page = await openPage(`/dashboard/instances/${id}`, { width: 390, height: 844 });
		await page.waitForSelector('.tl-row[data-row="do:charge-card"]');
		expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
		// Tick labels do not touch.
		const boxes = await page.locator('.tl-ticks span').evaluateAll((els) => els.filter((el) => (el as HTMLElement).offsetParent !== null).map((el) => el.getBoundingClientRect()).map((r) => [r.left, r.right]));
		expect(boxes.length).toBeGreaterThanOrEqual(3);
		for (let i = 1; i < boxes.length; i++) expect(boxes[i]![0]).toBeGreaterThan(boxes[i - 1]![1] + 4);
		// Step names whole, durations in view.
		for (const label of await page.locator('.tl-label').all()) expect(await label.evaluate((el) => el.scrollWidth <= el.clientWidth + 1)).toBe(true);
		expect(await page.locator('.tl-row[data-row="do:reserve-funds"] .tl-took').textContent()).toMatch(/\d/);
		expect(await page.locator('.tl-row[data-row="do:reserve-funds"] .tl-took').isVisible()).toBe(true);
		// Markers: glyphs on the chart, in words below, and named in the legend.
		expect(await page.locator('.tl-flag.workflow-paused').count()).toBe(1);
		expect(await page.textContent('.tl-marks')).toMatch(/paused \+.*resumed \+/);
		expect(await page.textContent('.legend')).toContain('paused');
		// A tap opens a row's attempts in words.
		await page.locator('.tl-row[data-row="do:charge-card"]').click();
		await page.waitForSelector('.tl-row[data-row="do:charge-card"] .tl-detail li:text-matches("attempt 1: ok after")');
		// A history record's details take the width of the screen, not a sliver of it.
		const summary = await page.locator('#history tbody tr', { hasText: 'wait.started' }).locator('summary').boundingBox();
		expect(summary!.width).toBeGreaterThan(200);
		await shot(page, 'phone-instance');
		noPageErrors(page);
		await page.close();
	});
});
