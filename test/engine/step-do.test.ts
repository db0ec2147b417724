import { beforeEach, describe, expect, it } from 'vitest';
import { ErrorCode, NonRetryableError, StepFailedError } from '../../src/engine/support/errors';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { REPLAYED_STEPS_PER_YIELD } from '../../src/engine/steps/step-opening';
import { registryOf, startInstance } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';
import { WRITE_METHODS } from '../../src/testing/write-gate';

let calls: Record<string, number> = {};
let failuresLeft: Record<string, number> = {};
const count = (name: string) => (calls[name] = (calls[name] ?? 0) + 1);

beforeEach(() => {
	calls = {};
	failuresLeft = {};
});

class ThreeSteps extends Workflow<{ n: number }, number> {
	static override readonly type = 'three';
	async run(step: Step, { n }: { n: number }) {
		const a = await step.do('a', () => (count('a'), n + 1));
		await step.sleep('pause', '10s');
		const b = await step.do('b', () => (count('b'), a * 2));
		return b;
	}
}

class Flaky extends Workflow<{ mode: string }, string> {
	static override readonly type = 'flaky';
	static override defaults = { retries: { limit: 2, delay: '1s', backoff: 'exponential' as const } };
	async run(step: Step, { mode }: { mode: string }) {
		try {
			return await step.do('call', () => {
				count('call');
				if (mode === 'fatal') throw new NonRetryableError('card expired');
				if ((failuresLeft.call ?? 0) > 0) {
					failuresLeft.call!--;
					throw new TypeError('upstream 503');
				}
				return 'ok';
			});
		} catch (error) {
			if (mode === 'compensate' && error instanceof StepFailedError) {
				await step.do('compensate', () => (count('compensate'), 'undone'));
				return `compensated: ${error.causeName}`;
			}
			throw error;
		}
	}
}

class Duplicate extends Workflow<{}, void> {
	static override readonly type = 'duplicate';
	async run(step: Step) {
		await step.do('charge', () => 1);
		await step.do('charge', () => 2);
	}
}

class SharedNames extends Workflow<{}, number> {
	static override readonly type = 'shared';
	async run(step: Step) {
		await step.sleep('x', 0);
		return step.do('x', () => 7);
	}
}

class HugeResult extends Workflow<{}, void> {
	static override readonly type = 'huge';
	async run(step: Step) {
		await step.do('big', () => 'x'.repeat(1024 * 1024 + 1));
	}
}

class SlowStep extends Workflow<{}, void> {
	static override readonly type = 'slow';
	async run(step: Step) {
		await step.do('slow', () => new Promise((r) => setTimeout(r, 200)), { timeout: 20, retries: { limit: 0, delay: 0 } });
	}
}

/** Cloudflare's own context test retries with `delay: 0`: each retry is due the moment its attempt fails. */
class NoDelay extends Workflow<{}, string> {
	static override readonly type = 'no-delay';
	async run(step: Step) {
		return step.do(
			'call',
			({ attempt }) => {
				count('call');
				if ((failuresLeft.call ?? 0) > 0) {
					failuresLeft.call!--;
					throw new TypeError(`upstream 503 on attempt ${attempt}`);
				}
				return `ok on attempt ${attempt}`;
			},
			{ retries: { limit: 2, delay: 0 } },
		);
	}
}

const registry = registryOf(ThreeSteps, Flaky, Duplicate, SharedNames, HugeResult, SlowStep, NoDelay);

const start = (type: string, payload: unknown = {}) => startInstance(registry, type, payload);

describe('step.do', () => {
	it('replays completed steps from storage without running them again', async () => {
		const { host, engine } = await start('three', { n: 1 });
		expect(engine.status().status).toBe('sleeping');
		await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 4 });
		expect(calls).toEqual({ a: 1, b: 1 });
	});

	it('survives an eviction between steps: a new engine over the same store resumes where it stopped', async () => {
		const { host } = await start('three', { n: 5 });
		const revived = host.engine();
		await host.fireAlarm(revived);
		expect(revived.status()).toMatchObject({ status: 'completed', output: 12 });
		expect(calls.a).toBe(1);
	});

	it('retries a failing step through the alarm with exponential waits, then succeeds', async () => {
		failuresLeft.call = 2;
		const { host, engine } = await start('flaky', { mode: 'retry' });
		const t0 = host.now();
		expect(engine.status().status).toBe('sleeping');
		expect(host.alarmAt).toBe(t0 + 1000);
		await host.fireAlarm(engine);
		expect(host.alarmAt).toBe(t0 + 1000 + 2000);
		await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'ok' });
		expect(engine.status().steps[0]).toMatchObject({ name: 'call', attempts: 3, status: 'completed' });
	});

	it('fails the workflow with the error name and message once retries are exhausted', async () => {
		failuresLeft.call = 10;
		const { host, engine } = await start('flaky', { mode: 'retry' });
		await host.fireAlarm(engine);
		await host.fireAlarm(engine);
		expect(calls.call).toBe(3);
		expect(engine.status()).toMatchObject({ status: 'errored', error: { name: 'StepFailedError' } });
		expect(engine.status().error!.message).toContain('TypeError: upstream 503');
	});

	it('fails at once on NonRetryableError', async () => {
		const { engine } = await start('flaky', { mode: 'fatal' });
		expect(calls.call).toBe(1);
		expect(engine.status().status).toBe('errored');
		expect(engine.status().steps[0]).toMatchObject({ status: 'failed', attempts: 1, error: { name: 'NonRetryableError', message: 'card expired' } });
	});

	it('lets run() catch a failed step to compensate, and rethrows it on replay without running the step again', async () => {
		failuresLeft.call = 10;
		const { host, engine } = await start('flaky', { mode: 'compensate' });
		await host.fireAlarm(engine);
		await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'compensated: TypeError' });
		// A restart-free replay of the same history: the failure is answered from storage.
		const before = { ...calls };
		host.store.instance!.status = 'running';
		const revived = host.engine();
		revived.kick();
		await host.idle();
		expect(calls).toEqual(before);
	});

	it('records the attempt before running fn, so a crash mid-step counts as an attempt', async () => {
		let release!: () => void;
		class Hangs extends Workflow<{}, string> {
			static override readonly type = 'hangs';
			async run(step: Step) {
				return step.do('hang', () => new Promise<string>((resolve) => (release = () => resolve('late'))));
			}
		}
		let host = new VirtualHost({ registry: registryOf(Hangs) });
		await host.engine().create('wf-1', 'hangs', {});
		await new Promise((r) => setTimeout(r, 5));
		expect(host.store.steps.get('do:hang')).toMatchObject({ status: 'running', attempts: 1 });
		// The isolate "dies"; the watchdog alarm brings a fresh engine back.
		expect(host.alarmAt).toBeDefined();
		host.crash();
		host = host.nextIsolate();
		const revived = host.engine();
		revived.alarm();
		await new Promise((r) => setTimeout(r, 5));
		expect(host.store.steps.get('do:hang')).toMatchObject({ status: 'running', attempts: 2 });
		release();
		await host.idle();
		expect(revived.status()).toMatchObject({ status: 'completed', output: 'late' });
	});

	it('refuses a step name used twice in one run as a determinism error', async () => {
		const { engine } = await start('duplicate');
		expect(engine.status()).toMatchObject({ status: 'errored', error: { name: 'DeterminismError' } });
		expect(engine.status().error!.message).toContain('"charge"');
	});

	it('refuses a step name cut inside an emoji (an unpaired surrogate, which storage would change) before the step runs; a whole emoji is fine', async () => {
		class CutName extends Workflow<{ title: string }, string> {
			static override readonly type = 'cut-name';
			async run(step: Step, { title }: { title: string }) {
				await step.do(`notify ${title}`, () => (count('whole'), 1));
				return step.do(`notify ${title.slice(0, 1)}`, () => (count('cut'), 'ran'));
			}
		}
		const { engine } = await startInstance(registryOf(CutName), 'cut-name', { title: '🙂 party' });
		expect(engine.status()).toMatchObject({ status: 'errored', error: { name: 'ValidationError', code: ErrorCode.InvalidOptions } });
		expect(engine.status().error!.message).toContain('unpaired UTF-16 surrogate');
		expect(calls).toEqual({ whole: 1 });
		expect(engine.status().steps.map((s) => s.name)).toEqual(['notify 🙂 party']);
	});

	it('keeps step kinds apart: a sleep and a do with the same name do not collide', async () => {
		const { engine } = await start('shared');
		expect(engine.status()).toMatchObject({ status: 'completed', output: 7 });
	});

	it('fails a step whose result is over 1 MiB without retrying it', async () => {
		const { engine } = await start('huge');
		expect(engine.status().status).toBe('errored');
		expect(engine.status().steps[0]).toMatchObject({ status: 'failed', attempts: 1 });
		expect(engine.status().error!.message).toContain('1 MiB');
	});

	it('fails an attempt that runs past its timeout', async () => {
		const { engine, host } = await start('slow');
		await new Promise((r) => setTimeout(r, 50));
		await host.idle();
		expect(engine.status().steps[0]).toMatchObject({ status: 'failed', error: { name: 'StepTimeoutError' } });
		expect(ErrorCode.StepTimeout).toBe('STEP_TIMEOUT');
	});
});

describe('step.do with a retry delay of 0', () => {
	it("arms the alarm at the failed attempt's own time, and fails the step after its third attempt without the clock moving", async () => {
		failuresLeft.call = Infinity;
		const { host, engine } = await start('no-delay');
		const t0 = host.now();
		expect(engine.status().steps[0]).toMatchObject({ status: 'retrying', attempts: 1, wakeAt: t0 });
		expect(host.store.wakeups.get('do:call')).toBe(t0);
		expect(host.alarmAt).toBe(t0);
		expect(await host.fireAlarm(engine)).toBe(true);
		expect(engine.status().steps[0]).toMatchObject({ status: 'retrying', attempts: 2, wakeAt: t0 });
		expect(await host.fireAlarm(engine)).toBe(true);
		expect(engine.status()).toMatchObject({ status: 'errored', error: { name: 'StepFailedError' } });
		expect(engine.status().steps[0]).toMatchObject({ status: 'failed', attempts: 3 });
		expect(calls.call).toBe(3);
		expect(host.now()).toBe(t0);
	});

	it('completes a step that fails once on its second attempt, on the alarm due at once', async () => {
		failuresLeft.call = 1;
		const { host, engine } = await start('no-delay');
		expect(host.alarmAt).toBe(host.now());
		expect(await host.fireAlarm(engine)).toBe(true);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'ok on attempt 2' });
		expect(engine.status().steps[0]).toMatchObject({ status: 'completed', attempts: 2 });
		expect(host.store.wakeups.size).toBe(0);
	});

	it('a fresh engine over the same store (an eviction) still finds the retry due', async () => {
		failuresLeft.call = 1;
		const { host } = await start('no-delay');
		const revived = host.engine();
		expect(await host.fireAlarm(revived)).toBe(true);
		expect(revived.status()).toMatchObject({ status: 'completed', output: 'ok on attempt 2' });
	});
});

describe('replay cost', () => {
	it('reads the step history with one query per replay, however many steps it holds', async () => {
		class Long extends Workflow<{}, number> {
			static override readonly type = 'long';
			async run(step: Step) {
				let total = 0;
				for (let i = 0; i < 200; i++) {
					total += await step.do(`s${i}`, () => i);
					if (i % 50 === 49) await step.sleep(`z${i}`, '1s');
				}
				return total;
			}
		}
		const host = new VirtualHost({ registry: registryOf(Long) });
		let historyReads = 0;
		let eventReads = 0;
		const readSteps = host.store.readSteps.bind(host.store);
		const oldestEvent = host.store.oldestEvent.bind(host.store);
		host.store.readSteps = () => (historyReads++, readSteps());
		host.store.oldestEvent = (name) => (eventReads++, oldestEvent(name));
		const engine = host.engine();
		await engine.create('wf-1', 'long', {});
		await host.idle();
		for (let i = 0; i < 4; i++) await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', output: (199 * 200) / 2 });
		const replays = 5; // the first run and one after each of the four sleeps
		expect(historyReads - 1).toBe(replays); // status() above read it once more
		expect(eventReads).toBe(0);
	});

	it('yields to the event loop during a long replay of cached steps, not only between new ones', async () => {
		class LongReplay extends Workflow<{}, number> {
			static override readonly type = 'long-replay';
			async run(step: Step) {
				let total = 0;
				for (let i = 0; i < 1000; i++) total += await step.do(`s${i}`, () => i);
				await step.sleep('z', '1s');
				return total;
			}
		}
		const host = new VirtualHost({ registry: registryOf(LongReplay) });
		const engine = host.engine();
		await engine.create('wf-1', 'long-replay', {});
		await host.idle();
		let yields = 0;
		const yieldToEventLoop = host.yieldToEventLoop.bind(host);
		host.yieldToEventLoop = () => (yields++, yieldToEventLoop());
		await host.fireAlarm(engine); // a replay of 1000 cached steps, then the sleep completes
		expect(engine.status()).toMatchObject({ status: 'completed', output: (999 * 1000) / 2 });
		expect(yields).toBe(Math.floor(1000 / REPLAYED_STEPS_PER_YIELD));
	});
});

describe('the writes of a step', () => {
	class Steps extends Workflow<{ n: number; wait: boolean }, number> {
		static override readonly type = 'steps';
		async run(step: Step, { n, wait }: { n: number; wait: boolean }) {
			let total = 0;
			for (let i = 0; i < n; i++) total += await step.do(`s${i}`, wait ? () => new Promise<number>((resolve) => setTimeout(() => resolve(i), 1)) : async () => i);
			return total;
		}
	}
	/** The store's write calls per step: a run of 10 steps more minus a run of fewer, over 10. */
	const writesPerStep = async (wait: boolean) => {
		const writesOf = async (n: number) => {
			const host = new VirtualHost({ registry: registryOf(Steps) });
			const calls = new Map<string, number>();
			const store = host.store as unknown as Record<string, (...args: unknown[]) => unknown>;
			let depth = 0; // the engine's calls, not those one store method makes of another
			for (const method of WRITE_METHODS) {
				const original = store[method]!.bind(store);
				store[method] = (...args: unknown[]) => {
					if (depth === 0) calls.set(method, (calls.get(method) ?? 0) + 1);
					depth++;
					try {
						return original(...args);
					} finally {
						depth--;
					}
				};
			}
			const engine = host.engine();
			await engine.create('wf-1', 'steps', { n, wait });
			await host.idle();
			expect(engine.status().status).toBe('completed');
			return calls;
		};
		// Both runs short enough (no waits) to end before their index delivery, or long enough (with waits) for it to write
		// their first pass's running: once each either way (kernel.ts `startRunning`).
		const [few, many] = wait ? [await writesOf(12), await writesOf(22)] : [await writesOf(2), await writesOf(12)];
		return Object.fromEntries([...many].map(([method, n]) => [method, (n - (few.get(method) ?? 0)) / 10]).filter(([, n]) => n !== 0));
	};

	it('writes a new step that settles at once in one call (its row with both records: 2 SQLite rows), one awaiting I/O in two (its row with its start, then its completion)', async () => {
		expect(await writesPerStep(false)).toEqual({ insertStep: 1 });
		expect(await writesPerStep(true)).toEqual({ insertStep: 1, writeStepWithRecord: 1 });
	});
});
