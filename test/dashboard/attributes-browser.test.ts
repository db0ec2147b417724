// Search attributes and bulk operations in the dashboard, in a real browser (browser-kit.ts) against `wrangler dev`.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { dashboardUnderTest, expectNoPageErrors, screenshot as shot, until } from './browser-kit';

const server = dashboardUnderTest();
const { call, openPage } = server;
const run = Date.now().toString(36);
let counter = 0;
/** A customer id no other test uses: each test's instances are its own. */
const customer = () => `c${run}${counter++}`;
const pay = (id: string, attributes: Record<string, unknown>, amount = 10) => call('POST', '/workflows', { type: 'payment', id, payload: { amount, currency: 'EUR' }, attributes });
const listed = (query: string) => call('GET', `/workflows?type=payment&${query}`).then((r) => (r.json.items as { id: string }[]).map((i) => i.id));
const rowIds = (page: Page) => page.locator('#instances tbody tr').evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.id));

describe('search attributes in the dashboard', { timeout: 30_000 }, () => {
	it("filters the list by the type's attributes through generated inputs (any of, a number range, a boolean) and shows them as columns", async () => {
		const c1 = customer();
		const c2 = customer();
		const ids = { small: `${c1}-small`, big: `${c1}-big`, vip: `${c2}-vip`, other: `${c2}-other` };
		await Promise.all([
			pay(ids.small, { customerId: c1, amount: 20, vip: false }),
			pay(ids.big, { customerId: c1, amount: 500, vip: false }),
			pay(ids.vip, { customerId: c2, amount: 300, vip: true, dueAt: Date.parse('2026-12-01T10:00:00Z') }),
			pay(ids.other, { customerId: 'someone-else', amount: 400, vip: false }),
		]);
		await until(() => listed(`attr.customerId=${c1}&attr.customerId=${c2}`), (l) => l.length === 3, 'the three in the index');

		const page = await openPage('/dashboard/instances');
		expect(await page.locator('#attribute-hint').isVisible()).toBe(true);
		await Promise.all([page.waitForURL(/type=payment/), (async () => {
			await page.selectOption('select[name="type"]', 'payment');
			await page.click('button:text("Apply")');
		})()]);
		// Inputs come from the declaration: a keyword field, number and datetime ranges, a yes/no choice.
		const inputs = page.locator('#attribute-filters');
		expect(await inputs.locator('input[name="attr.customerId"]').count()).toBe(1);
		expect(await inputs.locator('input[name="attr.amount.gte"][type="number"]').count()).toBe(1);
		expect(await inputs.locator('input[data-ms-for="attr.dueAt.gte"]').count()).toBe(1);
		expect(await inputs.locator('select[name="attr.vip"] option').allTextContents()).toEqual(['any', 'yes', 'no']);

		await page.fill('input[name="attr.customerId"]', `${c1}, ${c2}`);
		await page.fill('input[name="attr.amount.gte"]', '250');
		await Promise.all([page.waitForURL(/attr\.amount\.gte=250/), page.click('button:text("Apply")')]);
		expect(new URL(page.url()).searchParams.getAll('attr.customerId')).toEqual([c1, c2]);
		expect(new Set(await rowIds(page))).toEqual(new Set([ids.big, ids.vip]));
		expect(await page.inputValue('input[name="attr.customerId"]')).toBe(`${c1}, ${c2}`);

		await page.selectOption('select[name="attr.vip"]', 'true');
		await Promise.all([page.waitForURL(/attr\.vip=true/), page.click('button:text("Apply")')]);
		expect(await rowIds(page)).toEqual([ids.vip]);
		// The first three attributes are columns by default; the row shows the values.
		const row = page.locator(`#instances tbody tr[data-id="${ids.vip}"]`);
		expect(await row.locator('[data-col="attr-customerId"]').textContent()).toBe(c2);
		expect(await row.locator('[data-col="attr-amount"]').textContent()).toBe('300');
		expect(await row.locator('[data-col="attr-vip"]').isVisible()).toBe(false);
		expect(await row.locator('[data-col="attr-dueAt"] time').getAttribute('data-ms')).toBe(String(Date.parse('2026-12-01T10:00:00Z')));
		await shot(page, 'list-attributes');

		// A datetime range, entered in local time, goes as ms.
		await page.selectOption('select[name="attr.vip"]', '');
		await page.fill('input[name="attr.amount.gte"]', '');
		await page.fill('input[data-ms-for="attr.dueAt.gte"]', '2026-11-30T00:00:00');
		await Promise.all([page.waitForURL(/attr\.dueAt\.gte=\d+/), page.click('button:text("Apply")')]);
		expect(await rowIds(page)).toEqual([ids.vip]);
		expectNoPageErrors(page);
		await page.close();
	});

	it('orders by an attribute, narrows by id prefix, and keeps the chosen attribute columns after a reload', async () => {
		const c = customer();
		await Promise.all([100, 300, 200].map((amount, i) => pay(`${c}-${i}`, { customerId: c, amount }, amount)));
		await pay(`x${c}`, { customerId: c, amount: 999 });
		await until(() => listed(`attr.customerId=${c}`), (l) => l.length === 4, 'four in the index');
		const page = await openPage(`/dashboard/instances?type=payment&attr.customerId=${c}&idPrefix=${c}-&order=-attr.amount`);
		expect(await page.locator('select[name="order"]').inputValue()).toBe('-attr.amount');
		expect(await rowIds(page)).toEqual([`${c}-1`, `${c}-2`, `${c}-0`]);
		// The live feed's catch-up (after connecting, or an overflow) keeps the attribute's order.
		await page.waitForSelector('#live[data-state="live"]');
		await page.evaluate(() => (window as any).shardflowList.catchUp());
		expect(await rowIds(page)).toEqual([`${c}-1`, `${c}-2`, `${c}-0`]);
		await page.click('#columns-menu summary');
		await page.uncheck('#columns-menu input[name="attribute-column"][value="customerId"]');
		await page.check('#columns-menu input[name="attribute-column"][value="vip"]');
		await page.reload();
		expect(await page.locator('th[data-col="attr-customerId"]').isVisible()).toBe(false);
		expect(await page.locator('th[data-col="attr-vip"]').isVisible()).toBe(true);
		expect(await page.locator('th[data-col="attr-amount"]').isVisible()).toBe(true);
		expectNoPageErrors(page);
		await page.close();
	});

	it('adds a new instance to an open list filtered by attributes only when its attributes match', async () => {
		const c = customer();
		const page = await openPage(`/dashboard/instances?type=payment&attr.customerId=${c}&attr.amount.gte=100`);
		await page.waitForSelector('#live[data-state="live"]');
		await pay(`${c}-small`, { customerId: c, amount: 50 });
		await pay(`${c}-other`, { customerId: `${c}x`, amount: 500 });
		await pay(`${c}-match`, { customerId: c, amount: 150 });
		await page.waitForSelector(`#instances tbody tr[data-id="${c}-match"]`, { timeout: 15_000 });
		await page.waitForTimeout(500);
		expect(await rowIds(page)).toEqual([`${c}-match`]);
		expect(await page.locator(`tr[data-id="${c}-match"] [data-col="attr-amount"]`).textContent()).toBe('150');
		expectNoPageErrors(page);
		await page.close();
	});

	it('holds an exact id to the attribute conditions too, and shows its attributes in the row', async () => {
		const c = customer();
		const id = `${c}-exact`;
		await pay(id, { customerId: c, amount: 70 });
		await until(() => listed(`attr.customerId=${c}`), (l) => l.length === 1, 'the instance in the index');
		const page = await openPage(`/dashboard/instances?type=payment&id=${id}&attr.customerId=${c}`);
		expect(await rowIds(page)).toEqual([id]);
		await page.goto(`${server.url}/dashboard/instances?type=payment&id=${id}&attr.customerId=${c}x`);
		expect(await rowIds(page)).toEqual([]);
		await page.goto(`${server.url}/dashboard/instances?type=payment&id=${id}`);
		expect(await page.locator(`tr[data-id="${id}"] [data-col="attr-amount"]`).textContent()).toBe('70');
		expectNoPageErrors(page);
		await page.close();
	});

	it("shows the API's 400 and no rows for an attribute condition it refuses", async () => {
		const page = await openPage('/dashboard/instances?type=payment&attr.amount.gte=lots');
		const banner = page.locator('.banner.error[role="alert"]');
		expect(await banner.textContent()).toMatch(/^INVALID_QUERY .*amount/);
		expect(await page.locator('#instances tbody tr').count()).toBe(0);
		expect(await page.locator('#live').getAttribute('data-state')).toBe('off');
		const unknown = await page.goto(`${server.url}/dashboard/instances?type=payment&attr.colour=red`);
		expect(unknown?.status()).toBe(400);
		expect(await banner.textContent()).toMatch(/^INVALID_QUERY .*colour/);
		await shot(page, 'list-attributes-refused');
		expectNoPageErrors(page);
		await page.close();
	});

	it.for([
		['a reserved attribute name', 'attr.__proto__=x', /__proto__/],
		['an operator the API does not take', 'attr.amount.eq=5', /attr\.amount\.eq/],
		['an attribute with no name', 'attr.=1', /attr\./],
		['a misspelt parameter', 'stauts=waiting', /stauts/],
	] as const)("shows the API's 400, no rows and no bulk action for %s instead of dropping the condition", async ([, condition, named]) => {
		await pay(`${customer()}-bystander`, { customerId: 'refused-filter' });
		await until(() => listed('attr.customerId=refused-filter'), (l) => l.length > 0, 'an instance of the type in the index');
		const page = await openPage(`/dashboard/instances?type=payment&${condition}`);
		const banner = page.locator('.banner.error[role="alert"]');
		expect(await banner.textContent()).toMatch(/^INVALID_QUERY /);
		expect(await banner.textContent()).toMatch(named);
		expect(await page.locator('#instances tbody tr').count()).toBe(0);
		// No bulk action: without the condition, its query would be the whole type.
		expect(await page.locator('#bulk-form').count()).toBe(0);
		expect(await page.locator('#live').getAttribute('data-state')).toBe('off');
		const response = await page.goto(page.url());
		expect(response?.status()).toBe(400);
		expectNoPageErrors(page);
		await page.close();
	});

	it("shows an instance's attributes on its page, each linked to the list of that value", async () => {
		const c = customer();
		const id = `${c}-page`;
		await pay(id, { customerId: c, amount: 120, vip: true });
		const page = await openPage(`/dashboard/instances/${id}`);
		const card = page.locator('#attributes-card');
		expect(await card.locator('[data-attr="customerId"] dd').textContent()).toBe(c);
		expect(await card.locator('[data-attr="amount"] dd').textContent()).toBe('120');
		expect(await card.locator('[data-attr="vip"] dd').textContent()).toBe('yes');
		expect(await card.locator('[data-attr="dueAt"] dd').textContent()).toBe('not set');
		await shot(page, 'instance-attributes');
		await Promise.all([page.waitForURL(/attr\.customerId=/), card.locator('[data-attr="customerId"] a').click()]);
		expect(await rowIds(page)).toEqual([id]);
		expectNoPageErrors(page);
		await page.close();
	});

	it('reads at phone width: the attribute filters and columns fit', async () => {
		const page = await openPage('/dashboard/instances?type=payment', { width: 390, height: 844 });
		await page.click('#filters-fold summary');
		const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
		expect(overflow).toBeLessThanOrEqual(0);
		await shot(page, 'list-attributes-phone');
		expectNoPageErrors(page);
		await page.close();
	});

	it('stays folded at phone width with filters active ("Filters (n active)") until tapped, and shows attribute values under the id instead of scrolling the table sideways', async () => {
		const c = customer();
		const id = `${c}-phone-with-a-long-name`;
		await pay(id, { customerId: c, amount: 1234.5, vip: true, dueAt: Date.parse('2026-12-01T10:00:00Z') });
		await until(() => listed(`attr.customerId=${c}`), (l) => l.length === 1, 'the payment in the index');
		const page = await openPage(`/dashboard/instances?type=payment&status=waiting&attr.customerId=${c}&attr.amount.gte=1000`, { width: 390, height: 844 });
		await page.waitForSelector('#live[data-state="live"]');
		const fold = page.locator('#filters-fold');
		expect(await fold.getAttribute('open')).toBeNull();
		expect((await fold.locator('summary').textContent())?.replace(/\s+/g, ' ').trim()).toBe('Filters (4 active)');
		const row = page.locator(`#instances tbody tr[data-id="${id}"]`);
		const box = await row.boundingBox();
		expect(box!.y + box!.height).toBeLessThan(844);
		// No sideways scroll, in the page or inside the table's card.
		expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
		expect(await page.locator('.table-card').evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
		// The attribute values are on the phone too, inside the row's width.
		for (const [name, text] of [['customerId', c], ['amount', '1234.5']] as const) {
			const cell = row.locator(`[data-col="attr-${name}"]`);
			expect(await cell.isVisible()).toBe(true);
			expect(await cell.textContent()).toContain(text);
			const cellBox = await cell.boundingBox();
			expect(cellBox!.x + cellBox!.width).toBeLessThanOrEqual(390);
		}
		await shot(page, 'list-filtered-phone');
		await page.click('#filters-fold summary');
		expect(await fold.getAttribute('open')).not.toBeNull();
		expect(await page.locator('input[name="attr.customerId"]').isVisible()).toBe(true);
		await shot(page, 'list-filtered-phone-open');
		expectNoPageErrors(page);
		await page.close();
	});

	it('terminates every instance the filter matches after a confirmation that shows the dry-run count (Cancel focused), then shows the live progress and the job page', async () => {
		const c = customer();
		const ids = [0, 1, 2].map((i) => `${c}-t${i}`);
		const done = `${c}-already`;
		const bystander = `${customer()}-keep`;
		await Promise.all([...ids, done].map((id) => pay(id, { customerId: c })));
		await pay(bystander, { customerId: 'not-this-one' });
		await call('POST', `/workflows/${done}/terminate`, {});
		await until(() => call('GET', `/workflows?type=payment&attr.customerId=${c}&status=terminated`), (r) => r.json.items.length === 1, 'the terminated one in the index');

		const page = await openPage(`/dashboard/instances?type=payment&attr.customerId=${c}`);
		await page.selectOption('#bulk-action', 'terminate');
		await page.click('#bulk-start');
		const dialog = page.locator('dialog#confirm');
		await dialog.waitFor({ state: 'visible' });
		expect(await page.locator('#confirm-text').textContent()).toMatch(/^Terminate 4 payment instances matching this filter\?/);
		expect(await page.evaluate(() => document.activeElement?.id)).toBe('confirm-cancel');
		await shot(page, 'bulk-confirm');
		// Cancel changes nothing.
		await page.click('#confirm-cancel');
		await page.waitForTimeout(300);
		expect(await page.locator('#bulk-progress').isVisible()).toBe(false);
		expect((await call('GET', `/workflows/${ids[0]}`)).json.status).toBe('waiting');

		await page.click('#bulk-start');
		await dialog.waitFor({ state: 'visible' });
		await page.click('#confirm-ok');
		const progress = page.locator('#bulk-progress');
		await progress.waitFor({ state: 'visible' });
		await page.waitForSelector('#bulk-progress[data-state="completed"]', { timeout: 15_000 });
		expect(await progress.locator('[data-count="matched"]').textContent()).toBe('4');
		expect(await progress.locator('[data-count="done"]').textContent()).toBe('3');
		expect(await progress.locator('[data-count="skipped"]').textContent()).toBe('1');
		expect(await progress.locator('#bulk-reasons li').textContent()).toContain('INVALID_STATE');
		expect(await progress.locator('#bulk-bar').getAttribute('aria-valuenow')).toBe('4');
		expect(await progress.locator('#bulk-cancel').isVisible()).toBe(false);
		for (const id of ids) expect((await call('GET', `/workflows/${id}`)).json.status).toBe('terminated');
		expect((await call('GET', `/workflows/${bystander}`)).json.status).toBe('waiting');
		await shot(page, 'bulk-progress');

		// The job has a page of its own, reachable by URL.
		await Promise.all([page.waitForURL(/\/dashboard\/bulk\//), progress.locator('#bulk-link').click()]);
		await page.waitForSelector('#bulk-progress[data-state="completed"]');
		expect(await page.locator('[data-count="done"]').textContent()).toBe('3');
		await shot(page, 'bulk-job');
		const phone = await openPage(new URL(page.url()).pathname, { width: 390, height: 844 });
		await phone.waitForSelector('#bulk-progress[data-state="completed"]');
		expect(await phone.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBeLessThanOrEqual(0);
		await shot(phone, 'bulk-job-phone');
		expectNoPageErrors(page);
		expectNoPageErrors(phone);
		await Promise.all([page.close(), phone.close()]);
	});

	it("sends an event to every matching instance: the payload editor shows the event's JSON Schema and a value of its shape, the idempotency key goes with it, and the list reads itself again when the job ends", async () => {
		const c = customer();
		const ids = [0, 1, 2].map((i) => `${c}-e${i}`);
		await Promise.all(ids.map((id) => pay(id, { customerId: c })));
		await until(() => listed(`attr.customerId=${c}&status=waiting`), (l) => l.length === 3, 'three waiting payments in the index');

		const page = await openPage(`/dashboard/instances?type=payment&attr.customerId=${c}`);
		await page.waitForSelector('#live[data-state="live"]');
		const editor = page.locator('#bulk-form [data-for="sendEvent"]');
		expect(await editor.isVisible()).toBe(false);
		await page.selectOption('#bulk-action', 'sendEvent');
		expect(await editor.isVisible()).toBe(true);
		expect(await page.locator('#bulk-event-name option').allTextContents()).toEqual(['approval', 'refund-requested']);
		expect(JSON.parse((await page.locator('#bulk-event-schema').textContent()) ?? '{}')).toMatchObject({ type: 'object', required: ['approved', 'reviewer'] });
		expect(JSON.parse(await page.inputValue('#bulk-event-payload'))).toEqual({ approved: false, reviewer: '' });

		// A payload the event's schema refuses is the API's 400, before anything is counted or asked.
		await page.click('#bulk-start');
		await until(() => page.locator('#bulk-tools-note').textContent(), (t) => /INVALID_EVENT_PAYLOAD/.test(t ?? ''), 'the refusal');
		expect(await page.locator('dialog#confirm').isVisible()).toBe(false);

		await page.fill('#bulk-event-payload', '{"approved": true, "reviewer": "bulk-reviewer"}');
		// The refusal named the payload that was asked; once it changes, the refusal is gone.
		expect(await page.locator('#bulk-tools-note').textContent()).toBe('');
		await page.fill('#bulk-form input[name="idempotencyKey"]', `approve-${c}`);
		await shot(page, 'bulk-send-event');
		await page.click('#bulk-start');
		await page.locator('dialog#confirm').waitFor({ state: 'visible' });
		expect(await page.locator('#confirm-text').textContent()).toContain(`Send "approval" (idempotency key approve-${c}) to 3 payment instances matching this filter?`);
		await page.click('#confirm-ok');
		await page.waitForSelector('#bulk-progress[data-state="completed"]', { timeout: 15_000 });
		const job = (await call('GET', `/bulk/${await page.locator('#bulk-progress').getAttribute('data-job')}`)).json;
		expect(job).toMatchObject({ done: 3, action: { kind: 'sendEvent', event: 'approval', payload: { approved: true, reviewer: 'bulk-reviewer' }, idempotencyKey: `approve-${c}` } });
		// The rows show where the instances are now.
		await page.waitForFunction((n) => [...document.querySelectorAll('#instances tbody tr')].filter((tr) => (tr as HTMLElement).dataset.status === 'completed').length === n, 3, { timeout: 10_000 });
		for (const id of ids) expect((await call('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'completed', output: { status: 'charged', reviewer: 'bulk-reviewer' } });
		expectNoPageErrors(page);
		await page.close();
	});

	it('sends the options the API takes: terminate with rollbacks, restart from a step, delete terminating and archiving first; the rows go once the delete ends', async () => {
		const c = customer();
		const ids = [0, 1].map((i) => `${c}-o${i}`);
		await Promise.all(ids.map((id) => pay(id, { customerId: c })));
		await until(() => listed(`attr.customerId=${c}&status=waiting`), (l) => l.length === 2, 'two waiting payments in the index');
		const page = await openPage(`/dashboard/instances?type=payment&attr.customerId=${c}`);
		await page.waitForSelector('#live[data-state="live"]');
		const run = async (kind: string, options: () => Promise<void>, confirmText: string) => {
			await page.selectOption('#bulk-action', kind);
			await options();
			const before = await page.locator('#bulk-progress').getAttribute('data-job');
			await page.click('#bulk-start');
			await page.locator('dialog#confirm').waitFor({ state: 'visible' });
			expect(await page.locator('#confirm-text').textContent()).toContain(confirmText);
			await page.click('#confirm-ok');
			await page.waitForFunction((previous) => {
				const card = document.getElementById('bulk-progress');
				return card?.dataset.state === 'completed' && card.dataset.job !== previous;
			}, before, { timeout: 15_000 });
			return (await call('GET', `/bulk/${await page.locator('#bulk-progress').getAttribute('data-job')}`)).json;
		};

		expect(await page.locator('#bulk-form [data-for="terminate"]').isVisible()).toBe(true);
		const terminated = await run('terminate', () => page.check('#bulk-form input[name="rollback"]'), 'Terminate, running their rollbacks first, 2 payment instances');
		expect(terminated).toMatchObject({ done: 2, action: { kind: 'terminate', rollback: true } });
		await until(() => listed(`attr.customerId=${c}&status=terminated`), (l) => l.length === 2, 'both terminated');

		const restarted = await run('restart', () => page.fill('#bulk-form input[name="from"]', 'reserve-funds'), 'Restart from step "reserve-funds" 2 payment instances');
		expect(restarted).toMatchObject({ done: 2, action: { kind: 'restart', from: 'reserve-funds' } });
		await until(() => listed(`attr.customerId=${c}&status=waiting`), (l) => l.length === 2, 'both waiting again');

		await page.selectOption('#bulk-action', 'delete');
		expect(await page.locator('#bulk-form [data-for="terminate"]').isVisible()).toBe(false);
		const deleted = await run(
			'delete',
			async () => {
				await page.check('#bulk-form input[name="terminate"]');
				await page.check('#bulk-form input[name="archive"]');
				await shot(page, 'bulk-delete-options');
			},
			'Delete, terminating unfinished ones and archiving each first, 2 payment instances',
		);
		expect(deleted).toMatchObject({ done: 2, failed: 0, action: { kind: 'delete', archive: true, terminate: true } });
		for (const id of ids) expect((await call('GET', `/workflows/${id}`)).json).toMatchObject({ id, archived: true });
		await page.waitForFunction(() => document.querySelectorAll('#instances tbody tr').length === 0, null, { timeout: 10_000 });
		expect(await page.locator('#empty').isVisible()).toBe(true);
		expectNoPageErrors(page);
		await page.close();
	});

	it("cancels a running job from its page: what was done stays done, the rest is left alone", async () => {
		const c = customer();
		const ids = [0, 1, 2, 3, 4, 5].map((i) => `${c}-slow${i}`);
		await Promise.all(ids.map((id) => pay(id, { customerId: c })));
		await until(() => listed(`attr.customerId=${c}`), (l) => l.length === ids.length, 'six in the index');
		const job = await call('POST', '/workflows/bulk', { query: { type: 'payment', attributes: { customerId: c } }, action: { kind: 'pause' }, ratePerSecond: 1 });
		expect(job.status).toBe(202);
		const page = await openPage(`/dashboard/bulk/${job.json.id}`);
		await page.waitForSelector('#bulk-progress[data-state="running"]');
		await page.locator('#bulk-cancel').click();
		await page.waitForSelector('#bulk-progress[data-state="cancelled"]', { timeout: 10_000 });
		const progress = (await call('GET', `/bulk/${job.json.id}`)).json;
		expect(progress.state).toBe('cancelled');
		const statuses = await Promise.all(ids.map((id) => call('GET', `/workflows/${id}`).then((r) => r.json.status)));
		expect(statuses.filter((s) => s === 'paused').length).toBe(progress.done);
		expect(progress.done).toBeLessThan(ids.length);
		expect(await page.locator('#bulk-cancel').isVisible()).toBe(false);
		expectNoPageErrors(page);
		await page.close();
	});

	it('answers an unknown job id with a 404 page', async () => {
		const page = await openPage('/dashboard/bulk/no-such-job');
		expect(await page.locator('.banner.error').count()).toBe(1);
		await page.close();
	});
});
