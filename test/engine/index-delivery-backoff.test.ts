import { describe, expect, it } from 'vitest';
import { outboxBackoffMs } from '../../src/engine/support/timing';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

let passes = 0;
class SleepsADay extends Workflow<{}, void> {
	static override readonly type = 'sleeps-a-day';
	async run(step: Step) {
		passes++;
		await step.sleep('nap', '1 day');
	}
}
class Waits extends Workflow<{}, number> {
	static override readonly type = 'waits';
	static override events = { go: {} as { n: number }, noise: {} as { n: number } };
	async run(step: Step<typeof Waits.events>) {
		passes++;
		let total = 0;
		for (let i = 0; i < 20; i++) total += (await step.waitForEvent('go', { name: `go-${i}` })).n;
		return total;
	}
}
class Quick extends Workflow<{}, string> {
	static override readonly type = 'quick';
	async run(step: Step) {
		return step.do('only', () => 'ok');
	}
}
const registry = registryOf(SleepsADay, Waits, Quick);

/** Lets every alarm fire until `until` on the fake clock; returns how many fired. */
async function runClockUntil(host: VirtualHost, engine: ReturnType<VirtualHost['engine']>, until: number): Promise<number> {
	let fired = 0;
	while (host.alarmAt !== undefined && host.alarmAt <= until && fired < 10_000) {
		await host.fireAlarm(engine);
		fired++;
	}
	host.clock.moveTo(Math.max(host.now(), until));
	return fired;
}

/** How many delivery attempts the documented schedule allows within `ms` (first attempt included). */
function scheduledAttemptsWithin(ms: number): number {
	let attempts = 1;
	for (let t = 0; ; attempts++) {
		t += outboxBackoffMs(attempts);
		if (t > ms) return attempts;
	}
}

describe('index delivery while the shard is down', () => {
	it.for(['sleeps-a-day', 'quick'])(
		'backs off as documented over simulated hours, with no replay per retry (%s)',
		async (type) => {
			const host = new VirtualHost({ registry });
			let attempts = 0;
			const send = host.sendIndexEntry.bind(host);
			host.sendIndexEntry = (entry) => (attempts++, send(entry));
			host.failDeliveries = Number.POSITIVE_INFINITY;
			const engine = host.engine();
			await engine.create('wf-1', type, {});
			await host.idle();
			passes = 0;
			const start = host.now();
			const alarms = await runClockUntil(host, engine, start + 3 * 3_600_000);
			// 1 s doubling to 5 min: about 45 attempts in 3 hours, not one every couple of seconds.
			expect(attempts).toBeLessThanOrEqual(scheduledAttemptsWithin(3 * 3_600_000) + 1);
			expect(alarms).toBeLessThanOrEqual(attempts + 1);
			expect(passes).toBe(0);
			expect(host.store.outbox!.attempts).toBeGreaterThan(5);
		},
	);

	it('keeps counting attempts across transitions instead of starting the backoff again', async () => {
		const host = new VirtualHost({ registry });
		host.failDeliveries = Number.POSITIVE_INFINITY;
		const engine = host.engine();
		await engine.create('wf-1', 'waits', {});
		await host.idle();
		await runClockUntil(host, engine, host.now() + 600_000);
		const before = host.store.outbox!.attempts;
		expect(before).toBeGreaterThan(3);
		for (let i = 0; i < 5; i++) {
			await engine.sendEvent('go', { n: i });
			await host.idle();
		}
		expect(host.store.outbox!.attempts).toBeGreaterThanOrEqual(before);
		expect(host.store.outbox!.nextAttemptAt).toBeGreaterThan(host.now());
	});

	it('delivers the newest entry once the shard is back', async () => {
		const host = new VirtualHost({ registry });
		host.failDeliveries = Number.POSITIVE_INFINITY;
		const engine = host.engine();
		await engine.create('wf-1', 'sleeps-a-day', {});
		await host.idle();
		await runClockUntil(host, engine, host.now() + 3_600_000);
		host.failDeliveries = 0;
		await runClockUntil(host, engine, host.now() + 600_000);
		expect(host.store.outbox).toBeUndefined();
		expect(host.indexEntries.at(-1)).toMatchObject({ status: 'sleeping', version: engine.status().version });
	});
});

describe('passes that change nothing', () => {
	it('publish no index update and leave the version alone when an event arrives that no wait consumes', async () => {
		const host = new VirtualHost({ registry });
		const engine = host.engine();
		await engine.create('wf-1', 'waits', {});
		await host.idle();
		const { version } = engine.status();
		const delivered = host.indexEntries.length;
		for (let i = 0; i < 50; i++) await engine.sendEvent('noise', { n: i });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'waiting', version });
		expect(host.indexEntries.length).toBe(delivered);
	});

	it('still moves on and publishes when the awaited event arrives', async () => {
		const host = new VirtualHost({ registry });
		const engine = host.engine();
		await engine.create('wf-1', 'waits', {});
		await host.idle();
		const { version } = engine.status();
		await engine.sendEvent('go', { n: 1 });
		await host.idle();
		expect(engine.status().version).toBeGreaterThan(version);
		expect(engine.status().steps.filter((s) => s.status === 'completed')).toHaveLength(1);
		expect(host.indexEntries.at(-1)).toMatchObject({ status: 'waiting', version: engine.status().version });
	});
});
