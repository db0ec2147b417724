/**
 * Compile-time guarantees of search attributes, checked by `tsc --noEmit` in `npm test`:
 * every `@ts-expect-error` below must be an error, or the type-check fails. Nothing here runs.
 */
import { IndexClient } from '../../src/client/index-client';
import type { ShardflowEnv } from '../../src/client/instance-client';
import { workflowClient } from '../../src/client/workflow-client';
import { defineRegistry } from '../../src/engine/definition/registry';
import { Workflow } from '../../src/workflow';
import type { StepOf } from '../../src/engine/definition/class-types';
import { TestWorkflow } from '../../examples/demo/workflows/test-workflow';

declare const env: ShardflowEnv;

class Invoice extends Workflow<{ n: number }, string> {
	static override readonly type = 'invoice';
	static override readonly attributes = { customerId: 'keyword', amount: 'number', paid: 'boolean', dueAt: 'datetime' } as const;

	async run(step: StepOf<typeof Invoice>) {
		await step.setAttributes('paid', { paid: true, amount: 12.5, dueAt: new Date(), customerId: null });
		// @ts-expect-error: invoice declares no attribute "region"
		await step.setAttributes('region', { region: 'eu' });
		// @ts-expect-error: amount is a number attribute
		await step.setAttributes('amount', { amount: '12' });
		// @ts-expect-error: paid is a boolean attribute
		await step.setAttributes('flag', { paid: 'yes' });
		return 'ok';
	}
}

const registry = defineRegistry({ invoice: { workflow: Invoice }, test: { workflow: TestWorkflow } });

export async function creatingWithAttributes() {
	await Invoice.create(env, { payload: { n: 1 }, attributes: { customerId: '42', amount: 10, dueAt: Date.now() } });
	// @ts-expect-error: invoice declares no attribute "region"
	await Invoice.create(env, { payload: { n: 1 }, attributes: { region: 'eu' } });
	// @ts-expect-error: customerId is a keyword attribute
	await Invoice.create(env, { payload: { n: 1 }, attributes: { customerId: 42 } });
	// @ts-expect-error: the test workflow declares no attributes
	await TestWorkflow.create(env, { payload: { name: 'x' }, attributes: { customerId: '42' } });
	const invoices = workflowClient<typeof Invoice>(env, 'invoice');
	await invoices.create({ payload: { n: 1 }, attributes: { paid: false } });
	// @ts-expect-error: paid is a boolean attribute
	await invoices.create({ payload: { n: 1 }, attributes: { paid: 0 } });
}

export async function queryingByAttributes() {
	const index = new IndexClient(env, registry).ofType('invoice');
	const page = await index.list({ attributes: { customerId: '42', amount: { gte: 100 }, paid: [true, false] }, order: 'attr:amount:desc' });
	const amount: number | undefined = page.items[0]?.attributes?.amount;
	// @ts-expect-error: invoice declares no attribute "region"
	await index.list({ attributes: { region: 'eu' } });
	// @ts-expect-error: amount is a number attribute
	await index.list({ attributes: { amount: '100' } });
	// @ts-expect-error: ranges apply to numbers and datetimes, not keywords
	await index.list({ attributes: { customerId: { gte: 'a' } } });
	// @ts-expect-error: invoice declares no attribute "region" to order by
	await index.list({ order: 'attr:region:asc' });
	await index.countBy({ attribute: 'paid', status: ['running'] });
	// @ts-expect-error: invoice declares no attribute "region" to group by
	await index.countBy({ attribute: 'region' });
	// @ts-expect-error: the registry has no type "invoices"
	new IndexClient(env, registry).ofType('invoices');
	return amount;
}
