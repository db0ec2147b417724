import { z } from 'zod';
import { EventTimeoutError, Workflow, type PayloadOf, type StepOf, type WorkflowDefaults } from '../../../src/authoring'; // in your own Worker: 'shardflow/workflow'

const payload = z.object({
	amount: z.number().positive(),
	currency: z.string().length(3),
});

const events = {
	approval: z.object({ approved: z.boolean(), reviewer: z.string().min(1) }),
	'refund-requested': z.object({ reason: z.string(), amount: z.number() }),
};

export type PaymentPayload = PayloadOf<typeof payload>;
export type PaymentResult =
	| { status: 'charged'; amount: number; currency: string; reviewer: string }
	| { status: 'declined'; reviewer: string }
	| { status: 'expired' };

/** Reserve funds, wait up to 7 days for a reviewer, then charge or release. */
export class PaymentWorkflow extends Workflow<PaymentPayload, PaymentResult> {
	static override readonly type = 'payment';
	static override payload = payload;
	static override events = events;
	static override defaults = { retries: { limit: 3, delay: '1s', backoff: 'exponential' } } satisfies WorkflowDefaults;
	/**
	 * Search attributes (docs/search-attributes.md): given at create, e.g. `attributes: { customerId: '42', amount: 120 }`;
	 * `reviewer` is set by run() once the approval names one.
	 */
	static override readonly attributes = { customerId: 'keyword', amount: 'number', currency: 'keyword', vip: 'boolean', dueAt: 'datetime', reviewer: 'keyword' } as const;

	async run(step: StepOf<typeof PaymentWorkflow>, { amount, currency }: PaymentPayload): Promise<PaymentResult> {
		await step.do('reserve-funds', async () => ({ reserved: amount, currency }));
		let approval;
		try {
			approval = await step.waitForEvent('approval', { timeout: '7 days' });
		} catch (error) {
			if (error instanceof EventTimeoutError) return { status: 'expired' };
			throw error;
		}
		// Added after payments were already running: behind step.patched, so a history that went past
		// this point without it (a payment charged or declined before the deploy) replays as recorded,
		// and a payment still waiting for its approval sets the reviewer when the approval comes.
		if (await step.patched('payment-reviewer-attribute')) await step.setAttributes('reviewer', { reviewer: approval.reviewer });
		if (approval.approved) {
			await step.do('charge-card', async () => ({ charged: amount, currency }));
			return { status: 'charged', amount, currency, reviewer: approval.reviewer };
		}
		await step.do('release-funds', async () => ({ released: amount, currency }));
		return { status: 'declined', reviewer: approval.reviewer };
	}
}
