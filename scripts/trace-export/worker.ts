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

/** A step's I/O of `ms` (a timer standing for a slow fetch). */
const io = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reserve (with a rollback), sleep, invoke a receipt, charge (two retries), ship (fails for good): the reservation is
 * rolled back. With `slowMs` (`npm run trace:export -- --slow <ms>`), `reserve` takes that long in the create's pass and
 * a step `pack` as long in the alarm's after the sleep: passes that outlive a macrotask, whose spans must stay whole.
 */
export class TracedOrderWorkflow extends Workflow<{ order: string; slowMs?: number }, string> {
	static override readonly type = 'traced-order';
	async run(step: Step, { order, slowMs = 0 }: { order: string; slowMs?: number }) {
		await step.do('reserve', async () => (await io(slowMs), `stock for ${order}`), { rollback: async () => void (await io(5)) });
		await step.sleep('cool-off', '2 seconds');
		if (slowMs > 0) await step.do('pack', async () => (await io(slowMs), 'packed'));
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
