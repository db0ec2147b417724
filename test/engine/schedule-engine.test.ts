import { describe, expect, it } from 'vitest';
import { ShardflowError, ErrorCode } from '../../src/engine/support/errors';
import { MemoryScheduleStore } from '../../src/engine/schedule/memory-schedule-store';
import { Workflow } from '../../src/authoring';
import { compileCron, scheduledInstanceId, scheduledTypes, type ResolvedSchedule } from '../../src/engine/schedule/schedule';
import { registryOf } from './start-instance';
import { ScheduleEngine, type ScheduleHost } from '../../src/engine/schedule/schedule-engine';

const T0 = Date.UTC(2026, 0, 1, 0, 0, 0);
const MIN = 60_000;

/** A schedule over an in-memory store, a movable clock and a fake instance namespace. */
function setup(definition: Partial<ResolvedSchedule> = {}, store = new MemoryScheduleStore()) {
	const world = {
		now: T0 + 1000,
		alarm: undefined as number | undefined,
		created: [] as string[],
		/** Every create call, repeats included. */
		calls: 0,
		unfinished: new Set<string>(),
		failCreates: 0,
		refuseCreates: false,
	};
	const host: ScheduleHost = {
		store,
		now: () => world.now,
		setAlarm: (at) => void (world.alarm = at),
		createInstance: async (id) => {
			world.calls++;
			if (world.refuseCreates) throw new ShardflowError(ErrorCode.InvalidPayload, 'payload refused');
			if (world.failCreates > 0) {
				world.failCreates--;
				throw new Error('instance unreachable');
			}
			if (!world.created.includes(id)) world.created.push(id);
		},
		isUnfinished: async (id) => world.unfinished.has(id),
	};
	const make = (d: Partial<ResolvedSchedule> = definition) => new ScheduleEngine(host, { type: 'report', cron: '*/5 * * * *', payload: {}, overlap: 'allow', ...d }, 'report');
	/** Moves the clock to the alarm and fires it, like the runtime does. */
	const fire = async (engine: ScheduleEngine) => {
		if (world.alarm === undefined) throw new Error('no alarm set');
		world.now = Math.max(world.now, world.alarm);
		world.alarm = undefined;
		await engine.alarm();
	};
	return { world, store, make, fire };
}

describe('schedules', () => {
	it('creates one instance per tick, with an id derived from the tick', async () => {
		const { world, make, fire } = setup();
		const engine = make();
		await engine.wake();
		expect(world.alarm).toBe(T0 + 5 * MIN);
		for (let i = 0; i < 3; i++) await fire(engine);
		expect(world.created).toEqual([1, 2, 3].map((n) => scheduledInstanceId('report', T0 + n * 5 * MIN)));
		expect(world.created[0]).toBe('report:sched:2026-01-01T00:05:00Z');
		expect(engine.info()).toMatchObject({ state: 'active', nextRunAt: T0 + 20 * MIN, lastRuns: [{ tick: T0 + 15 * MIN, outcome: 'started' }, {}, {}] });
	});

	it('runs only the latest tick missed during downtime, once, and records how many it stood in for', async () => {
		const { world, make } = setup();
		const engine = make();
		await engine.wake();
		world.now = T0 + 3 * 60 * MIN + 2 * MIN; // three hours down: 36 ticks passed
		await engine.alarm();
		expect(world.created).toEqual([scheduledInstanceId('report', T0 + 180 * MIN)]);
		expect(engine.info().lastRuns[0]).toMatchObject({ tick: T0 + 180 * MIN, outcome: 'started', missed: 35 });
		expect(world.alarm).toBe(T0 + 185 * MIN);
	});

	it('reports the ticks it missed for a day, though more runs than it shows follow them, and writes nothing when none are missed', async () => {
		const store = new MemoryScheduleStore();
		const { world, make, fire } = setup({ cron: '* * * * *' }, store);
		const engine = make();
		await engine.wake();
		const writes = { log: 0 };
		const writeMissedLog = store.writeMissedLog.bind(store);
		store.writeMissedLog = (log) => (writes.log++, writeMissedLog(log));
		world.now = T0 + 5 * MIN + 10_000; // the ticks at 1..4 minutes were missed, 5 stands in for them
		await engine.alarm();
		expect(engine.info()).toMatchObject({ lastRuns: [{ tick: T0 + 5 * MIN, missed: 4 }], missedLastDay: 4 });
		for (let i = 0; i < 11; i++) await fire(engine);
		expect(engine.info().lastRuns.map((r) => r.missed)).toEqual(Array(10).fill(0));
		expect(engine.info().missedLastDay).toBe(4);
		expect(writes.log).toBe(1);
		// A day of on-time ticks later, the missed ones are out of the window.
		while (world.now < T0 + 5 * MIN + 24 * 60 * MIN) await fire(engine);
		expect(engine.info().missedLastDay).toBe(4);
		await fire(engine);
		expect(engine.info().missedLastDay).toBe(0);
		expect(writes.log).toBe(1);
	});

	it('creates the same instance again after a crash between the create and its record, and records the tick once', async () => {
		const store = new MemoryScheduleStore();
		const { world, make } = setup({}, store);
		let engine = make();
		await engine.wake();
		world.now = T0 + 5 * MIN;
		// The create happens, then the process dies before the run is recorded.
		const write = store.write.bind(store);
		let crashed = false;
		store.transaction = () => {
			crashed = true;
			throw new Error('process died');
		};
		await expect(engine.alarm()).rejects.toThrow('process died');
		expect(crashed).toBe(true);
		expect(store.read()?.pendingTick).toBe(T0 + 5 * MIN);
		store.transaction = MemoryScheduleStore.prototype.transaction.bind(store);
		store.write = write;
		engine = make(); // a new object after the crash
		world.now = T0 + 6 * MIN;
		await engine.alarm();
		expect(world.created).toEqual([scheduledInstanceId('report', T0 + 5 * MIN)]);
		expect(engine.info().lastRuns).toHaveLength(1);
		expect(world.alarm).toBe(T0 + 10 * MIN);
	});

	it("skips a tick while the previous scheduled instance is unfinished with overlap 'skip'", async () => {
		const { world, make, fire } = setup({ overlap: 'skip' });
		const engine = make();
		await engine.wake();
		await fire(engine);
		world.unfinished.add(world.created[0]!);
		await fire(engine);
		world.unfinished.clear();
		await fire(engine);
		expect(world.created).toEqual([scheduledInstanceId('report', T0 + 5 * MIN), scheduledInstanceId('report', T0 + 15 * MIN)]);
		expect(engine.info().lastRuns.map((r) => r.outcome)).toEqual(['started', 'skipped_overlap', 'started']);
	});

	it('retries a tick whose create failed, with backoff, and creates it once', async () => {
		const { world, make, fire } = setup();
		const engine = make();
		await engine.wake();
		world.failCreates = 2;
		await fire(engine);
		expect(world.created).toEqual([]);
		expect(world.alarm).toBe(T0 + 5 * MIN + 1000);
		await fire(engine);
		expect(world.alarm).toBe(T0 + 5 * MIN + 1000 + 2000);
		await fire(engine);
		expect(world.created).toEqual([scheduledInstanceId('report', T0 + 5 * MIN)]);
		expect(world.alarm).toBe(T0 + 10 * MIN);
	});

	it('records a create refused for good and goes on with the next tick', async () => {
		const { world, make, fire } = setup();
		const engine = make();
		await engine.wake();
		world.refuseCreates = true;
		await fire(engine);
		expect(engine.info().lastRuns[0]).toMatchObject({ outcome: 'refused', error: expect.stringContaining('INVALID_PAYLOAD') });
		expect(world.alarm).toBe(T0 + 10 * MIN);
	});

	it('runs no tick while paused and resumes at the next tick after the resume', async () => {
		const { world, make } = setup();
		const engine = make();
		await engine.wake();
		expect(engine.pause()).toMatchObject({ state: 'paused', nextRunAt: null });
		expect(world.alarm).toBeUndefined();
		world.now = T0 + 62 * MIN;
		await engine.alarm(); // a stray alarm does nothing while paused
		expect(await engine.resume()).toMatchObject({ state: 'active', nextRunAt: T0 + 65 * MIN });
		expect(world.created).toEqual([]);
		expect(world.alarm).toBe(T0 + 65 * MIN);
	});

	it('takes a changed cron from a new deploy at the next wake, from now on', async () => {
		const store = new MemoryScheduleStore();
		const { world, make } = setup({ cron: '0 0 * * *' }, store);
		await make().wake();
		expect(world.alarm).toBe(T0 + 24 * 60 * MIN);
		const redeployed = make({ cron: '*/15 * * * *' });
		expect(await redeployed.wake()).toMatchObject({ cron: '*/15 * * * *', nextRunAt: T0 + 15 * MIN });
		expect(world.alarm).toBe(T0 + 15 * MIN);
	});

	it('deletes its alarm once the deployed code has no schedule for the type', async () => {
		const store = new MemoryScheduleStore();
		const { world, make } = setup({}, store);
		await make().wake();
		const host = (make() as unknown as { host: ScheduleHost }).host;
		await new ScheduleEngine(host, undefined, 'report').alarm();
		expect(world.alarm).toBeUndefined();
		expect(() => new ScheduleEngine(host, undefined, 'report').info()).toThrow(expect.objectContaining({ code: ErrorCode.NotFound }));
	});
});

describe('cron ticks', () => {
	it('are in UTC: the next tick strictly after, the latest at or before', () => {
		const cron = compileCron('0 6 * * *');
		expect(cron.after(Date.UTC(2026, 0, 1, 6))).toBe(Date.UTC(2026, 0, 2, 6));
		expect(cron.atOrBefore(Date.UTC(2026, 0, 1, 6))).toBe(Date.UTC(2026, 0, 1, 6));
		expect(cron.atOrBefore(Date.UTC(2026, 0, 1, 5, 59))).toBe(Date.UTC(2025, 11, 31, 6));
	});
});

describe('schedules and stale state', () => {
	it('never handles a tick twice, even when the stored next tick points back at it', async () => {
		const { world, store, make, fire } = setup();
		const engine = make();
		await engine.wake();
		await fire(engine);
		store.write({ ...store.read()!, nextAt: T0 + 5 * MIN }); // stale: the tick just handled
		world.now = T0 + 6 * MIN;
		await engine.alarm();
		expect(world.calls).toBe(1);
		expect(world.alarm).toBe(T0 + 10 * MIN);
		await fire(engine);
		expect(world.created).toEqual([5, 10].map((m) => scheduledInstanceId('report', T0 + m * MIN)));
	});
});

describe('schedule declarations', () => {
	it.for([
		['a malformed cron', { cron: 'every day' }, /static schedule.cron "every day" is not a cron expression/],
		['an unknown overlap', { cron: '* * * * *', overlap: 'queue' }, /overlap must be 'skip' or 'allow'/],
		['no cron', { payload: {} }, /schedule.cron must be a cron string/],
	] as const)('refuses %s at start-up, naming the type', ([, schedule, message]) => {
		class Bad extends Workflow {
			static override readonly type = 'bad';
			static override schedule = schedule as never;
			async run() {
				return null;
			}
		}
		expect(() => scheduledTypes(registryOf(Bad))).toThrow(message);
		expect(() => scheduledTypes(registryOf(Bad))).toThrow(/^bad: /);
	});

	it("defaults overlap to 'skip' and keeps the payload", () => {
		class Good extends Workflow<{ n: number }> {
			static override readonly type = 'good';
			static override schedule = { cron: '0 * * * *', payload: { n: 1 } };
			async run() {
				return null;
			}
		}
		expect(scheduledTypes(registryOf(Good))).toEqual([{ type: 'good', cron: '0 * * * *', payload: { n: 1 }, overlap: 'skip' }]);
	});
});
