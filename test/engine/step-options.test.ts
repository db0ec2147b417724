import { afterEach, describe, expect, it, vi } from 'vitest';
import { ErrorCode } from '../../src/engine/support/errors';
import type { Step, StepAttempt } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf, startInstance } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

/** What the next run passes to `step.do`, and what its function saw. */
let options: unknown;
let seen: StepAttempt[] = [];
let ran = 0;

class Configured extends Workflow<{}, string> {
	static override readonly type = 'configured';
	async run(step: Step) {
		return step.do('charge', (ctx) => (ran++, seen.push(ctx), 'ok'), options as never);
	}
}

/** `static defaults` set the retries every step inherits. */
class WithDefaults extends Workflow<{}, string> {
	static override readonly type = 'with-defaults';
	static override defaults = { retries: { limit: 7, delay: '3s', backoff: 'linear' as const } };
	async run(step: Step) {
		return step.do('charge', (ctx) => (seen.push(ctx), 'ok'), options as never);
	}
}

/** Two steps: each sees its own name. */
class TwoSteps extends Workflow<{}, string> {
	static override readonly type = 'two-steps';
	async run(step: Step) {
		await step.do('reserve', (ctx) => (seen.push(ctx), 1));
		return step.do('charge', (ctx) => (seen.push(ctx), 'ok'));
	}
}

/** Waits with the options of the run; a webhook likewise. */
class Waits extends Workflow<{}, string> {
	static override readonly type = 'waits';
	static override events = { approval: {} as { ok: boolean } };
	async run(step: Step<typeof Waits.events>) {
		await step.waitForEvent('approval', options as never);
		return 'ok';
	}
}
class Hooks extends Workflow<{}, string> {
	static override readonly type = 'hooks';
	async run(step: Step) {
		await step.webhook('callback', options as never);
		return 'ok';
	}
}

/** A step that never settles unless its signal aborts it. */
class Hangs extends Workflow<{}, string> {
	static override readonly type = 'hangs';
	async run(step: Step) {
		return step.do('hang', () => new Promise<string>(() => {}), { retries: { limit: 0, delay: 0 } });
	}
}

const registry = registryOf(Configured, WithDefaults, TwoSteps, Waits, Hooks, Hangs);

async function runWith(type: string, given: unknown) {
	options = given;
	seen = [];
	ran = 0;
	return startInstance(registry, type, {});
}

afterEach(() => {
	vi.useRealTimers();
});

// Cloudflare: validators.test.ts "should reject invalid step configs" (there the whole config is refused;
// here the error names the option, and the run ends errored with INVALID_OPTIONS before the step runs).
describe('step.do refuses an invalid config, naming the option', () => {
	it.for([
		[{ sensitive: 'all' }, 'sensitive'],
		[{ sensitive: true }, 'sensitive'],
		[{ retries: { limit: 1, delay: 0, 'i-like-trains': 'yes' } }, 'retries.i-like-trains'],
		[{ timeuot: '1 minute' }, 'timeuot'],
		[{ timeout: 0 }, 'timeout'],
		[{ retries: 'three' }, 'retries'],
		[{ rollback: 'refund' }, 'rollback'],
		[{ rollbackRetries: { limit: 1, delay: 0, max: 3 } }, 'rollbackRetries.max'],
		['fast', 'options'],
	] as const)('refuses %j (%s)', async ([given, named]) => {
		const { engine } = await runWith('configured', given);
		expect(engine.status()).toMatchObject({ status: 'errored', error: { code: ErrorCode.InvalidOptions, message: expect.stringContaining(named) } });
		expect(engine.status().error?.message).toContain('step "charge"');
		expect(ran).toBe(0);
	});

	// Cloudflare: validators.test.ts "should accept valid step configs".
	it.for([
		[{ retries: { limit: 0, delay: 100000, backoff: 'exponential' }, timeout: '15 minutes' }],
		[{ retries: { limit: 5, delay: 0, backoff: 'constant' }, timeout: '2 minutes' }],
		[{ rollback: () => undefined, rollbackRetries: { limit: 1, delay: '1s' }, rollbackTimeout: '1 minute' }],
		[undefined],
	] as const)('accepts %j', async ([given]) => {
		const { engine } = await runWith('configured', given);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'ok' });
	});

	it("points Cloudflare's argument order, step.do(name, config, fn), at shardflow's", async () => {
		class CloudflareOrder extends Workflow<{}, string> {
			static override readonly type = 'cloudflare-order';
			async run(step: Step) {
				return (step.do as Function)('charge', { retries: { limit: 1, delay: 0 } }, () => 'ok');
			}
		}
		const { engine } = await startInstance(registryOf(CloudflareOrder), 'cloudflare-order', {});
		expect(engine.status().error).toMatchObject({ code: ErrorCode.InvalidOptions, message: expect.stringContaining('step.do(name, fn, options)') });
	});

	it("points Cloudflare's waitForEvent(name, {type}) at shardflow's waitForEvent(type, {name})", async () => {
		const { engine } = await runWith('waits', { type: 'approval', timeout: '1 hour' });
		expect(engine.status().error).toMatchObject({ code: ErrorCode.InvalidOptions, message: expect.stringContaining('waitForEvent(event, {name})') });
	});

	it('refuses an unknown option of waitForEvent and of webhook', async () => {
		const wait = await runWith('waits', { timeout: '1 hour', nmae: 'typo' });
		expect(wait.engine.status()).toMatchObject({ status: 'errored', error: { code: ErrorCode.InvalidOptions, message: expect.stringContaining('nmae') } });
		const hook = await runWith('hooks', { timeout: '1 hour', secret: 'x' });
		expect(hook.engine.status()).toMatchObject({ status: 'errored', error: { code: ErrorCode.InvalidOptions, message: expect.stringContaining('secret') } });
	});
});

describe('the default attempt timeout', () => {
	it('abandons an attempt that runs 10 minutes when the step sets no timeout, like Cloudflare', async () => {
		// The attempt timeout is a timer of the isolate (a step's own time, not the engine's clock): fake it.
		vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
		const host = new VirtualHost({ registry });
		const engine = host.engine();
		const created = engine.create('wf-1', 'hangs', {});
		await vi.advanceTimersByTimeAsync(10 * 60_000 - 1000);
		await created;
		expect(engine.status().status).toBe('running');
		await vi.advanceTimersByTimeAsync(1000);
		// The pass goes on after the timeout with timers of 0 ms (yields), which the fake clock runs.
		for (let turn = 0; turn < 100 && engine.status().status === 'running'; turn++) await vi.advanceTimersByTimeAsync(1);
		await vi.advanceTimersByTimeAsync(1);
		vi.useRealTimers();
		expect(engine.status().status).toBe('errored');
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'errored', error: { code: ErrorCode.StepFailed } });
		expect(engine.status().steps[0]).toMatchObject({ name: 'hang', status: 'failed', error: { code: ErrorCode.StepTimeout, message: expect.stringContaining('600000 ms') } });
	});
});

// Cloudflare: context.test.ts "should provide step name and count in context", "should provide resolved config
// with defaults in context", "... with user overrides merged in context", "should not allow user callback to
// mutate engine retry config".
describe("the step function's context", () => {
	it('gives the step its name and count beside attempt and signal', async () => {
		await runWith('two-steps', undefined);
		expect(seen.map((ctx) => ctx.step)).toEqual([
			{ name: 'reserve', count: 1 },
			{ name: 'charge', count: 1 },
		]);
		expect(seen[0]).toMatchObject({ attempt: 1 });
		expect(seen[0]!.signal).toBeInstanceOf(AbortSignal);
	});

	it('gives the resolved config: the default retries and the default timeout', async () => {
		await runWith('configured', undefined);
		expect(seen[0]!.config).toEqual({ retries: { limit: 3, delay: '1s', backoff: 'exponential' }, timeout: '10 minutes' });
	});

	it("gives the step's own retries and timeout merged over the defaults", async () => {
		await runWith('configured', { retries: { limit: 2, delay: 500 }, timeout: '5 minutes' });
		expect(seen[0]!.config).toEqual({ retries: { limit: 2, delay: 500, backoff: 'exponential' }, timeout: '5 minutes' });
	});

	it("gives the workflow's static defaults when the step sets no retries", async () => {
		await runWith('with-defaults', { timeout: 1000 });
		expect(seen[0]!.config).toEqual({ retries: { limit: 7, delay: '3s', backoff: 'linear' }, timeout: 1000 });
	});

	it('does not let the step function change the retries the engine uses', async () => {
		let attempts = 0;
		class Mutates extends Workflow<{}, string> {
			static override readonly type = 'mutates';
			async run(step: Step) {
				return step.do(
					'mutating',
					(ctx) => {
						attempts++;
						try {
							(ctx.config.retries as { limit: number }).limit = 100;
						} catch {
							// frozen: a TypeError in strict mode is the point
						}
						throw new Error('retry me');
					},
					{ retries: { limit: 1, delay: 0 } },
				);
			}
		}
		const { engine, host } = await startInstance(registryOf(Mutates), 'mutates', {});
		await host.fireAlarm(engine);
		expect(engine.status().status).toBe('errored');
		expect(attempts).toBe(2);
	});
});
