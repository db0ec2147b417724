import { afterEach, describe, expect, it } from 'vitest';
import { alertsOf } from '../../src/api/alerts';
import type { TypeSnapshot } from '../../src/api/metrics-families';
import { callRole } from '../../src/client/stubs';
import { groupScoped } from '../../src/client/group-scope';
import { placeOf } from '../../src/engine/support/group-id';
import { advanceClock, resetClock, settle, testEnv, uniqueId } from '../helpers';
import { testClock } from '../worker/test-clock';
import { api } from './helpers';

afterEach(resetClock);

const MIN = 60_000;
const NOW = Date.UTC(2026, 11, 6, 12);

/** A type's snapshot with nothing wrong, changed by `over`. */
function healthy(over: Partial<TypeSnapshot> = {}): TypeSnapshot {
	return {
		type: 'payment',
		shards: [],
		backlog: { pending: 0, oldestSince: null, oldest: [] },
		failing: { instances: 0, mostInARow: 0, threshold: 3, worst: [] },
		stuckAfter: { running: 3_600_000, waiting: 7 * 86_400_000 },
		stuck: { running: 0, waiting: 0 },
		...over,
	};
}

describe('alertsOf', () => {
	it('has no alert for a type where nothing is wrong, nor for a stuck check that is off', () => {
		expect(alertsOf(NOW, [healthy(), healthy({ type: 'inbox', stuckAfter: { running: null, waiting: 3_600_000 }, stuck: { running: null, waiting: 0 } })])).toEqual([]);
	});

	it('raises one alert per kind with where to look: the filtered list for stuck instances, the instances named for failing passes and the backlog, the schedule for missed ticks', () => {
		const alerts = alertsOf(NOW, [
			healthy({
				stuck: { running: 2, waiting: 0 },
				failing: { instances: 1, mostInARow: 6, threshold: 3, worst: [{ id: 'pay-9', cause: 'failed', count: 6, since: NOW - 5 * MIN }] },
				backlog: { pending: 3, oldestSince: NOW - 10 * MIN, oldest: [{ id: 'pay-1', since: NOW - 10 * MIN }] },
				schedule: { type: 'payment', cron: '0 * * * *', overlap: 'skip', state: 'active', nextRunAt: NOW - 10 * MIN, lastRuns: [{ tick: NOW - 70 * MIN, at: NOW - 65 * MIN, missed: 2, outcome: 'started' } as never], missedLastDay: 2 },
			}),
		]);
		expect(alerts.map((a) => a.kind)).toEqual(['failing_passes', 'stuck', 'index_backlog', 'schedule_missed_ticks', 'schedule_overdue']);
		expect(alerts[0]).toMatchObject({ type: 'payment', count: 1, ids: ['pay-9'], since: NOW - 5 * MIN, message: expect.stringContaining('up to 6') });
		expect(alerts[1]).toMatchObject({ status: 'running', count: 2, list: { type: 'payment', status: 'running', updatedBefore: NOW - 3_600_000, order: 'updated' } });
		expect(alerts[2]).toMatchObject({ count: 3, ids: ['pay-1'], since: NOW - 10 * MIN, message: expect.stringContaining('600 s') });
		expect(alerts[3]).toMatchObject({ count: 2 });
		expect(alerts[4]).toMatchObject({ since: NOW - 10 * MIN });
	});

	it('keeps the missed-ticks alert up for the day the schedule says it missed them, though the runs shown no longer hold them', () => {
		// A per-minute cron: the 10 runs shown are the last 10 minutes, all on time; the outage was hours ago.
		const lastRuns = Array.from({ length: 10 }, (_, n) => ({ tick: NOW - (n + 1) * MIN, at: NOW - (n + 1) * MIN, missed: 0, outcome: 'started' }) as never);
		const alerts = alertsOf(NOW, [healthy({ schedule: { type: 'payment', cron: '* * * * *', overlap: 'allow', state: 'active', nextRunAt: NOW + MIN, lastRuns, missedLastDay: 7 } })]);
		expect(alerts).toMatchObject([{ kind: 'schedule_missed_ticks', count: 7, message: expect.stringContaining('7 ticks in the last day') }]);
		expect(alertsOf(NOW, [healthy({ schedule: { type: 'payment', cron: '* * * * *', overlap: 'allow', state: 'active', nextRunAt: NOW + MIN, lastRuns, missedLastDay: 0 } })])).toEqual([]);
	});
});

describe('GET /alerts', () => {
	it('lists an instance waiting past its stuckAfter through the query the alert gives, and instances whose passes keep failing by id', async () => {
		const id = uniqueId('alert-stuck');
		await api('POST', '/workflows', { type: 'inbox', id, payload: { expect: 1 } });
		await settle(id);
		advanceClock(61 * MIN);
		const failing = uniqueId('alert-failing');
		const at = testClock.now();
		await callRole(testEnv as never, 'failingReport', ['inbox'], { id: failing, cause: 'cut', count: 4, since: at, at });

		const res = await api('GET', '/alerts');
		expect(res.status).toBe(200);
		const inbox = res.json.alerts.filter((a: { type: string }) => a.type === 'inbox');
		expect(inbox.map((a: { kind: string }) => a.kind)).toEqual(['failing_passes', 'stuck']);
		expect(inbox[0]).toMatchObject({ count: 1, ids: [failing] });
		const { list } = inbox[1];
		expect(list).toMatchObject({ type: 'inbox', status: 'waiting', order: 'updated' });
		const listed = await api('GET', `/workflows?${new URLSearchParams({ ...list, updatedBefore: String(list.updatedBefore) })}`);
		expect(listed.status).toBe(200);
		expect(listed.json.items.map((i: { id: string }) => i.id)).toContain(id);

		await callRole(testEnv as never, 'failingWithdraw', ['inbox'], { id: failing });
		await api('POST', `/workflows/${id}/events/msg`, { n: 1 });
		await settle(id);
		const after = (await api('GET', '/alerts')).json.alerts.filter((a: { type: string }) => a.type === 'inbox');
		expect(after.filter((a: { kind: string }) => a.kind === 'failing_passes')).toEqual([]);
	});

	it("answers a group's alerts from its own shards with group=, each list query naming the group, and refuses an undeclared group", async () => {
		const created = await api('POST', '/workflows', { type: 'inbox', group: 'eu', payload: { expect: 1 } });
		const id: string = created.json.id;
		expect(id).toMatch(/^eu\.eu~/);
		await settle(id);
		advanceClock(61 * MIN);
		const failing = `eu.eu~${uniqueId('alert-failing')}`;
		const at = testClock.now();
		await callRole(groupScoped(testEnv as never, placeOf(failing)), 'failingReport', ['inbox'], { id: failing, cause: 'cut', count: 4, since: at, at });

		const eu = await api('GET', '/alerts?group=eu');
		expect(eu.status).toBe(200);
		const inbox = eu.json.alerts.filter((a: { type: string }) => a.type === 'inbox');
		expect(inbox.map((a: { kind: string }) => a.kind)).toEqual(['failing_passes', 'stuck']);
		expect(inbox[0]).toMatchObject({ ids: [failing] });
		const { list } = inbox[1];
		expect(list).toMatchObject({ type: 'inbox', status: 'waiting', group: 'eu' });
		const listed = await api('GET', `/workflows?${new URLSearchParams({ ...list, updatedBefore: String(list.updatedBefore) })}`);
		expect(listed.json.items.map((i: { id: string }) => i.id)).toContain(id);
		// The default group's alerts know nothing of the eu group's instances.
		const home = (await api('GET', '/alerts')).json.alerts.filter((a: { type: string }) => a.type === 'inbox');
		expect(home.flatMap((a: { ids?: string[] }) => a.ids ?? [])).not.toContain(failing);
		for (const alert of home) expect(alert.list?.group).toBeUndefined();

		await callRole(groupScoped(testEnv as never, placeOf(failing)), 'failingWithdraw', ['inbox'], { id: failing });
		const mars = await api('GET', '/alerts?group=mars');
		expect(mars.status).toBe(400);
		expect(mars.json.error.code).toBe('INVALID_GROUP');
	});
});
