import { env } from 'cloudflare:workers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ShardflowEnv } from '../../../src/client/instance-client';
import { introspectWorkflow, testKitClock, testWorkflow, TestKitErrorCode } from '../../../src/testing/workerd';
import { api } from '../../api/helpers';
import { calls, OrderWorkflow } from '../fixtures';

const testEnv = env as unknown as ShardflowEnv;
let n = 0;
const sku = (name: string) => `${name}-${Date.now().toString(36)}-${n++}`;

beforeEach(() => calls.clear());
afterEach(() => testKitClock.reset());

/** The Worker's own code: its fetch handler (the REST API) creates the instances; the test never learns their ids. */
async function placeOrders(skus: string[], options: { batch?: boolean } = {}): Promise<void> {
	if (options.batch) {
		const response = await api('POST', '/workflows/batch', { items: skus.map((s) => ({ type: 'order', payload: { sku: s } })) });
		expect(response.json.items.every((item: { result: string }) => item.result === 'created')).toBe(true);
		return;
	}
	for (const s of skus) expect((await api('POST', '/workflows', { type: 'order', payload: { sku: s } })).status).toBe(201);
}

describe('introspectWorkflow in workerd: instances the Worker creates, in the real runner', () => {
	// Cloudflare: vitest-pool-workers workflows fixture, "Long Workflow (batch)" "should be able to mock step result and complete".
	it('applies modifyAll to every instance of the type the Worker creates after it, and get() hands each one back', async () => {
		const orders = await introspectWorkflow(OrderWorkflow, { env: testEnv });
		await orders.modifyAll((m) => m.disableSleeps().mockStepResult('price', 99).forceEventTimeout('confirm'));
		await placeOrders([sku('book'), sku('pen'), sku('ink')], { batch: true });
		const instances = await orders.get();
		expect(instances).toHaveLength(3);
		for (const order of instances) {
			expect(await order.waitForStepResult('price')).toBe(99);
			await order.waitForStatus('completed');
			expect(await order.output()).toMatchObject({ price: 99, confirmedBy: null });
		}
		expect(calls.get('price')).toBeUndefined();
		await orders.dispose();
	});

	// Cloudflare: "Long Workflow (batch)" "should be able to mock step timeout in first retry, then mock step result and complete".
	it('a forced timeout of the first attempt, then the mocked result, on an instance created by one POST', async () => {
		const orders = await introspectWorkflow(OrderWorkflow, { env: testEnv });
		await orders.modifyAll(async (m) => {
			m.forceStepTimeout('price', { times: 1 }).mockStepResult('price', 7).disableRetryDelays();
		});
		await placeOrders([sku('book')]);
		const [order] = await orders.get();
		expect(await order!.waitForStepResult('price')).toBe(7);
		expect((await order!.steps())[0]).toMatchObject({ attempts: 2 });
		await order!.dispose();
		await orders.dispose();
	});

	it('handles have the kit API: the clock, events and typed output', async () => {
		const orders = await introspectWorkflow(OrderWorkflow, { env: testEnv });
		await placeOrders([sku('book')]);
		const [order] = await orders.get();
		await order!.clock.advance('1 day');
		await order!.waitForStatus('waiting');
		await order!.sendEvent('confirm', { by: 'ops' });
		await order!.clock.advance('2 hours');
		const confirmedBy: string | null = (await order!.output()).confirmedBy;
		expect(confirmedBy).toBe('ops');
		await orders.dispose();
	});

	it("leaves out instances created before it and the test's own testWorkflow instances", async () => {
		await placeOrders([sku('before')]);
		const orders = await introspectWorkflow(OrderWorkflow, { env: testEnv });
		await orders.modifyAll((m) => m.mockStepResult('price', 99));
		const own = testWorkflow(OrderWorkflow, { env: testEnv });
		await own.start({ sku: sku('own') });
		await placeOrders([sku('after')]);
		const instances = await orders.get();
		expect(instances).toHaveLength(1);
		expect(instances[0]!.id).not.toBe(own.id);
		expect(await own.waitForStepResult('price')).toBe(10);
		await own.dispose();
		await orders.dispose();
	});

	it('refuses an invalid modifier in modifyAll, before any instance exists', async () => {
		const orders = await introspectWorkflow(OrderWorkflow, { env: testEnv });
		await expect(orders.modifyAll((m) => m.mockStepError('price', new Error('x'), { times: 0 }))).rejects.toMatchObject({ code: TestKitErrorCode.InvalidMock });
		await orders.dispose();
	});

	it('after dispose, new instances run unmodified and get() is empty', async () => {
		const orders = await introspectWorkflow(OrderWorkflow, { env: testEnv });
		await orders.modifyAll((m) => m.mockStepResult('price', 99));
		await orders.dispose();
		await placeOrders([sku('book')]);
		expect(await orders.get()).toEqual([]);
		const later = await introspectWorkflow(OrderWorkflow, { env: testEnv });
		await placeOrders([sku('pen')]);
		const [pen] = await later.get();
		expect(await pen!.waitForStepResult('price')).toBe(10);
		await later.dispose();
	});
});
