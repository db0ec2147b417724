import { describe, expect, it } from 'vitest';
import { api } from './helpers';

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
});
