import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { schedules } from '../../src/client/schedule-client';
import { ErrorCode } from '../../src/engine/support/errors';
import { scheduledInstanceId } from '../../src/engine/schedule/schedule-name';
import { scheduleName } from '../../src/engine/object-names';
import { advanceClock, resetClock, settle, stub, testEnv } from '../helpers';
import { testClock } from '../worker/test-clock';
import { EveryFiveMinutesWorkflow, HourlyWorkflow } from '../worker/workflows';

afterEach(resetClock);

const MIN = 60_000;
const HOUR = 60 * MIN;

/** Moves the test clock to `at` and fires the schedule's alarm (the runtime's own timing, without waiting). */
async function fireScheduleAt(type: string, at: number): Promise<void> {
	if (at > testClock.now()) advanceClock(at - testClock.now());
	await runDurableObjectAlarm(stub(scheduleName(type)));
}

async function statusOf(id: string) {
	await settle(id);
	return (await instances.status(testEnv, { id })).status;
}

describe('schedules in workerd', () => {
	it('creates an hourly instance at each tick over two days, each with the id of its tick', async () => {
		const first = (await schedules.wake(testEnv, 'hourly')).nextRunAt!;
		expect(first % HOUR).toBe(0);
		const ticks = Array.from({ length: 48 }, (_, n) => first + n * HOUR);
		for (const tick of ticks) await fireScheduleAt('hourly', tick + 1000);
		const info = await HourlyWorkflow.describeSchedule(testEnv);
		expect(info).toMatchObject({ cron: '0 * * * *', state: 'active', nextRunAt: first + 48 * HOUR });
		expect(info.lastRuns.map((r) => r.tick)).toEqual(ticks.slice(-10).reverse());
		for (const tick of [ticks[0]!, ticks[47]!]) {
			const id = scheduledInstanceId('hourly', tick);
			expect(await statusOf(id)).toBe('completed');
			expect((await instances.status(testEnv, { id })).output).toBe(id);
		}
	});

	it('runs the latest tick missed during downtime once, skips the older ones and records them', async () => {
		const info = await schedules.wake(testEnv, 'hourly');
		const next = info.nextRunAt!;
		// Down for a day and a half: the alarm fires once, late.
		await fireScheduleAt('hourly', next + 36 * HOUR + 20 * MIN);
		const after = await schedules.wake(testEnv, 'hourly');
		expect(after.lastRuns[0]).toMatchObject({ tick: next + 36 * HOUR, outcome: 'started', missed: 36 });
		expect(after.nextRunAt).toBe(next + 37 * HOUR);
		await expect(instances.status(testEnv, { id: scheduledInstanceId('hourly', next + 35 * HOUR) })).rejects.toMatchObject({ code: ErrorCode.NotFound });
		expect(await statusOf(scheduledInstanceId('hourly', next + 36 * HOUR))).toBe('completed');
	});

	it("skips ticks while the previous scheduled instance is unfinished, and starts again once it finishes", async () => {
		const first = (await schedules.wake(testEnv, 'every-5m')).nextRunAt!;
		await fireScheduleAt('every-5m', first);
		const running = scheduledInstanceId('every-5m', first);
		expect(await statusOf(running)).toBe('waiting');
		await fireScheduleAt('every-5m', first + 5 * MIN);
		await fireScheduleAt('every-5m', first + 10 * MIN);
		await EveryFiveMinutesWorkflow.sendEvent(testEnv, { id: running, event: 'finish', payload: { ok: true } });
		expect(await statusOf(running)).toBe('completed');
		await fireScheduleAt('every-5m', first + 15 * MIN);
		const info = await schedules.wake(testEnv, 'every-5m');
		expect(info.lastRuns.slice(0, 4).map((r) => [r.tick - first, r.outcome])).toEqual([
			[15 * MIN, 'started'],
			[10 * MIN, 'skipped_overlap'],
			[5 * MIN, 'skipped_overlap'],
			[0, 'started'],
		]);
		const latest = scheduledInstanceId('every-5m', first + 15 * MIN);
		await EveryFiveMinutesWorkflow.sendEvent(testEnv, { id: latest, event: 'finish', payload: { ok: true } });
		expect(await statusOf(latest)).toBe('completed');
	});

	it('keeps its schedule across a crash: the alarm after it creates the pending tick once', async () => {
		const info = await schedules.wake(testEnv, 'hourly');
		const tick = info.nextRunAt!;
		// The tick is written as pending, as the schedule does before it creates; then the process dies.
		await runInDurableObject(stub(scheduleName('hourly')), (_, state) => {
			state.storage.sql.exec('UPDATE schedule_state SET pending_tick = ?', tick);
		});
		await instances.create(testEnv, { id: scheduledInstanceId('hourly', tick), type: 'hourly', payload: undefined, scheduledTick: true }); // as the schedule creates it
		await abortAllDurableObjects();
		await fireScheduleAt('hourly', tick + 2 * MIN);
		const after = await schedules.wake(testEnv, 'hourly');
		expect(after.lastRuns.filter((r) => r.tick === tick)).toMatchObject([{ outcome: 'started', instanceId: scheduledInstanceId('hourly', tick) }]);
		expect(after.nextRunAt).toBe(tick + HOUR);
	});

	it('pauses and resumes through the typed helpers: no instance while paused, then the next tick after the resume', async () => {
		const before = await schedules.wake(testEnv, 'hourly');
		expect(await HourlyWorkflow.pauseSchedule(testEnv)).toMatchObject({ state: 'paused', nextRunAt: null });
		advanceClock(before.nextRunAt! - testClock.now() + 3 * HOUR + MIN);
		expect(await runDurableObjectAlarm(stub(scheduleName('hourly')))).toBe(false); // no alarm while paused
		const resumed = await HourlyWorkflow.resumeSchedule(testEnv);
		expect(resumed).toMatchObject({ state: 'active', nextRunAt: before.nextRunAt! + 4 * HOUR });
		expect(resumed.lastRuns[0]?.tick ?? 0).toBeLessThan(before.nextRunAt!);
	});

	it('takes the deployed cron when the stored one is from an earlier deploy', async () => {
		await schedules.wake(testEnv, 'hourly');
		await runInDurableObject(stub(scheduleName('hourly')), (_, state) => {
			state.storage.sql.exec("UPDATE schedule_state SET cron = '0 0 1 1 *', next_at = ?", testClock.now() + 300 * 24 * HOUR);
		});
		await abortAllDurableObjects();
		const info = await schedules.wake(testEnv, 'hourly');
		expect(info.nextRunAt! - testClock.now()).toBeLessThanOrEqual(HOUR);
		const stored = await runInDurableObject(stub(scheduleName('hourly')), (_, state) => state.storage.sql.exec('SELECT cron FROM schedule_state').one());
		expect(stored.cron).toBe('0 * * * *');
	});

	it('answers NOT_FOUND for a type without a schedule and creates no storage', async () => {
		await expect(schedules.pause(testEnv, 'test')).rejects.toMatchObject({ code: ErrorCode.NotFound });
		const tables = await runInDurableObject(stub(scheduleName('test')), (_, state) => state.storage.sql.exec(`SELECT name FROM sqlite_master WHERE type = 'table'`).toArray());
		expect(tables).toEqual([]);
	});
});
