// The Worker the dashboard's browser tests run under `wrangler dev`
// (test/worker/dashboard.wrangler.jsonc): the product's types, plus a scheduled type,
// a parent with children and an R2 archive, so every page has something to show.
import { z } from 'zod';
import { createApp, createWorkflowRunner, defineRegistry } from '../../src/host';
import { callRole } from '../../src/client/stubs';
import type { ShardflowEnv } from '../../src/client/instance-client';
import { Workflow, type Step } from '../../src/authoring';
import { PaymentWorkflow } from '../../examples/demo/workflows/payment-workflow';
import { TestWorkflow } from '../../examples/demo/workflows/test-workflow';

/** Runs every 10 seconds (six cron fields, seconds first): a schedule with recent runs within a test. */
export class HeartbeatWorkflow extends Workflow<{ region: string }, string> {
	static override readonly type = 'heartbeat';
	static override payload = z.object({ region: z.string() });
	static override schedule = { cron: '*/10 * * * * *', payload: { region: 'eu' }, overlap: 'skip' as const };
	async run(step: Step, { region }: { region: string }) {
		return step.do('ping', () => `${region} ok`);
	}
}

/** A child: labels a shipment once it hears "ship" (so a test decides when it finishes). */
export class ShippingWorkflow extends Workflow<{ orderId: string }, string> {
	static override readonly type = 'shipping';
	static override payload = z.object({ orderId: z.string() });
	static override events = { ship: z.object({ carrier: z.string() }) };
	async run(step: Step<typeof ShippingWorkflow.events>, { orderId }: { orderId: string }) {
		const { carrier } = await step.waitForEvent('ship', { timeout: '1 day' });
		return step.do('label', () => `${carrier} label for ${orderId}`);
	}
}

/** A child that finishes at once. */
export class ReceiptWorkflow extends Workflow<{ orderId: string }, string> {
	static override readonly type = 'receipt';
	static override payload = z.object({ orderId: z.string() });
	async run(step: Step, { orderId }: { orderId: string }) {
		return step.do('mail', () => `receipt for ${orderId}`);
	}
}

/** A parent: starts a receipt (fire and forget), then waits for its shipment. */
export class OrderWorkflow extends Workflow<{ orderId: string }, string> {
	static override readonly type = 'order';
	static override payload = z.object({ orderId: z.string() });
	async run(step: Step, { orderId }: { orderId: string }) {
		await step.start('receipt', ReceiptWorkflow, { payload: { orderId } });
		return step.invoke('ship', ShippingWorkflow, { payload: { orderId } });
	}
}

/** Steps with names longer than the timeline's name column: the desktop timeline shows them whole (docs/dashboard.md). */
export class LongStepNamesWorkflow extends Workflow<{}, number> {
	static override readonly type = 'long-step-names';
	async run(step: Step) {
		await step.do('reserve-the-warehouse-stock-for-every-line-of-the-order-and-tell-the-customer', () => 1);
		await step.do('averyveryverylongstepnamewithoutanyplacetobreakitatallwhatsoever', () => 2);
		return step.do('ok', () => 3);
	}
}

/** Pinned to the eu group (test/dashboard/groups-browser.test.ts): a shipment of an EU customer, waiting to be shipped. */
export class EuShipmentWorkflow extends Workflow<{ orderId: string }, string> {
	static override readonly type = 'eu-shipment';
	static override payload = z.object({ orderId: z.string() });
	static override events = { ship: z.object({ carrier: z.string() }) };
	async run(step: Step<typeof EuShipmentWorkflow.events>, { orderId }: { orderId: string }) {
		const { carrier } = await step.waitForEvent('ship', { timeout: '1 day' });
		return step.do('label', () => `${carrier} label for ${orderId}`);
	}
}

/** Waits for a sign-off that never comes in a test: stuck (an alert on the overview) 2 seconds after it starts waiting. */
export class SignOffWorkflow extends Workflow<{}, string> {
	static override readonly type = 'sign-off';
	static override events = { signed: z.object({ by: z.string() }) };
	async run(step: Step<typeof SignOffWorkflow.events>) {
		const { by } = await step.waitForEvent('signed', { timeout: '1 day' });
		return by;
	}
}

export const registry = defineRegistry({
	test: { workflow: TestWorkflow },
	'eu-shipment': { workflow: EuShipmentWorkflow, group: 'eu' },
	payment: { workflow: PaymentWorkflow, shards: 4, version: '2026-11-26.2' },
	heartbeat: { workflow: HeartbeatWorkflow },
	order: { workflow: OrderWorkflow },
	shipping: { workflow: ShippingWorkflow, shards: 2 },
	receipt: { workflow: ReceiptWorkflow },
	'long-step-names': { workflow: LongStepNamesWorkflow },
	'sign-off': { workflow: SignOffWorkflow, stuckAfter: { running: 'never', waiting: '2 seconds' } },
}, { groups: { default: 'global', groups: { eu: { jurisdiction: 'eu', locationHint: 'weur' } } } });

export class WorkflowRunner extends createWorkflowRunner(registry) {}
const app = createApp(registry);

/**
 * The app, plus one route for the alerts test (test/dashboard/alerts-browser.test.ts): what an
 * instance sends its type's backlog object when its passes keep failing or its index delivery
 * fails, which a local run cannot make happen on demand. Test Worker only.
 */
export default {
	async fetch(request: Request, env: ShardflowEnv, ctx: ExecutionContext): Promise<Response> {
		const url = new URL(request.url);
		if (request.method === 'POST' && url.pathname === '/__test/backlog') {
			const { call, type, argument } = (await request.json()) as { call: 'failingReport' | 'backlogAdd'; type: string; argument: never };
			await callRole(env, call, [type], argument);
			return Response.json({ ok: true });
		}
		return app.fetch(request, env, ctx);
	},
};
