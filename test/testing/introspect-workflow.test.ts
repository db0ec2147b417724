import { beforeEach, describe, expect, it } from 'vitest';
import type { ShardflowEnv } from '../../src/client/instance-client';
import { defineRegistry } from '../../src/engine/definition/registry';
import { introspectWorkflow, TestKitErrorCode } from '../../src/testing';
import { BasketWorkflow, calls, NoTimeoutWorkflow, OrderWorkflow, QuoteWorkflow } from './fixtures';

beforeEach(() => calls.clear());

/**
 * The Worker's own code, as a test on Node reaches it: a function of the author's that
 * is given the env and creates instances through the typed helpers. The test never
 * learns the ids.
 */
async function placeOrders(env: ShardflowEnv, skus: string[]): Promise<void> {
	const [first, ...rest] = skus;
	if (first !== undefined) await OrderWorkflow.create(env, { payload: { sku: first } });
	if (rest.length) await OrderWorkflow.createBatch(env, rest.map((sku, i) => (i === rest.length - 1 ? { id: `order-${sku}`, payload: { sku } } : { payload: { sku } })));
}

describe('introspectWorkflow on Node: instances the Worker\'s code creates', () => {
	// Cloudflare: vitest-pool-workers workflows fixture, "Long Workflow (batch)" "should be able to mock step result and complete".
	it('applies modifyAll to every instance of the type created after it, and get() hands each one back', async () => {
		const orders = await introspectWorkflow(OrderWorkflow);
		await orders.modifyAll((m) => m.disableSleeps().mockStepResult('price', 99).forceEventTimeout('confirm'));
		await placeOrders(orders.env, ['book', 'pen', 'ink']);
		const instances = await orders.get();
		expect(instances).toHaveLength(3);
		expect(instances[2]!.id).toBe('order-ink');
		for (const order of instances) {
			expect(await order.waitForStepResult('price')).toBe(99);
			await order.waitForStatus('completed');
			expect(await order.output()).toMatchObject({ price: 99, confirmedBy: null });
		}
		expect(calls.get('price')).toBeUndefined();
		await orders.dispose();
	});

	// Cloudflare: "Long Workflow (batch)" "should be able to mock step error in the first 2 retries, then mock step result and complete".
	it('a mocked error with times fails the first attempts of each instance, then the real step runs', async () => {
		const orders = await introspectWorkflow(OrderWorkflow);
		await orders.modifyAll(async (m) => {
			m.mockStepError('price', new Error('Oops'), { times: 2 });
			m.disableRetryDelays();
		});
		await placeOrders(orders.env, ['book', 'pen']);
		for (const order of await orders.get()) {
			expect(await order.waitForStepResult('price')).toBe(10);
			expect((await order.steps())[0]).toMatchObject({ name: 'price', status: 'completed', attempts: 3 });
		}
		expect(calls.get('price')).toBe(2);
		await orders.dispose();
	});

	// Cloudflare: "Long Workflow (batch)" "should be able to force an event to time out and error" (OrderWorkflow catches the timeout).
	it('handles have the kit API: waits, events, output, typed by the workflow class', async () => {
		const orders = await introspectWorkflow(OrderWorkflow);
		await orders.modifyAll((m) => m.disableSleeps());
		await placeOrders(orders.env, ['book']);
		const [order] = await orders.get();
		await order!.waitForStatus('waiting');
		await order!.sendEvent('confirm', { by: 'ops' });
		const output = await order!.output();
		const confirmedBy: string | null = output.confirmedBy;
		expect(confirmedBy).toBe('ops');
		await orders.dispose();
	});

	it('leaves out instances created before it and instances of other types, which still run', async () => {
		const registry = defineRegistry({ order: { workflow: OrderWorkflow }, 'no-timeout': { workflow: NoTimeoutWorkflow } });
		const env = {} as ShardflowEnv;
		const pings = await introspectWorkflow(NoTimeoutWorkflow, { env, registry });
		await placeOrders(env, ['before']);
		const orders = await introspectWorkflow(OrderWorkflow, { env, registry });
		await NoTimeoutWorkflow.create(env, { id: 'pinger', payload: {} });
		await placeOrders(env, ['after']);
		const [after, ...others] = await orders.get();
		expect(others).toEqual([]);
		expect(await after!.status()).toMatchObject({ type: 'order', payload: { sku: 'after' } });
		expect((await pings.get()).map((p) => p.id)).toEqual(['pinger']);
		expect(await NoTimeoutWorkflow.status(env, 'pinger')).toMatchObject({ status: 'waiting' });
		await orders.dispose();
		await pings.dispose();
	});

	it('modifiers given after an instance was created do not change it: they apply from the next one', async () => {
		const orders = await introspectWorkflow(OrderWorkflow);
		await placeOrders(orders.env, ['unmocked']);
		await orders.modifyAll((m) => m.mockStepResult('price', 99).disableSleeps().forceEventTimeout('confirm'));
		await placeOrders(orders.env, ['mocked']);
		const [unmocked, mocked] = await orders.get();
		expect(await unmocked!.waitForStepResult('price')).toBe(10);
		expect(await mocked!.waitForStepResult('price')).toBe(99);
		await orders.dispose();
	});

	// Cloudflare: "should not be able to mock the same step result more than one time" refuses in modify; shardflow refuses what it cannot store.
	it('refuses an invalid modifier in modifyAll, before any instance exists', async () => {
		const orders = await introspectWorkflow(OrderWorkflow);
		await expect(orders.modifyAll((m) => m.mockStepResult('price', new Date()))).rejects.toMatchObject({ code: TestKitErrorCode.InvalidMock });
		await orders.dispose();
	});

	it('dispose stops intercepting and gives the env its own WORKFLOW_RUNNER back', async () => {
		const own = { idFromName: () => 'x', get: () => ({}) };
		const env = { WORKFLOW_RUNNER: own } as ShardflowEnv;
		const orders = await introspectWorkflow(OrderWorkflow, { env });
		expect(env.WORKFLOW_RUNNER).not.toBe(own);
		await placeOrders(env, ['book']);
		await orders.dispose();
		expect(env.WORKFLOW_RUNNER).toBe(own);
		expect(await orders.get()).toEqual([]);
	});
});

describe("introspectWorkflow on Node: a parent's children", () => {
	it('runs the children a parent invokes and starts on the pure engine, with their own mocks, and the parent takes their outputs', async () => {
		const baskets = await introspectWorkflow(BasketWorkflow);
		const quotes = await introspectWorkflow(QuoteWorkflow, { env: baskets.env });
		await quotes.modifyAll((m) => m.mockStepResult('quote', 7));
		const { id } = await BasketWorkflow.create(baskets.env, { payload: { skus: ['book', 'pen'] } });
		const [basket] = await baskets.get();
		expect(basket!.id).toBe(id);
		await basket!.waitForStatus('completed');
		expect(await basket!.output()).toBe(14);
		const children = await quotes.get();
		expect(children.map((c) => c.id).sort()).toEqual([`${id}::quote-book`, `${id}::quote-pen`, `${id}::receipt`]);
		for (const child of children) expect(await child.output()).toBe(7);
		expect(calls.get('quote')).toBeUndefined();
		await quotes.dispose();
		await baskets.dispose();
	});
});
