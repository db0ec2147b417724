import { abortAllDurableObjects, evictDurableObject, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId, until } from '../helpers';
import { executions } from '../worker/probes';

afterEach(resetClock);

describe('crashes', () => {
	it('runs a step again after the isolate dies mid-step, and the attempt count shows it', async () => {
		const id = uniqueId('crash');
		await instances.create(testEnv, { type: 'hang-once', id, payload: {} });
		await until(async () => executions.get(`${id}:held`) === 1, 'the held step to start', 200);
		await abortAllDurableObjects(); // the process dies: in-memory state and promises are gone
		advanceClock(60_000);
		await fireAlarm(id); // the watchdog alarm brings the instance back
		await settle(id);
		const status = await instances.status(testEnv, { id });
		expect(status.status).toBe('completed');
		expect(status.steps.find((s) => s.name === 'held')).toMatchObject({ status: 'completed', attempts: 2 });
		expect(executions.get(`${id}:held`)).toBe(2);
		expect(executions.get(`${id}:before`)).toBe(1);
	});
});

describe('a crash of a pass woken by its event or its wake-up (the compact layout\'s format 2 holds its running in memory)', () => {
	for (const by of ['event', 'nap'] as const) {
		it(`resumes after the isolate dies mid-step, the ${by} taken and storage still ${by === 'event' ? 'waiting' : 'sleeping'}`, async () => {
			const id = uniqueId('layout-compact-woken');
			await instances.create(testEnv, { type: 'hang-when-woken', id, payload: { by } });
			await settle(id);
			if (by === 'event') await instances.sendEvent(testEnv, { id, event: 'go', payload: {} });
			else {
				advanceClock(60_000);
				// The alarm's call is cut by the abort below: its rejection is expected.
				fireAlarm(id).catch(() => {});
			}
			await until(async () => executions.get(`${id}:held`) === 1, 'the held step to start', 200);
			await abortAllDurableObjects();
			advanceClock(60_000);
			if (by === 'event') {
				// Nothing is due for a waiting instance: the alarm is the woken pass's watchdog, and a pass finds out.
				await fireAlarm(id);
			} else {
				// The pass the nap's alarm woke set no watchdog: its alarm handler awaited it, and the runtime runs an alarm whose
				// handler died again ("guaranteed at-least-once execution"; kill -9: test/tooling/hard-crash.test.ts). The test
				// pool does not, so the retry is run here as the runtime would.
				await runInDurableObject(stub(id), (runner) => (runner as unknown as { alarm(info: AlarmInvocationInfo): Promise<void> }).alarm({ retryCount: 1, isRetry: true, scheduledTime: Date.now() }));
			}
			await settle(id);
			const status = await instances.status(testEnv, { id });
			expect(status).toMatchObject({ status: 'completed', output: 'released' });
			expect(executions.get(`${id}:held`)).toBe(2);
		});
	}
});

describe('durable retry waits', () => {
	it('keeps a 10-minute retry backoff across an eviction and retries when the alarm fires', async () => {
		const id = uniqueId('backoff');
		await instances.create(testEnv, { type: 'slow-retry', id, payload: {} });
		await settle(id);
		const waiting = await instances.status(testEnv, { id });
		expect(waiting.status).toBe('sleeping');
		expect(waiting.steps[0]).toMatchObject({ status: 'retrying', attempts: 1, error: { message: 'upstream 503' } });
		expect(waiting.steps[0]!.wakeAt! - waiting.steps[0]!.startedAt!).toBeGreaterThanOrEqual(10 * 60_000);
		await evictDurableObject(stub(id));
		await fireAlarm(id); // early: the backoff has not passed
		expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
		advanceClock(10 * 60_000);
		await fireAlarm(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 'ok' });
		expect(executions.get(`${id}:call`)).toBe(2);
	});
});

describe('concurrency', () => {
	it('keeps one replay loop when an event, a resume and an alarm arrive together', async () => {
		const id = uniqueId('together');
		await instances.create(testEnv, { type: 'inbox', id, payload: { expect: 1 } });
		await settle(id);
		await instances.pause(testEnv, { id });
		await Promise.all([
			instances.sendEvent(testEnv, { id, event: 'msg', payload: { n: 7 } }),
			instances.resume(testEnv, { id }),
			fireAlarm(id),
		]);
		await settle(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: [7] });
	});

	it('makes exactly one instance of twenty concurrent creates with one id', async () => {
		const id = uniqueId('dup');
		const results = await Promise.all(Array.from({ length: 20 }, () => instances.create(testEnv, { type: 'test', id, payload: { name: 'x' } })));
		expect(results.filter((r) => r.created)).toHaveLength(1);
		await settle(id);
		advanceClock(2000);
		await fireAlarm(id);
		expect((await instances.status(testEnv, { id })).status).toBe('completed');
	});

	it('consumes fifty concurrent events once each, in arrival order, through pause and resume storms', async () => {
		const id = uniqueId('storm');
		await instances.create(testEnv, { type: 'inbox', id, payload: { expect: 50 } });
		const sends: Promise<unknown>[] = [];
		for (let n = 0; n < 50; n++) {
			sends.push(instances.sendEvent(testEnv, { id, event: 'msg', payload: { n } }));
			if (n % 10 === 3) sends.push(instances.pause(testEnv, { id }).catch(() => 'not pausable'));
			if (n % 10 === 6) sends.push(instances.resume(testEnv, { id }).catch(() => 'not paused'));
		}
		await Promise.all(sends);
		await instances.resume(testEnv, { id }).catch(() => undefined);
		await settle(id);
		const status = await instances.status(testEnv, { id });
		expect(status.status).toBe('completed');
		// Every event consumed once; the order is the order the instance received them.
		expect([...(status.output as number[])].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, n) => n));
	});
});
