// The overview's alerts in a real browser (see browser-kit.ts), against a real `wrangler dev`.
import { describe, expect, it } from 'vitest';
import { dashboardUnderTest, expectNoPageErrors, screenshot, until } from './browser-kit';

const server = dashboardUnderTest();
const { call, openPage } = server;
const newId = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;

describe('the overview\'s alerts', { timeout: 30_000 }, () => {
	it('shows failing passes, a stuck instance and the index backlog, each linking to where to look: the stuck ones to the filtered list that shows them', async () => {
		const stuck = newId('sign');
		expect((await call('POST', '/workflows', { type: 'sign-off', id: stuck, payload: {} })).status).toBe(201);
		await until(() => call('GET', `/workflows/${stuck}`).then((r) => r.json?.status as string), (s) => s === 'waiting', 'the sign-off to wait');
		// What an instance whose passes keep failing, and one whose index delivery fails, send their type's backlog object.
		const [failing, behind] = [newId('crashloop'), newId('behind')];
		const now = Date.now();
		await server.call('POST', '/__test/backlog', { call: 'failingReport', type: 'payment', argument: { id: failing, cause: 'cut', count: 5, since: now - 120_000, at: now } });
		await server.call('POST', '/__test/backlog', { call: 'backlogAdd', type: 'receipt', argument: { id: behind, since: now - 30_000 } });
		// `stuckAfter.waiting` of sign-off is 2 seconds.
		await until(() => call('GET', '/alerts').then((r) => r.json.alerts as { kind: string; type: string }[]), (a) => a.some((x) => x.kind === 'stuck' && x.type === 'sign-off'), 'the stuck alert');

		const page = await openPage('/dashboard');
		const alerts = page.locator('#alerts');
		await alerts.locator('li.alert').first().waitFor();
		expect(await alerts.getAttribute('class')).toContain('firing');
		const failingAlert = alerts.locator('li[data-kind="failing_passes"][data-type="payment"]');
		expect(await failingAlert.textContent()).toContain('failed 3 or more passes in a row (up to 5)');
		expect(await failingAlert.locator('a').getAttribute('href')).toBe(`/dashboard/instances/${failing}`);
		const backlogAlert = alerts.locator('li[data-kind="index_backlog"][data-type="receipt"]');
		expect(await backlogAlert.locator('a').getAttribute('href')).toBe(`/dashboard/instances/${behind}`);
		await screenshot(page, 'overview-alerts');
		// The alerts alone, as docs/dashboard.md shows them.
		if (process.env.DASHBOARD_SCREENSHOTS) await page.screenshot({ path: `${process.env.DASHBOARD_SCREENSHOTS}/overview-alerts-top.png`, clip: { x: 0, y: 0, width: 1280, height: 500 } });

		// At phone width the alerts stay readable: each link within the screen.
		const phone = await openPage('/dashboard', { width: 390, height: 844 });
		await phone.locator('#alerts li.alert').first().waitFor();
		const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
		expect(overflow).toBeLessThanOrEqual(0);
		if (process.env.DASHBOARD_SCREENSHOTS) await phone.screenshot({ path: `${process.env.DASHBOARD_SCREENSHOTS}/overview-alerts-phone.png` });
		await phone.close();

		// The stuck alert opens the list of the instances stuck in that status, filtered by the index.
		const stuckAlert = alerts.locator('li[data-kind="stuck"][data-type="sign-off"]');
		expect(await stuckAlert.textContent()).toContain('been waiting for over 2 s');
		await stuckAlert.locator('a').click();
		await page.waitForURL(/\/dashboard\/instances\?/);
		const url = new URL(page.url());
		expect(Object.fromEntries(url.searchParams)).toMatchObject({ type: 'sign-off', status: 'waiting', order: 'updated' });
		// The threshold shows in the filter form (an editable bound, not a hidden one).
		expect(await page.locator('input[aria-label="Updated to"]').inputValue()).not.toBe('');
		await page.locator(`text=${stuck}`).first().waitFor();
		await screenshot(page, 'overview-alerts-stuck-list');
		expectNoPageErrors(page);
		await page.close();

		// Signed, the instance is no longer stuck; the alert goes with the next reading.
		await call('POST', `/workflows/${stuck}/events/signed`, { by: 'ops' });
		await until(() => call('GET', '/alerts').then((r) => r.json.alerts as { kind: string; type: string }[]), (a) => !a.some((x) => x.kind === 'stuck' && x.type === 'sign-off'), 'the stuck alert to go');
	});
});
