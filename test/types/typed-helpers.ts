/**
 * Compile-time guarantees, checked by `tsc --noEmit` in `npm test`: every
 * `@ts-expect-error` below must be an error, or the type-check fails.
 * Nothing here runs.
 */
import type { ShardflowEnv } from '../../src/client/instance-client';
import type { Step } from '../../src/engine/types';
import { Workflow } from '../../src/workflow';
import { PaymentWorkflow } from '../../src/workflows/payment-workflow';
import { TestWorkflow } from '../../src/workflows/test-workflow';

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
