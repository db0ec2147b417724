import { runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { createApp, type ApiEnv } from '../../src/api/app';
import { schedules } from '../../src/client/schedule-client';
import { scheduleName } from '../../src/engine/object-names';
import { stub, testEnv } from '../helpers';
import { testRegistry } from '../worker/index';
import { testClock } from '../worker/test-clock';
import { api } from './helpers';

describe('ids of schedule ticks', () => {
	it('are reserved: a create that names one is refused with 400 RESERVED_ID, over HTTP, in a batch and through the helpers', async () => {
		const id = 'hourly:sched:2030-01-01T06:00:00Z';
		const direct = await api('POST', '/workflows', { type: 'hourly', id, payload: {} });
		expect(direct.status).toBe(400);
		expect(direct.json).toMatchObject({ error: { code: 'RESERVED_ID' } });
		const batch = await api('POST', '/workflows/batch', { items: [{ type: 'hourly', id, payload: {} }] });
		expect(batch.json).toMatchObject({ items: [{ result: 'refused', error: { code: 'RESERVED_ID' } }] });
		// Ids that only contain the infix (a child of a scheduled instance) are not tick ids.
		const child = await api('POST', '/workflows', { type: 'hourly', id: `${id}:ship`, payload: {} });
		expect(child.status).toBe(201);
	});
});

describe('schedule routes', () => {
	it('GET /schedules lists each scheduled type with its cron, state, next run and last runs', async () => {
		const { status, json } = await api('GET', '/schedules');
		expect(status).toBe(200);
		const byType = Object.fromEntries(json.schedules.map((s: { type: string }) => [s.type, s]));
		expect(Object.keys(byType).sort()).toEqual(['every-5m', 'hourly']);
		expect(byType['every-5m']).toMatchObject({ cron: '*/5 * * * *', overlap: 'skip', state: expect.any(String), lastRuns: expect.any(Array) });
		expect(byType.hourly).toMatchObject({ cron: '0 * * * *', overlap: 'allow' });
	});

	it('POST /schedules/:type/pause and /resume change the state and answer the schedule', async () => {
		const paused = await api('POST', '/schedules/every-5m/pause');
		expect(paused).toMatchObject({ status: 200, json: { type: 'every-5m', state: 'paused', nextRunAt: null } });
		expect((await api('GET', '/schedules')).json.schedules.find((s: { type: string }) => s.type === 'every-5m').state).toBe('paused');
		const resumed = await api('POST', '/schedules/every-5m/resume');
		expect(resumed).toMatchObject({ status: 200, json: { state: 'active', nextRunAt: expect.any(Number) } });
	});

	it('answers 404 for a type without a schedule and 400 for an unknown type', async () => {
		expect(await api('POST', '/schedules/test/pause')).toMatchObject({ status: 404, json: { error: { code: 'NOT_FOUND' } } });
		expect(await api('POST', '/schedules/nope/resume')).toMatchObject({ status: 400, json: { error: { code: 'UNKNOWN_TYPE' } } });
	});

	it("a new deploy's first request (any route, even a refused one) makes each schedule take the deployed cron", async () => {
		await schedules.wake(testEnv, 'hourly');
		// The schedule as an earlier deploy left it: another cron, its next tick far away.
		const storedCron = () =>
			runInDurableObject(stub(scheduleName('hourly')), (_, state) => state.storage.sql.exec<{ cron: string }>('SELECT cron FROM schedule_state').one().cron);
		await runInDurableObject(stub(scheduleName('hourly')), (_, state) => {
			state.storage.sql.exec("UPDATE schedule_state SET cron = '0 0 1 1 *', next_at = ?", testClock.now() + 300 * 86_400_000);
		});
		const deployed = createApp(testRegistry, { clock: testClock.now }); // what a new isolate builds
		const response = await deployed.fetch(new Request('http://shardflow.test/no-such-route'), env as unknown as ApiEnv);
		expect(response.status).toBe(404);
		for (let i = 0; i < 200 && (await storedCron()) !== '0 * * * *'; i++) await new Promise((r) => setTimeout(r, 10));
		expect(await storedCron()).toBe('0 * * * *');
		const alarm = await runInDurableObject(stub(scheduleName('hourly')), (_, state) => state.storage.getAlarm());
		expect(alarm! - testClock.now()).toBeLessThanOrEqual(3_600_000);
	});
});
