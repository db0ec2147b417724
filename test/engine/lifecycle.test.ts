import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ErrorCode, InvalidStateError, TypeMismatchError } from '../../src/engine/support/errors';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf, startInstance } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

let runs = 0;
class Steps extends Workflow<{ steps: number }, number> {
	static override readonly type = 'steps';
	static override payload = z.object({ steps: z.number().int().min(0).max(1000) });
	static override events = { go: {} as { ok: boolean } };
	async run(step: Step<typeof Steps.events>, { steps }: { steps: number }) {
		runs++;
		let total = 0;
		for (let i = 0; i < steps; i++) total += await step.do(`s${i}`, () => i);
		await step.waitForEvent('go');
		return total;
	}
}
class Other extends Workflow<{}, void> {
	static override readonly type = 'other';
	async run() {}
}
const registry = registryOf(Steps, Other);

const start = (payload: unknown = { steps: 3 }) => startInstance(registry, 'steps', payload, false);

describe('create', () => {
	it('is idempotent: the same id and payload return the same instance', async () => {
		const { engine, host } = await start();
		await host.idle();
		const again = await engine.create('wf-1', 'steps', { steps: 3 });
		expect(again).toMatchObject({ id: 'wf-1', created: false, status: 'waiting' });
		expect(engine.status().payload).toEqual({ steps: 3 });
	});

	it('refuses the same id with another type', async () => {
		const { engine } = await start();
		await expect(engine.create('wf-1', 'other', {})).rejects.toBeInstanceOf(TypeMismatchError);
	});

	it.for([
		['', ErrorCode.InvalidId],
		['has space', ErrorCode.InvalidId],
		['a/b', ErrorCode.InvalidId],
		['x'.repeat(101), ErrorCode.InvalidId],
		['__index:steps:0', ErrorCode.ReservedId],
		['__anything', ErrorCode.ReservedId],
	] as const)('refuses the id %j with %s and stores nothing', async ([id, code]) => {
		const host = new VirtualHost({ registry });
		await expect(host.engine().create(id, 'steps', { steps: 1 })).rejects.toMatchObject({ code });
		expect(host.store.instance).toBeUndefined();
	});

	it('refuses a payload its schema rejects before storing anything', async () => {
		const host = new VirtualHost({ registry });
		await expect(host.engine().create('wf-1', 'steps', { steps: -1 })).rejects.toMatchObject({ code: ErrorCode.InvalidPayload });
		expect(host.store.instance).toBeUndefined();
	});

	it('refuses an unknown type naming the registered ones', async () => {
		const host = new VirtualHost({ registry });
		await expect(host.engine().create('wf-1', 'nope', {})).rejects.toThrow(/registered types: steps, other/);
	});
});

describe('pause, resume, terminate, restart', () => {
	it('pauses at the next step boundary, ignores alarms and buffers events while paused, and resumes', async () => {
		const { engine, host } = await start({ steps: 500 });
		engine.pause();
		await host.idle();
		expect(engine.status().status).toBe('paused');
		const done = engine.status().steps.length;
		expect(done).toBeLessThan(500);
		engine.alarm();
		await engine.sendEvent('go', { ok: true });
		await host.idle();
		expect(engine.status().steps.length).toBe(done);
		expect(engine.resume()).toBe('running');
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: (499 * 500) / 2 });
	});

	it('terminates: cancels wake-ups and refuses further events', async () => {
		const { engine, host } = await start();
		await host.idle();
		expect(engine.terminate()).toBe('terminated');
		expect(host.store.wakeups.size).toBe(0);
		await expect(engine.sendEvent('go', { ok: true })).rejects.toBeInstanceOf(InvalidStateError);
	});

	it('restarts a finished instance from the start, discarding its step history', async () => {
		const { engine, host } = await start();
		await engine.sendEvent('go', { ok: true });
		await host.idle();
		expect(engine.status().status).toBe('completed');
		const before = runs;
		expect(engine.restart()).toBe('created');
		await host.idle();
		expect(runs).toBeGreaterThan(before);
		expect(engine.status()).toMatchObject({ status: 'waiting' });
		expect(engine.status().output).toBeUndefined();
	});

	it.for([
		['resume', 'waiting'],
		['restart', 'waiting'],
	] as const)('refuses %s while %s with a typed error', async ([call]) => {
		const { engine, host } = await start();
		await host.idle();
		expect(() => engine[call]()).toThrow(InvalidStateError);
	});

	it('refuses pause and terminate on a completed instance', async () => {
		const { engine, host } = await start({ steps: 0 });
		await engine.sendEvent('go', { ok: true });
		await host.idle();
		expect(() => engine.pause()).toThrow(InvalidStateError);
		expect(() => engine.terminate()).toThrow(InvalidStateError);
	});

	it('runs one replay loop at a time when an event, a resume and an alarm arrive together', async () => {
		const { engine, host } = await start({ steps: 50 });
		engine.pause();
		await host.idle();
		const before = runs;
		await Promise.all([engine.sendEvent('go', { ok: true }), Promise.resolve(engine.resume()), Promise.resolve(engine.alarm())]);
		await host.idle();
		expect(engine.status().status).toBe('completed');
		expect(runs - before).toBeLessThanOrEqual(2);
	});
});

describe('index outbox', () => {
	it('records every transition with a growing version and delivers the newest', async () => {
		const { engine, host } = await start({ steps: 1 });
		await host.idle();
		const versions = host.indexEntries.map((e) => e.version);
		expect(versions).toEqual([...versions].sort((a, b) => a - b));
		expect(host.indexEntries.at(-1)).toMatchObject({ id: 'wf-1', type: 'steps', status: 'waiting', version: engine.status().version });
		expect(host.store.outbox).toBeUndefined();
	});

	it('keeps a failed delivery and retries it from the alarm with backoff until it succeeds', async () => {
		const host = new VirtualHost({ registry });
		host.failDeliveries = 3;
		await host.engine().create('wf-1', 'steps', { steps: 1 });
		await host.idle();
		expect(host.store.outbox).toBeDefined();
		const revived = host.engine(); // evicted in between
		for (let i = 0; i < 5 && host.store.outbox; i++) await host.fireAlarm(revived);
		expect(host.store.outbox).toBeUndefined();
		expect(host.indexEntries.at(-1)).toMatchObject({ status: 'waiting', version: revived.status().version });
	});
});

describe('the first pass', () => {
	let release: (() => void) | undefined;
	class Instant extends Workflow<{}, string> {
		static override readonly type = 'instant';
		async run() {
			return 'done';
		}
	}
	class AwaitsOutsideSteps extends Workflow<{}, string> {
		static override readonly type = 'awaits-outside-steps';
		async run() {
			await new Promise<void>((resolve) => (release = resolve));
			return 'done';
		}
	}
	const firstPass = registryOf(Instant, AwaitsOutsideSteps);

	it('takes a run that returns at once from created to completed in one status change', async () => {
		const { engine, host } = await startInstance(firstPass, 'instant');
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'done', version: 2 });
		expect(host.indexEntries.at(-1)).toMatchObject({ status: 'completed', version: 2 });
	});

	it('marks a run running while it awaits something outside a step', async () => {
		const { engine, host } = await startInstance(firstPass, 'awaits-outside-steps', {}, false);
		while (!release) await new Promise((resolve) => setTimeout(resolve, 0));
		expect(engine.status().status).toBe('running');
		release();
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', version: 3 });
	});
});
