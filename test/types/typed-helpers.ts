/**
 * Compile-time guarantees, checked by `tsc --noEmit` in `npm test`: every
 * `@ts-expect-error` below must be an error, or the type-check fails.
 * Nothing here runs.
 */
import type { ShardflowEnv } from '../../src/client/instance-client';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { PaymentWorkflow } from '../../examples/demo/workflows/payment-workflow';
import { TestWorkflow } from '../../examples/demo/workflows/test-workflow';

declare const env: ShardflowEnv;

export async function sendingEvents() {
	await PaymentWorkflow.sendEvent(env, { id: 'p', event: 'approval', payload: { approved: true, reviewer: 'alice' } });
	// @ts-expect-error: the payload does not match the approval schema
	await PaymentWorkflow.sendEvent(env, { id: 'p', event: 'approval', payload: { wrong: 1 } });
	// @ts-expect-error: payment declares no event named "typo"
	await PaymentWorkflow.sendEvent(env, { id: 'p', event: 'typo', payload: {} });
	// @ts-expect-error: the test workflow declares no events at all
	await TestWorkflow.sendEvent(env, { id: 't', event: 'approval', payload: {} });
}

export async function creating() {
	await PaymentWorkflow.create(env, { payload: { amount: 1, currency: 'EUR' } });
	// @ts-expect-error: amount must be a number
	await PaymentWorkflow.create(env, { payload: { amount: '1', currency: 'EUR' } });
	// @ts-expect-error: the test workflow's payload needs a name
	await TestWorkflow.create(env, { payload: {} });
	const status = await TestWorkflow.status(env, 't');
	const greeting: string | undefined = status.output?.greeting;
	return greeting;
}

const events = { approval: {} as { approved: boolean } };

export class TypedWaits extends Workflow<{}, boolean> {
	static override readonly type = 'typed-waits';
	static override events = events;
	async run(step: Step<typeof events>) {
		const approval = await step.waitForEvent('approval');
		const approved: boolean = approval.approved;
		// @ts-expect-error: "typo" is not a declared event
		await step.waitForEvent('typo');
		return approved;
	}
}

export class NoEvents extends Workflow<{}, void> {
	static override readonly type = 'no-events';
	async run(step: Step) {
		// @ts-expect-error: a workflow with no events cannot wait for one
		await step.waitForEvent('anything');
	}
}

class Point {
	constructor(readonly x: number) {}
	norm() {
		return Math.abs(this.x);
	}
}

/** Step results must survive the JSON round trip unchanged: what would not is refused at compile time. */
export class JsonOnly extends Workflow<{}, { at: string }> {
	static override readonly type = 'json-only';
	async run(step: Step) {
		const at: string = await step.do('iso', () => new Date(0).toISOString());
		const user: { name: string; tags: string[] } = await step.do('user', async () => ({ name: 'a', tags: ['x'] }));
		await step.do('nothing', async () => {});
		await step.do('parsed', () => JSON.parse('{}'));
		// @ts-expect-error: a Date comes back as a string on replay
		await step.do('date', () => new Date(0));
		// @ts-expect-error: a Map comes back as {}
		await step.do('map', () => new Map<string, number>());
		// @ts-expect-error: a Set comes back as {}
		await step.do('set', async () => new Set([1]));
		// @ts-expect-error: a nested Date too
		await step.do('nested', () => ({ user, joined: new Date(0) }));
		// @ts-expect-error: a class instance loses its methods
		await step.do('point', () => new Point(1));
		// @ts-expect-error: undefined in an array becomes null
		await step.do('holes', () => [1, undefined]);
		// @ts-expect-error: bigint does not serialise
		await step.do('big', () => 1n);
		// @ts-expect-error: functions do not serialise
		await step.do('fn', () => ({ f: () => 1 }));
		return { at };
	}
}

export class DateOutput extends Workflow<{}, Date> {
	static override readonly type = 'date-output';
	// @ts-expect-error: the output is stored as JSON, so it cannot be a Date
	async run() {
		return new Date(0);
	}
}

export class DatePayload extends Workflow<{ at: Date }, void> {
	static override readonly type = 'date-payload';
	async run(_step: Step, _payload: { at: Date }) {}
}

export async function jsonPayloads() {
	// @ts-expect-error: a payload is stored as JSON (run would get a string): a Date is not accepted
	await DatePayload.create(env, { payload: { at: new Date(0) } });
	await PaymentWorkflow.sendEvent(env, { id: 'p', event: 'approval', payload: { approved: true, reviewer: 'a' }, idempotencyKey: 'k-1' });
	// @ts-expect-error: an idempotency key is a string
	await PaymentWorkflow.sendEvent(env, { id: 'p', event: 'approval', payload: { approved: true, reviewer: 'a' }, idempotencyKey: 1 });
}

export async function derivedHelpers() {
	const page = await PaymentWorkflow.steps(env, 'p', { limit: 2 });
	const first: string | undefined = page.items[0]?.name;
	const paused: string = await PaymentWorkflow.pause(env, 'p');
	// @ts-expect-error: pause takes an id, nothing else
	await PaymentWorkflow.pause(env, 'p', {});
	// @ts-expect-error: operations without a helper (reindex) are not static helpers
	await PaymentWorkflow.reindex(env, 'p');
	return [first, paused];
}

export async function terminatingWithRollback() {
	const status: 'rolling_back' | string = await PaymentWorkflow.terminate(env, 'p', { rollback: true });
	await PaymentWorkflow.terminate(env, 'p');
	// @ts-expect-error: rollback is a boolean
	await PaymentWorkflow.terminate(env, 'p', { rollback: 'yes' });
	return status;
}

export class TypedRollbacks extends Workflow<{}, void> {
	static override readonly type = 'typed-rollbacks';
	async run(step: Step) {
		// The rollback gets the step's result, typed.
		await step.do('charge', () => ({ chargeId: 'c1' }), { rollback: (charge) => charge.chargeId.toUpperCase() });
		// @ts-expect-error: the result has no `id`
		await step.do('charge-2', () => ({ chargeId: 'c1' }), { rollback: (charge) => charge.id });
		const hook = await step.webhook<{ approved: boolean }>('approval', { timeout: '1 day' });
		const url: string = hook.url;
		const approved: boolean = (await hook.wait()).approved;
		void url;
		void approved;
	}
}
