import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/engine/support/errors';
import type { RetryDelayFunction } from '../../src/engine/definition/retry-policy';
import type { Step, StepConfig } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf, startInstance } from './start-instance';

/** The retries of the next run, how many attempts fail, and what the delay function and the step saw. */
let retries: unknown;
let failures = 0;
let attempts = 0;
let delayCalls: { attempt: number; error: unknown; step: unknown }[] = [];
let configSeen: StepConfig | undefined;

class Retried extends Workflow<{}, string> {
	static override readonly type = 'retried';
	async run(step: Step) {
		return step.do(
			'call',
			(ctx) => {
				attempts++;
				configSeen = ctx.config;
				if (attempts <= failures) throw new Error(attempts === 1 ? 'rate limited' : 'upstream 503');
				return 'ok';
			},
			{ retries: retries as never },
		);
	}
}
const registry = registryOf(Retried);

/** Runs until it finishes, firing each retry's alarm; answers the waits between attempts (ms). */
async function run(given: unknown, failing: number) {
	retries = given;
	failures = failing;
	attempts = 0;
	delayCalls = [];
	const { engine, host } = await startInstance(registry, 'retried', {});
	const waits: number[] = [];
	while (engine.status().status === 'sleeping') {
		waits.push(host.alarmAt! - host.now());
		await host.fireAlarm(engine);
	}
	return { engine, waits };
}

const recording =
	(fn: RetryDelayFunction): RetryDelayFunction =>
	(input) => {
		delayCalls.push({ attempt: input.attempt, error: input.error, step: input.ctx.step });
		return fn(input);
	};

describe('a retry delay computed from the attempt and the error', () => {
	// Cloudflare: engine.test.ts "applies a dynamic delay function and succeeds after retries".
	it('waits what the function returns, given the failed attempt and its error', async () => {
		const delay = recording(({ attempt, error }) => ((error as Error).message === 'rate limited' ? '30 seconds' : attempt * 1000));
		const { engine, waits } = await run({ limit: 3, delay, backoff: 'constant' }, 2);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'ok' });
		expect(waits).toEqual([30_000, 2000]);
		expect(delayCalls).toMatchObject([
			{ attempt: 1, error: { message: 'rate limited' }, step: { name: 'call', count: 1 } },
			{ attempt: 2, error: { message: 'upstream 503' } },
		]);
		expect(engine.history().events.filter((e) => e.kind === 'step.attempt_failed').map((e) => (e as { retryAt: number }).retryAt - e.at)).toEqual([30_000, 2000]);
	});

	it('awaits an async function', async () => {
		const { engine, waits } = await run({ limit: 1, delay: async () => '5s', backoff: 'constant' }, 1);
		expect(engine.status().status).toBe('completed');
		expect(waits).toEqual([5000]);
	});

	it("applies the backoff to the function's value, as Cloudflare does (constant uses it as is)", async () => {
		const { waits } = await run({ limit: 3, delay: () => 1000 }, 3);
		expect(waits).toEqual([1000, 2000, 4000]);
	});

	it('is not called again on replay: the wait it chose is stored', async () => {
		const { engine } = await run({ limit: 2, delay: recording(() => 10) , backoff: 'constant' }, 1);
		expect(engine.status().status).toBe('completed');
		expect(delayCalls).toHaveLength(1);
	});

	// Cloudflare: engine.test.ts "fails non-retryably when the delay function throws".
	it('ends the step for good, without another attempt, when the function throws', async () => {
		const { engine } = await run({ limit: 5, delay: () => { throw new Error('delay boom'); }, backoff: 'constant' }, 5);
		expect(attempts).toBe(1);
		expect(engine.status()).toMatchObject({ status: 'errored', error: { code: ErrorCode.StepFailed } });
		expect(engine.status().steps[0]).toMatchObject({
			status: 'failed',
			attempts: 1,
			error: { name: 'DelayFunctionError', code: ErrorCode.DelayFunctionFailed, message: expect.stringMatching(/delay function of step "call" threw: delay boom/) },
		});
	});

	it.for([[-1], [Number.NaN], ['soon'], [null]] as const)('ends the step for good when the function returns %j', async ([value]) => {
		const { engine } = await run({ limit: 5, delay: () => value as never }, 5);
		expect(attempts).toBe(1);
		expect(engine.status().steps[0]).toMatchObject({ status: 'failed', error: { code: ErrorCode.DelayFunctionFailed, message: expect.stringContaining('returned') } });
	});

	// Cloudflare: engine.test.ts "omits delay from ctx.config for a dynamic delay but includes it for a static delay".
	it('leaves the delay out of ctx.config when it is a function, and shows a fixed one', async () => {
		await run({ limit: 1, delay: () => 10, backoff: 'constant' }, 0);
		expect(configSeen?.retries).toEqual({ limit: 1, backoff: 'constant' });
		await run({ limit: 1, delay: 1234, backoff: 'constant' }, 0);
		expect(configSeen?.retries).toEqual({ limit: 1, delay: 1234, backoff: 'constant' });
	});
});
