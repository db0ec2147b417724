// Groups in the dashboard (docs/residency.md), in a real browser (browser-kit.ts) against `wrangler dev`:
// the list shows and filters the group, its live feed follows the group's own shards, the instance page names it.
import { describe, expect, it } from 'vitest';
import { dashboardUnderTest, expectNoPageErrors, screenshot, until } from './browser-kit';

const server = dashboardUnderTest();
const { call, openPage } = server;
const run = Date.now().toString(36);

describe('groups in the dashboard', { timeout: 30_000 }, () => {
	it('lists a group-pinned type in its own group only, live, and names the group on the instance page', async () => {
		const eu = await call('POST', '/workflows', { type: 'eu-shipment', payload: { orderId: `o-${run}` } });
		expect(eu.status).toBe(201);
		const euId: string = eu.json.id;
		expect(euId).toMatch(/^eu\.eu~/);
		const homeId = `home-${run}`;
		await call('POST', '/workflows', { type: 'test', id: homeId, payload: { name: 'home' } });
		await until(() => call('GET', `/workflows?group=eu&type=eu-shipment`).then((r) => r.json.items.map((i: { id: string }) => i.id)), (ids) => ids.includes(euId), 'the eu index');

		// The default group's list: the eu instance is not in it.
		const page = await openPage('/dashboard/instances');
		expect(await page.locator('#group-badge').textContent()).toContain('global');
		await until(() => page.locator('#instances tbody tr').evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.id)), (ids) => ids.includes(homeId), 'the default group row');
		expect(await page.locator(`#instances tbody tr[data-id="${euId}"]`).count()).toBe(0);

		// Filtered to the eu group: its instance, with the group and its jurisdiction named above the list.
		await Promise.all([page.waitForURL(/group=eu/), (async () => {
			await page.selectOption('#group-filter', 'eu');
			await page.click('button:text("Apply")');
		})()]);
		expect((await page.locator('#group-badge').textContent())?.replace(/\s+/g, ' ')).toContain('group eu · jurisdiction eu');
		await until(() => page.locator('#live').getAttribute('data-state'), (s) => s === 'live', 'the live feed of the eu shards');

		// Live: the row follows the instance through the group's own shard; the page (refreshed by the feed) lists the eu group only.
		await call('POST', `/workflows/${euId}/events/ship`, { carrier: 'DHL' });
		await until(() => page.locator(`#instances tbody tr[data-id="${euId}"]`).getAttribute('data-status', { timeout: 200 }).catch(() => null), (s) => s === 'completed', 'the eu row completed, live');
		await call('POST', `/workflows/${homeId}/pause`);
		await new Promise((r) => setTimeout(r, 300));
		expect(await page.locator('#instances tbody tr').evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.id))).not.toContain(homeId);
		await screenshot(page, 'list-group-eu');
		expectNoPageErrors(page);
		await page.close();

		// The overview: the default group's counts leave the eu instance out; the eu group's count it, and link to the eu list.
		const home = await openPage('/dashboard');
		expect(await home.locator('[data-type="eu-shipment"] [data-count="completed"]').textContent()).toBe('0');
		await Promise.all([home.waitForURL(/group=eu/), home.locator('#group-switch a').nth(1).click()]);
		expect(await home.locator('#group-switch [aria-current="page"]').textContent()).toBe('eu · eu');
		const euCount = Number(await home.locator('[data-type="eu-shipment"] [data-count="completed"]').textContent());
		expect(euCount).toBeGreaterThanOrEqual(1);
		expect(await home.locator('[data-type="eu-shipment"] h2 a').getAttribute('href')).toMatch(/group=eu/);
		await screenshot(home, 'overview-group-eu');
		expectNoPageErrors(home);
		await home.close();

		const detail = await openPage(`/dashboard/instances/${encodeURIComponent(euId)}`);
		expect((await detail.locator('#group').textContent())?.trim()).toBe('eu · jurisdiction eu');
		await screenshot(detail, 'instance-group-eu');
		expectNoPageErrors(detail);
		await detail.close();
	});
});
