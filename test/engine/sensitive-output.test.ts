import { describe, expect, it } from 'vitest';
import { ErrorCode, NonRetryableError } from '../../src/engine/support/errors';
import { REDACTED_STEP_OUTPUT } from '../../src/engine/definition/sensitive-output';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf, startInstance } from './start-instance';

let downstream: unknown;
let tokenCalls = 0;

/** Fetches a secret (sensitive), sleeps, then uses it in a later step: a replay must hand back the real value. */
class SecretUser extends Workflow<{}, string> {
	static override readonly type = 'secret-user';
	async run(step: Step) {
		const secret = await step.do('get-token', () => (tokenCalls++, { token: 'super-secret' }), { sensitive: 'output' });
		await step.sleep('nap', '1 minute');
		await step.do('use-token', () => ((downstream = secret), 'used'));
		return 'done';
	}
}

/** A sensitive step that fails: its error is not redacted. */
class SecretFails extends Workflow<{}, string> {
	static override readonly type = 'secret-fails';
	async run(step: Step) {
		try {
			await step.do('get-token', () => {
				throw new NonRetryableError('boom with secret context');
			}, { sensitive: 'output', retries: { limit: 0, delay: 0 } });
		} catch {
			// caught: the run completes
		}
		return 'done';
	}
}

const registry = registryOf(SecretUser, SecretFails);

async function finished() {
	downstream = undefined;
	tokenCalls = 0;
	const started = await startInstance(registry, 'secret-user', {});
	await started.host.fireAlarm(started.engine);
	return started;
}

// Cloudflare: context.test.ts "Sensitive step output".
describe("sensitive: 'output'", () => {
	it("hands the real value to the run, across a replay, while the status shows it redacted (Cloudflare: should redact a sensitive step's output in logs while passing the real value downstream)", async () => {
		const { engine } = await finished();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'done' });
		expect(downstream).toEqual({ token: 'super-secret' });
		expect(tokenCalls).toBe(1);
		expect(engine.status().steps.find((s) => s.name === 'get-token')).toMatchObject({ status: 'completed', result: REDACTED_STEP_OUTPUT });
		expect(engine.status().steps.find((s) => s.name === 'use-token')).toMatchObject({ result: 'used' });
	});

	it('redacts it in the step pages and the history export, which never hold the value', async () => {
		const { engine } = await finished();
		expect(engine.steps({}).items.find((s) => s.name === 'get-token')).toMatchObject({ result: REDACTED_STEP_OUTPUT });
		const completed = engine.history().events.find((e) => e.kind === 'step.completed' && e.step === 'get-token');
		expect(completed).toMatchObject({ result: REDACTED_STEP_OUTPUT });
		expect(JSON.stringify(engine.history())).not.toContain('super-secret');
		expect(JSON.stringify(engine.status())).not.toContain('super-secret');
	});

	it('keeps the real value for a restart from a later step', async () => {
		const { engine, host } = await finished();
		downstream = undefined;
		engine.restart({ from: 'use-token' });
		await host.idle();
		expect(engine.status().status).toBe('completed');
		expect(downstream).toEqual({ token: 'super-secret' });
		expect(tokenCalls).toBe(1);
	});

	it("does not redact a sensitive step's error (Cloudflare: should not redact a sensitive step's error)", async () => {
		const { engine } = await startInstance(registry, 'secret-fails', {});
		expect(engine.status().status).toBe('completed');
		expect(engine.status().steps[0]).toMatchObject({ status: 'failed', error: { message: expect.stringContaining('boom with secret context') } });
	});

	it('gives the step function its sensitivity in ctx.config', async () => {
		let config: unknown;
		class Reads extends Workflow<{}, void> {
			static override readonly type = 'reads';
			async run(step: Step) {
				await step.do('x', (ctx) => void (config = ctx.config), { sensitive: 'output' });
			}
		}
		await startInstance(registryOf(Reads), 'reads', {});
		expect(config).toMatchObject({ sensitive: 'output' });
	});

	it("refuses any other value, naming the one it takes", async () => {
		class Wrong extends Workflow<{}, void> {
			static override readonly type = 'wrong';
			async run(step: Step) {
				await step.do('x', () => 1, { sensitive: 'all' as never });
			}
		}
		const { engine } = await startInstance(registryOf(Wrong), 'wrong', {});
		expect(engine.status().error).toMatchObject({ code: ErrorCode.InvalidOptions, message: expect.stringContaining('"output"') });
	});
});
