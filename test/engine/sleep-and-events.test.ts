import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ErrorCode, EventTimeoutError } from '../../src/engine/support/errors';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf, startInstance } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

const DAY = 86_400_000;

class Sleeper extends Workflow<{ until?: number }, string> {
	static override readonly type = 'sleeper';
	async run(step: Step, { until }: { until?: number }) {
		if (until !== undefined) await step.sleepUntil('until', until);
		else await step.sleep('day', '24 hours');
		return 'awake';
	}
}

const events = {
	item: z.object({ n: z.number() }),
	stop: {} as { reason: string },
};

class Collector extends Workflow<{ count: number }, number[]> {
	static override readonly type = 'collector';
	static override events = events;
	async run(step: Step<typeof events>, { count }: { count: number }) {
		const seen: number[] = [];
		for (let i = 0; i < count; i++) {
			// Each wait has its own step name, so the same event can be awaited many times.
			const item = await step.waitForEvent('item', { name: `item-${i}` });
			seen.push(item.n);
			await step.do(`record-${i}`, () => item.n);
		}
		return seen;
	}
}

class Timeouts extends Workflow<{}, string> {
	static override readonly type = 'timeouts';
	static override events = { stop: {} as { reason: string } };
	async run(step: Step<typeof Timeouts.events>) {
		try {
			const stop = await step.waitForEvent('stop', { timeout: '7 days' });
			return stop.reason;
		} catch (error) {
			if (error instanceof EventTimeoutError) return 'timed out';
			throw error;
		}
	}
}

const doorbellEvents = {
	ring: z.undefined(),
	knock: {} as { by?: string },
	note: z.object({ text: z.string().optional() }),
};

/** Waits for an event that declares no payload (its schema accepts only `undefined`). */
class Doorbell extends Workflow<{}, string> {
	static override readonly type = 'doorbell';
	static override events = doorbellEvents;
	async run(step: Step<typeof doorbellEvents>) {
		const ring = await step.waitForEvent('ring');
		return ring === undefined ? 'answered' : 'odd';
	}
}

/** A sleep and a wait timeout of 0: each is due the moment it begins. */
class Instant extends Workflow<{ wait?: boolean }, string> {
	static override readonly type = 'instant';
	static override events = { stop: {} as { reason: string } };
	async run(step: Step<typeof Instant.events>, { wait }: { wait?: boolean }) {
		await step.sleep('nap', 0);
		if (!wait) return 'awake';
		try {
			return (await step.waitForEvent('stop', { timeout: 0 })).reason;
		} catch (error) {
			if (error instanceof EventTimeoutError) return 'timed out';
			throw error;
		}
	}
}

const registry = registryOf(Sleeper, Collector, Timeouts, Doorbell, Instant);

const start = (type: string, payload: unknown = {}) => startInstance(registry, type, payload);

describe('step.sleep and step.sleepUntil', () => {
	it('sleeps 24 hours on the alarm: an early alarm is harmless, a due one completes the sleep', async () => {
		const { host, engine } = await start('sleeper');
		expect(engine.status().status).toBe('sleeping');
		expect(host.alarmAt).toBe(host.now() + DAY);
		engine.alarm(); // spurious: the deadline has not passed
		await host.idle();
		expect(engine.status().status).toBe('sleeping');
		expect(host.alarmAt).toBe(host.now() + DAY);
		await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'awake' });
	});

	it('completes a sleep whose deadline passed while the instance was evicted, even if the alarm fires hours late', async () => {
		const { host } = await start('sleeper');
		host.advance(DAY + 5 * 3_600_000);
		const revived = host.engine();
		revived.alarm();
		await host.idle();
		expect(revived.status().status).toBe('completed');
	});

	it('treats sleepUntil in the past as already done', async () => {
		const host = new VirtualHost({ registry });
		const engine = host.engine();
		await engine.create('wf-1', 'sleeper', { until: host.now() - 1000 });
		await host.idle();
		expect(engine.status().status).toBe('completed');
	});

	it('goes on at once after a sleep of 0, leaving no wake-up behind', async () => {
		const { host, engine } = await start('instant');
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'awake' });
		expect(engine.status().steps[0]).toMatchObject({ name: 'nap', status: 'completed' });
		expect(host.store.wakeups.size).toBe(0);
	});

	it('stores the absolute sleepUntil time, so replays after the deadline do not fail', async () => {
		const host = new VirtualHost({ registry });
		const engine = host.engine();
		const until = host.now() + 60_000;
		await engine.create('wf-1', 'sleeper', { until });
		await host.idle();
		expect(engine.status().steps[0]).toMatchObject({ status: 'sleeping', wakeAt: until });
		host.clock.moveTo(until + DAY);
		await host.fireAlarm(engine);
		expect(engine.status().status).toBe('completed');
	});
});

describe('step.waitForEvent', () => {
	it('buffers events sent before the wait and delivers them in arrival order, each once', async () => {
		const host = new VirtualHost({ registry });
		const engine = host.engine();
		await engine.create('wf-1', 'collector', { count: 3 });
		await engine.sendEvent('item', { n: 1 });
		await engine.sendEvent('item', { n: 2 });
		await engine.sendEvent('item', { n: 3 });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: [1, 2, 3] });
		expect(host.store.events).toEqual([]);
	});

	it('refuses an event name the workflow does not declare, and an invalid payload, storing nothing', async () => {
		const { engine, host } = await start('collector', { count: 1 });
		await expect(engine.sendEvent('nope', {})).rejects.toMatchObject({ code: ErrorCode.UnknownEvent });
		await expect(engine.sendEvent('item', { n: 'one' })).rejects.toMatchObject({ code: ErrorCode.InvalidEventPayload });
		expect(host.store.events).toEqual([]);
		expect(engine.status().status).toBe('waiting');
	});

	it('refuses a missing payload unless the event schema accepts undefined', async () => {
		const { engine, host } = await start('doorbell');
		for (const event of ['note', 'knock']) {
			await expect(engine.sendEvent(event, undefined)).rejects.toMatchObject({ code: ErrorCode.InvalidEventPayload, message: expect.stringMatching(/needs a payload/) });
		}
		expect(host.store.events).toEqual([]);
		await engine.sendEvent('ring', undefined);
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'answered' });
	});

	it('throws a catchable timeout error when the timeout passes first', async () => {
		const { host, engine } = await start('timeouts');
		expect(host.alarmAt).toBe(host.now() + 7 * DAY);
		await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'timed out' });
	});

	it('times out a wait with a timeout of 0 on the alarm due at once, without the clock moving', async () => {
		const { host, engine } = await start('instant', { wait: true });
		const t0 = host.now();
		expect(engine.status().steps[1]).toMatchObject({ name: 'stop', status: 'waiting', wakeAt: t0 });
		expect(host.alarmAt).toBe(t0);
		expect(await host.fireAlarm(engine)).toBe(true);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'timed out' });
		expect(engine.status().steps[1]).toMatchObject({ status: 'timed_out' });
		expect(host.now()).toBe(t0);
		expect(host.store.wakeups.size).toBe(0);
	});

	it("waits without a timeout for as long as it takes (Cloudflare's 24 hours do not apply): no wake-up, still waiting after 400 days, then the event completes it", async () => {
		const { host, engine } = await start('collector', { count: 1 });
		expect(engine.status()).toMatchObject({ status: 'waiting', steps: [{ name: 'item-0', status: 'waiting', wakeAt: null }] });
		expect(host.store.wakeups.size).toBe(0);
		host.advance(400 * DAY);
		engine.alarm();
		await host.idle();
		expect(engine.status().status).toBe('waiting');
		await engine.sendEvent('item', { n: 7 });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: [7] });
	});

	it('resolves at once when the event arrives, not on the alarm', async () => {
		const { host, engine } = await start('timeouts');
		await engine.sendEvent('stop', { reason: 'done' });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'done' });
		expect(host.store.wakeups.size).toBe(0);
	});
});
