import { z } from 'zod';
import { Workflow, type StepOf } from '../../src/authoring';

// Workflow types of the residency tests (test/runtime/residency.test.ts): groups declared in test/worker/index.ts.

/** Pinned to the `eu` group: records an order, waits for its approval, settles it. */
export class ResidentOrderWorkflow extends Workflow<{ customerId: string; amount: number }, { settled: number }> {
	static override readonly type = 'resident-order';
	static override readonly attributes = { customerId: 'keyword' } as const;
	static override payload = z.object({ customerId: z.string(), amount: z.number() });
	static override events = { approve: z.object({ by: z.string() }) };
	async run(step: StepOf<typeof ResidentOrderWorkflow>, { customerId, amount }: { customerId: string; amount: number }) {
		await step.setAttributes('customer', { customerId });
		await step.do('record', () => ({ customerId, amount }));
		await step.waitForEvent('approve');
		return step.do('settle', () => ({ settled: amount }));
	}
}

/** Chooses its group from the payload's country: DE -> eu, AU -> au (not declared), XX -> later (not deployed), YY -> soon (not deployed, fallback: true), else the default group. */
export class RoutedOrderWorkflow extends Workflow<{ country: string }, string> {
	static override readonly type = 'routed-order';
	static override payload = z.object({ country: z.string() });
	static override events = { go: z.object({}) };
	async run(step: StepOf<typeof RoutedOrderWorkflow>, { country }: { country: string }) {
		await step.waitForEvent('go');
		return step.do('done', () => `done:${country}`);
	}
}

/** Pinned to the default group: an eu parent invoking it is a child in another group, refused by default. */
export class HomeOnlyWorkflow extends Workflow<{}, string> {
	static override readonly type = 'home-only';
	async run(step: StepOf<typeof HomeOnlyWorkflow>) {
		return step.do('home', () => 'home');
	}
}

/** Pinned to `eu`: invokes a child of a type without a group (it lives in eu too) and one pinned to the default group. */
export class ResidentParentWorkflow extends Workflow<{ crossGroup?: boolean }, string> {
	static override readonly type = 'resident-parent';
	async run(step: StepOf<typeof ResidentParentWorkflow>, { crossGroup }: { crossGroup?: boolean }) {
		const local = await step.invoke('local', ResidentChildWorkflow, { payload: {} });
		if (!crossGroup) return local;
		try {
			return await step.invoke('home', HomeOnlyWorkflow, { payload: {} });
		} catch (error) {
			return `refused:${(error as Error).message}`;
		}
	}
}

/** No group of its own: a child lives in its parent's group. */
export class ResidentChildWorkflow extends Workflow<{}, string> {
	static override readonly type = 'resident-child';
	async run(step: StepOf<typeof ResidentChildWorkflow>) {
		return step.do('child', () => 'child');
	}
}

/** No group (the default one): invokes an eu-pinned order, opted in to a child in another group or not (`allow`). */
export class CrossingParentWorkflow extends Workflow<{ customerId: string; allow: boolean }, unknown> {
	static override readonly type = 'crossing-parent';
	async run(step: StepOf<typeof CrossingParentWorkflow>, { customerId, allow }: { customerId: string; allow: boolean }) {
		try {
			const order = await step.invoke('order', ResidentOrderWorkflow, { payload: { customerId, amount: 7 }, allowCrossGroup: allow });
			return { order };
		} catch (error) {
			return `refused:${(error as { code?: string }).code}:${(error as Error).message}`;
		}
	}
}
