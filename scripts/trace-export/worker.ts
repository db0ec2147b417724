// The Worker `npm run trace:export` runs under `wrangler dev` (scripts/trace-export.mjs): one run
// with retries, a sleep, a child in its own object and a rollback, traced by Workers tracing,
// whose spans wrangler's local collector keeps (docs/operations.md "Reading a trace locally").
import { createApp, createWorkflowRunner, defineRegistry } from '../../src/host';
import { NonRetryableError, Workflow, type Step } from '../../src/authoring';

/** A child in its own object (not inline): its spans are in the parent's trace through the runtime's propagation over RPC. */
export class ReceiptWorkflow extends Workflow<{ order: string }, string> {
	static override readonly type = 'receipt';
	static override inline = false;
	async run(step: Step, { order }: { order: string }) {
		return step.do('mail', async () => `receipt for ${order}`);
	}
}

/** Attempts of `charge` so far, per instance: the first two fail (a retry each). */
const attempts = new Map<string, number>();

/** Reserve (with a rollback), sleep, invoke a receipt, charge (two retries), ship (fails for good): the reservation is rolled back. */
export class TracedOrderWorkflow extends Workflow<{ order: string }, string> {
	static override readonly type = 'traced-order';
	async run(step: Step, { order }: { order: string }) {
		await step.do('reserve', async () => `stock for ${order}`, { rollback: async () => void (await new Promise((resolve) => setTimeout(resolve, 5))) });
		await step.sleep('cool-off', '2 seconds');
		await step.invoke('receipt', ReceiptWorkflow, { payload: { order } });
		await step.do(
			'charge',
			async () => {
				const n = (attempts.get(this.ctx.id) ?? 0) + 1;
				attempts.set(this.ctx.id, n);
				if (n < 3) throw Object.assign(new Error(`card network busy (attempt ${n})`), { code: 'UPSTREAM_BUSY' });
				return 'charged';
			},
			{ retries: { limit: 3, delay: '1 second', backoff: 'constant' } },
		);
		return step.do('ship', async (): Promise<string> => {
			throw new NonRetryableError('no carrier for this address');
		});
	}
}

export const registry = defineRegistry({
	'traced-order': { workflow: TracedOrderWorkflow },
	receipt: { workflow: ReceiptWorkflow },
});

export class WorkflowRunner extends createWorkflowRunner(registry) {}
export default createApp(registry);
