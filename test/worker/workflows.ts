import { z } from 'zod';
import type { Step } from '../../src/engine/types';
import { Workflow } from '../../src/workflow';
import { countExecution } from './probes';

/** A step whose first execution never finishes: for crashes mid-step. */
export class HangOnceWorkflow extends Workflow<{}, string> {
	static override readonly type = 'hang-once';
	static override defaults = { retries: { limit: 2, delay: '1s', backoff: 'constant' as const } };
	async run(step: Step) {
		const before = await step.do('before', () => countExecution(`${this.ctx.id}:before`));
		const held = await step.do('held', async () => {
			if (countExecution(`${this.ctx.id}:held`) === 1) await new Promise(() => {});
			return 'released';
		});
		await step.do('after', () => countExecution(`${this.ctx.id}:after`));
		return `${before}:${held}`;
	}
}

const chaosEvents = { signal: z.object({ seq: z.number().int() }) };

/**
 * Thirty checkpoints mixing steps, sleeps and event waits; each step counts
 * its executions so a test can prove that checkpointed steps never rerun.
 */
export class ChaosWorkflow extends Workflow<{ seed: number }, { sum: number; signals: number[] }> {
	static override readonly type = 'chaos';
	static override events = chaosEvents;
	static override payload = z.object({ seed: z.number().int() });
	async run(step: Step<typeof chaosEvents>, { seed }: { seed: number }) {
		let sum = 0;
		const signals: number[] = [];
		for (let i = 0; i < 30; i++) {
			if (i % 10 === 4) await step.sleep(`sleep-${i}`, `${1 + (seed % 3)}s`);
			else if (i % 10 === 8) signals.push((await step.waitForEvent('signal', { name: `wait-${i}`, timeout: '1 hour' })).seq);
			else sum += await step.do(`step-${i}`, () => (countExecution(`${this.ctx.id}:step-${i}`), seed + i));
		}
		return { sum, signals };
	}
}

/** Many CPU-light steps: for pause storms and responsiveness. */
export class ManyStepsWorkflow extends Workflow<{ steps: number }, number> {
	static override readonly type = 'many';
	static override payload = z.object({ steps: z.number().int().min(0).max(100_000) });
	static override events = { poke: z.object({ n: z.number() }) };
	async run(step: Step<typeof ManyStepsWorkflow.events>, { steps }: { steps: number }) {
		let total = 0;
		for (let i = 0; i < steps; i++) total += await step.do(`s${i}`, () => i);
		return total;
	}
}

/** Consumes a stream of events in order: for event storms. */
export class InboxWorkflow extends Workflow<{ expect: number }, number[]> {
	static override readonly type = 'inbox';
	static override events = { msg: z.object({ n: z.number().int() }) };
	async run(step: Step<typeof InboxWorkflow.events>, { expect }: { expect: number }) {
		const seen: number[] = [];
		for (let i = 0; i < expect; i++) seen.push((await step.waitForEvent('msg', { name: `msg-${i}` })).n);
		return seen;
	}
}

/** Fails its first attempt, then waits a 10-minute backoff: for durable retry waits. */
export class SlowRetryWorkflow extends Workflow<{}, string> {
	static override readonly type = 'slow-retry';
	async run(step: Step) {
		return step.do(
			'call',
			() => {
				if (countExecution(`${this.ctx.id}:call`) === 1) throw new Error('upstream 503');
				return 'ok';
			},
			{ retries: { limit: 1, delay: '10 minutes', backoff: 'constant' } },
		);
	}
}

/** Waits for a knock (optional fields: `{}` is a valid payload), then a ring that declares no payload. */
export class DoorbellWorkflow extends Workflow<{}, string> {
	static override readonly type = 'doorbell';
	static override events = { knock: z.object({ by: z.string().optional() }), ring: z.undefined() };
	async run(step: Step<typeof DoorbellWorkflow.events>) {
		const knock = await step.waitForEvent('knock');
		await step.waitForEvent('ring');
		return knock.by ?? 'someone';
	}
}
