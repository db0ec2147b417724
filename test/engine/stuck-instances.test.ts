import { beforeEach, describe, expect, it } from 'vitest';
import { MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_STACK_CHARS } from '../../src/engine/support/thrown-value';
import { WATCHDOG_MS } from '../../src/engine/support/timing';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { parseDuration } from '../../src/engine/support/duration';
import type { InstanceEngine } from '../../src/engine/instance/instance-engine';
import { DEFAULT_RETENTION } from '../../src/engine/definition/registry';
import { registryOf, startInstance } from './start-instance';
import { DEFAULT_START_TIME } from '../../src/testing/virtual-clock';
import { VirtualHost } from '../../src/testing/virtual-host';

/** A finished instance keeps one alarm: its retention running out (no watchdog, no retry loop). */
function expectOnlyRetentionAlarm(host: VirtualHost, engine: InstanceEngine): void {
	const { status, updatedAt } = engine.status();
	expect(status).toBe('errored');
	expect(host.alarmAt).toBe(updatedAt + parseDuration(DEFAULT_RETENTION.errored));
}

const turns = () => new Promise((resolve) => setTimeout(resolve, 5));

let release: () => void = () => {};
let stepRuns = 0;
beforeEach(() => {
	stepRuns = 0;
});

class LongStep extends Workflow<{}, string> {
	static override readonly type = 'long-step';
	async run(step: Step) {
		return step.do('long', async () => {
			stepRuns++;
			await new Promise<void>((resolve) => (release = resolve));
			return 'done';
		});
	}
}

function cyclic() {
	const value: Record<string, unknown> = { name: 'loop' };
	value.self = value;
	return value;
}
const huge = () => new Error('x'.repeat(20 * 1024 * 1024));

/** Throws from run() whatever `payload.kind` names. */
class ThrowsAnything extends Workflow<{ kind: string }, never> {
	static override readonly type = 'throws-anything';
	async run(_step: Step, { kind }: { kind: string }): Promise<never> {
		throw thrown(kind);
	}
}
/** Throws the same thing from a step, retried once. */
class StepThrowsAnything extends Workflow<{ kind: string }, never> {
	static override readonly type = 'step-throws-anything';
	async run(step: Step, { kind }: { kind: string }): Promise<never> {
		return step.do('bad', () => {
			throw thrown(kind);
		}, { retries: { limit: 1, delay: 1000 } });
	}
}
function thrown(kind: string): unknown {
	switch (kind) {
		case 'bigint': return 10n;
		case 'cyclic': return cyclic();
		case 'huge': return huge();
		case 'symbol': return Symbol('odd');
		case 'undefined': return undefined;
		case 'throwing-getter': return { get message() { throw new Error('nope'); } };
		default: return new Error(kind);
	}
}

class FarFuture extends Workflow<{ until: number | string }, void> {
	static override readonly type = 'far-future';
	async run(step: Step, { until }: { until: number | string }) {
		await step.sleepUntil('later', until === 'infinity' ? Infinity : (until as number));
	}
}

const registry = registryOf(LongStep, ThrowsAnything, StepThrowsAnything, FarFuture);

describe('a pass that outlives the watchdog interval', () => {
	it('keeps the watchdog armed while a step runs longer than it, so a crash after that is still resumed', async () => {
		let { host, engine } = await startInstance(registry, 'long-step', {}, false);
		await turns();
		expect(stepRuns).toBe(1);
		// The watchdog fires while the step still runs: it must arm itself again.
		for (let i = 0; i < 3; i++) {
			expect(host.alarmAt).toBeDefined();
			host.clock.moveTo(host.alarmAt!);
			host.alarmAt = undefined;
			engine.alarm();
			await turns();
			expect(host.alarmAt).toBeGreaterThan(host.now());
			expect(host.alarmAt).toBeLessThanOrEqual(host.now() + WATCHDOG_MS);
		}
		// The isolate dies mid-step; the next alarm brings the instance back.
		host.crash();
		host = host.nextIsolate();
		const revived = host.engine();
		const fired = host.fireAlarm(revived);
		await turns();
		expect(stepRuns).toBe(2);
		release();
		await fired;
		expect(revived.status()).toMatchObject({ status: 'completed', output: 'done' });
	});

	it('does not replay once per watchdog alarm while a pass is in flight', async () => {
		const { host, engine } = await startInstance(registry, 'long-step', {}, false);
		await turns();
		const version = engine.status().version;
		for (let i = 0; i < 5; i++) {
			host.clock.moveTo(host.alarmAt!);
			engine.alarm();
			await turns();
		}
		release();
		await host.idle();
		expect(stepRuns).toBe(1);
		expect(engine.status()).toMatchObject({ status: 'completed', version: version + 1 });
	});
});

describe('a thrown value that cannot be stored as it is', () => {
	it.for(['bigint', 'cyclic', 'huge', 'symbol', 'undefined', 'throwing-getter'])(
		'ends the workflow errored when run() throws a %s, with a bounded description and no alarm left',
		async (kind) => {
			const { host, engine } = await startInstance(registry, 'throws-anything', { kind });
			const status = engine.status();
			expect(status.status).toBe('errored');
			expect(status.error!.message.length).toBeGreaterThan(0);
			expect(status.error!.message.length).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_CHARS);
			expect((status.error!.stack ?? '').length).toBeLessThanOrEqual(MAX_ERROR_STACK_CHARS);
			expectOnlyRetentionAlarm(host, engine);
		},
	);

	it.for(['bigint', 'cyclic', 'huge', 'symbol'])('retries a step that throws a %s per its policy, then fails it for good', async (kind) => {
		const { host, engine } = await startInstance(registry, 'step-throws-anything', { kind });
		expect(engine.status().steps[0]).toMatchObject({ status: 'retrying', attempts: 1 });
		await host.fireAlarm(engine);
		const status = engine.status();
		expect(status.steps[0]).toMatchObject({ status: 'failed', attempts: 2 });
		expect(status.steps[0]!.error!.message.length).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_CHARS);
		expect(status.status).toBe('errored');
	});

	it('describes values that do not serialise instead of losing them', async () => {
		const { engine } = await startInstance(registry, 'throws-anything', { kind: 'bigint' });
		expect(engine.status().error!.message).toContain('10n');
		const { engine: big } = await startInstance(registry, 'throws-anything', { kind: 'huge' });
		expect(big.status().error!.message).toMatch(/truncated/);
	});
});

const START = DEFAULT_START_TIME; // the virtual host's clock at create

describe('sleepUntil', () => {
	it.for([
		['1e300', 1e300],
		['Infinity', 'infinity'],
		['366 days ahead', START + 366 * 86_400_000],
	] as const)('refuses %s with INVALID_DURATION instead of waking every few seconds', async ([, until]) => {
		const { host, engine } = await startInstance(registry, 'far-future', { until });
		expect(engine.status()).toMatchObject({ status: 'errored', error: { name: 'ValidationError', code: 'INVALID_DURATION' } });
		expect(engine.status().error!.message).toMatch(/365 days|finite/);
		expectOnlyRetentionAlarm(host, engine);
	});

	it('accepts a time within 365 days', async () => {
		const { host, engine } = await startInstance(registry, 'far-future', { until: START + 364 * 86_400_000 });
		expect(engine.status().status).toBe('sleeping');
		expect(host.alarmAt).toBe(START + 364 * 86_400_000);
	});
});

let revokedAttempts = 0;
/** Throws a revoked Proxy: even `instanceof` on it throws. */
class ThrowsRevokedProxy extends Workflow<{ inStep: boolean }, string> {
	static override readonly type = 'throws-revoked-proxy';
	async run(step: Step, { inStep }: { inStep: boolean }): Promise<string> {
		const revoked = () => {
			const { proxy, revoke } = Proxy.revocable({}, {});
			revoke();
			return proxy;
		};
		if (!inStep) throw revoked();
		let caught = 'nothing';
		try {
			await step.do('bad', () => {
				revokedAttempts++;
				throw revoked();
			}, { retries: { limit: 2, delay: 10, backoff: 'constant' } });
		} catch (error) {
			caught = (error as Error).name;
		}
		await step.sleep('nap', 1000);
		return caught;
	}
}

let timeoutStarts = 0;
let abortedAttempts: number[] = [];
/** A step slower than its timeout that stops on the attempt's abort signal. */
class SlowerThanTimeout extends Workflow<{}, string> {
	static override readonly type = 'slower-than-timeout';
	async run(step: Step): Promise<string> {
		try {
			return await step.do('slow', ({ attempt, signal }) => {
				timeoutStarts++;
				return new Promise<string>((resolve, reject) => {
					const timer = setTimeout(() => resolve(`late#${attempt}`), 60_000);
					signal.addEventListener('abort', () => {
						clearTimeout(timer);
						abortedAttempts.push(attempt);
						reject(signal.reason);
					});
				});
			}, { timeout: 20, retries: { limit: 1, delay: 10, backoff: 'constant' } });
		} catch (error) {
			return (error as Error).name;
		}
	}
}

const hostileRegistry = registryOf(ThrowsRevokedProxy, SlowerThanTimeout);

describe('hostile thrown values and abandoned attempts', () => {
	it('retries a step that throws a revoked Proxy per its policy, then run() sees StepFailedError', async () => {
		revokedAttempts = 0;
		const { host, engine } = await startInstance(hostileRegistry, 'throws-revoked-proxy', { inStep: true });
		for (let i = 0; i < 5 && engine.status().status !== 'completed'; i++) await host.fireAlarm(engine);
		const status = engine.status();
		expect(status).toMatchObject({ status: 'completed', output: 'StepFailedError' });
		expect(status.steps[0]).toMatchObject({ name: 'bad', status: 'failed', attempts: 3 });
		expect(revokedAttempts).toBe(3);
	});

	it('ends the workflow errored when run() throws a revoked Proxy', async () => {
		const { host, engine } = await startInstance(hostileRegistry, 'throws-revoked-proxy', { inStep: false });
		expect(engine.status().status).toBe('errored');
		expectOnlyRetentionAlarm(host, engine);
	});

	it('aborts the signal of an attempt that times out, so it can stop before the retry starts', async () => {
		timeoutStarts = 0;
		abortedAttempts = [];
		const { host, engine } = await startInstance(hostileRegistry, 'slower-than-timeout', {}, false);
		await new Promise((r) => setTimeout(r, 60));
		await host.idle();
		for (let i = 0; i < 5 && engine.status().status !== 'completed'; i++) {
			await host.fireAlarm(engine);
			await new Promise((r) => setTimeout(r, 60));
			await host.idle();
		}
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'StepFailedError' });
		expect(abortedAttempts).toEqual([1, 2]);
		expect(timeoutStarts).toBe(2);
	});
});

class AwaitsApproval extends Workflow<{}, string> {
	static override readonly type = 'awaits-approval';
	static override events = { approval: {} as { ok: boolean } };
	async run(step: Step<typeof AwaitsApproval.events>) {
		const { ok } = await step.waitForEvent('approval');
		return ok ? 'approved' : 'refused';
	}
}

describe('an event accepted just before a crash', () => {
	it('is consumed by the next alarm, though the pass that would have consumed it never ran', async () => {
		let { host } = await startInstance(registryOf(AwaitsApproval), 'awaits-approval', {});
		// The event is durable and answered 202, then the process dies before its pass.
		host.store.appendEvent('approval', JSON.stringify({ ok: true }), host.now());
		host.crash();
		host = host.nextIsolate();
		host.alarmAt = host.now() + 10_000; // the watchdog sendEvent arms with the append
		const revived = host.engine();
		await host.fireAlarm(revived);
		expect(revived.status()).toMatchObject({ status: 'completed', output: 'approved' });
	});

});

describe('a pause that arrives during the last step', () => {
	it('holds the instance paused once the step finishes, and it completes only after a resume', async () => {
		stepRuns = 0;
		const { host, engine } = await startInstance(registry, 'long-step', {}, false);
		await turns();
		expect(engine.pause()).toBe('paused');
		release();
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'paused', steps: [{ name: 'long', status: 'completed' }] });
		expect(engine.resume()).toBe('running');
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'done' });
		expect(stepRuns).toBe(1);
	});
});
