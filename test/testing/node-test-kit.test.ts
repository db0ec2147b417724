import { beforeEach, describe, expect, it } from 'vitest';
import { defineRegistry } from '../../src/engine/definition/registry';
import { StatusNotReachedError, TestKitError, TestKitErrorCode, UnusedMockError, testWorkflow } from '../../src/testing';
import { calls, HangsOnceWorkflow, NoTimeoutWorkflow, OrderWorkflow, SecretWorkflow, ZeroDurationsWorkflow } from './fixtures';

const DAY = 86_400_000;

beforeEach(() => calls.clear());

/** An order that is confirmed and shipped, with sleeps and waits skipped or driven by the clock. */
async function confirmedOrder(sku = 'book') {
	const order = testWorkflow(OrderWorkflow).disableSleeps();
	await order.start({ sku });
	return order;
}

describe('mocks', () => {
	it('mockStepResult replaces the step function: it never runs and the mocked result is stored', async () => {
		const order = testWorkflow(OrderWorkflow).mockStepResult('price', 99).disableSleeps().forceEventTimeout('confirm');
		await order.start({ sku: 'book' });
		await order.waitForStatus('completed');
		expect(calls.get('price')).toBeUndefined();
		expect(await order.waitForStepResult('price')).toBe(99);
		expect((await order.output()).price).toBe(99);
	});

	it('mockStepError fails every attempt, retried per the step policy, then the step fails for good', async () => {
		const order = testWorkflow(OrderWorkflow).mockStepError('price', new TypeError('pricing 503')).disableRetryDelays();
		await order.start({ sku: 'book' });
		await order.waitForStatus('errored');
		expect(calls.get('price')).toBeUndefined();
		expect(await order.error()).toMatchObject({ code: 'STEP_FAILED', message: expect.stringContaining('pricing 503') });
		expect((await order.steps())[0]).toMatchObject({ name: 'price', status: 'failed', attempts: 3 });
	});

	it('mockStepError with times fails only the first attempts; the step function runs on the next one', async () => {
		const order = testWorkflow(OrderWorkflow).mockStepError('price', new Error('flaky'), { times: 2 }).disableRetryDelays();
		await order.start({ sku: 'book' });
		expect(await order.waitForStepResult('price')).toBe(10);
		expect(calls.get('price')).toBe(1);
		expect((await order.steps())[0]).toMatchObject({ status: 'completed', attempts: 3 });
	});

	it('forceStepTimeout fails attempts with STEP_TIMEOUT although the step has no timeout', async () => {
		const order = testWorkflow(OrderWorkflow).forceStepTimeout('price', { times: 1 });
		await order.start({ sku: 'book' });
		const [price] = await order.steps();
		expect(price).toMatchObject({ status: 'retrying', attempts: 1, error: { name: 'StepTimeoutError', code: 'STEP_TIMEOUT' } });
		expect(calls.get('price')).toBeUndefined();
	});

	it('refuses a mocked result that is not JSON, and a times that is not a whole number', () => {
		const order = testWorkflow(OrderWorkflow);
		expect(() => order.mockStepResult('price', new Date())).toThrow(expect.objectContaining({ code: TestKitErrorCode.InvalidMock }));
		expect(() => order.mockStepError('price', new Error('x'), { times: 0 })).toThrow(expect.objectContaining({ code: TestKitErrorCode.InvalidMock }));
	});

	it('reports a mock of a step the run never reached, naming the steps it did reach', async () => {
		const order = testWorkflow(OrderWorkflow).mockStepResult('prise', 1).disableSleeps().forceEventTimeout('confirm');
		await order.start({ sku: 'book' });
		await order.waitForStatus('completed');
		expect(order.unusedMocks()).toEqual(['prise']);
		expect(() => order.assertAllMocksUsed()).toThrow(UnusedMockError);
		expect(() => order.assertAllMocksUsed()).toThrow(/"prise" never ran.*"price", "ship"/);
	});
});

describe('sleeps, retry delays and event timeouts', () => {
	it('without modifiers, a sleep holds the instance until the clock passes it', async () => {
		const order = testWorkflow(OrderWorkflow);
		await order.start({ sku: 'book' });
		await expect(order.waitForStatus('waiting')).rejects.toThrow(StatusNotReachedError);
		await expect(order.waitForStatus('waiting')).rejects.toThrow(/sleeping.*sleep "cool-off" until/);
	});

	it('disableSleeps ends sleeps at once', async () => {
		const order = await confirmedOrder();
		await order.waitForStatus('waiting');
		await order.sendEvent('confirm', { by: 'ops' });
		expect(await order.waitForStatus('completed')).toMatchObject({ output: { price: 10, confirmedBy: 'ops' } });
	});

	it('disableSleeps with names skips only those sleeps', async () => {
		const order = testWorkflow(OrderWorkflow).disableSleeps(['cool-off']);
		await order.start({ sku: 'book' });
		await order.sendEvent('confirm', { by: 'ops' });
		await expect(order.waitForStatus('completed')).rejects.toThrow(/sleep "settle"/);
	});

	it('disableRetryDelays starts retries at once', async () => {
		const order = testWorkflow(OrderWorkflow).mockStepError('price', new Error('flaky'), { times: 1 });
		await order.start({ sku: 'book' });
		expect((await order.steps())[0]).toMatchObject({ status: 'retrying' });
		order.disableRetryDelays();
		expect(await order.waitForStepResult('price')).toBe(10);
	});

	it('forceEventTimeout times the wait out as soon as it waits', async () => {
		const order = testWorkflow(OrderWorkflow).disableSleeps().forceEventTimeout('confirm');
		await order.start({ sku: 'book' });
		expect(await order.waitForStatus('completed')).toMatchObject({ output: { confirmedBy: null } });
		expect((await order.steps()).find((s) => s.name === 'confirm')).toMatchObject({ kind: 'wait', status: 'timed_out' });
	});

	it('forceEventTimeout on a wait without a timeout is a typed error', async () => {
		const ping = testWorkflow(NoTimeoutWorkflow).forceEventTimeout('ping');
		await expect(ping.start({})).rejects.toThrow(expect.objectContaining({ code: TestKitErrorCode.InvalidMock }));
	});

	it("an event sent before the wait is reached is buffered and consumed by it", async () => {
		const order = testWorkflow(OrderWorkflow);
		await order.start({ sku: 'book' });
		await order.sendEvent('confirm', { by: 'early' });
		expect((await order.status()).bufferedEvents).toBe(1);
		await order.clock.advance('2 days');
		expect(await order.waitForStatus('completed')).toMatchObject({ output: { confirmedBy: 'early' } });
	});
});

describe('durations of 0', () => {
	it('a step that always throws under retries { limit: 2, delay: 0 } ends errored after 3 attempts, whatever the clock and crash() do', async () => {
		const zero = testWorkflow(ZeroDurationsWorkflow);
		await zero.start({ failures: 99 });
		await zero.clock.advance('1 day');
		await zero.crash();
		expect(await zero.waitForStatus('errored')).toMatchObject({ error: { code: 'STEP_FAILED', message: expect.stringContaining('attempt 3 failed') } });
		expect((await zero.steps())[0]).toMatchObject({ name: 'call', status: 'failed', attempts: 3 });
		expect(calls.get('call')).toBe(3);
	});

	it('a retry delay, a sleep and an event timeout of 0 are due at once: the run ends without the clock moving', async () => {
		const zero = testWorkflow(ZeroDurationsWorkflow);
		await zero.start({ failures: 1 });
		const t0 = zero.clock.now();
		expect(await zero.waitForStatus('completed')).toMatchObject({ output: { call: 'ok on attempt 2', ping: 'timed out' } });
		expect((await zero.steps()).map((s) => [s.name, s.status, s.attempts])).toEqual([
			['call', 'completed', 2],
			['nap', 'completed', 0],
			['ping', 'timed_out', 0],
		]);
		expect(zero.clock.now()).toBe(t0);
	});
});

describe('the virtual clock', () => {
	it('refuses an invalid or past time for advanceTo instead of firing every timer', async () => {
		const order = testWorkflow(OrderWorkflow);
		await order.start({ sku: 'book' });
		for (const at of [new Date('not a date'), Number.NaN, new Date(0)]) {
			await expect(order.clock.advanceTo(at)).rejects.toThrow(expect.objectContaining({ code: TestKitErrorCode.InvalidTime }));
		}
		expect((await order.status()).status).not.toBe('completed');
	});

	it("advance('7 days') fires the sleep, the retry wait and the event timeout in time order", async () => {
		const order = testWorkflow(OrderWorkflow).mockStepError('ship', new Error('courier down'), { times: 1 });
		await order.start({ sku: 'book' });
		const t0 = order.clock.now();
		await order.clock.advance('7 days');
		expect(await order.output()).toEqual({ price: 10, confirmedBy: null, shippedAt: Date.UTC(2030, 0, 9) });
		const timeline = (await order.history()).filter((e) => e.kind !== 'step.started').map((e) => [e.kind, 'step' in e ? e.step : '', e.at - t0]);
		expect(timeline).toEqual([
			['workflow.created', '', 0],
			['step.completed', 'price', 0],
			['sleep.started', 'cool-off', 0],
			['sleep.finished', 'cool-off', DAY],
			['wait.started', 'confirm', DAY],
			['wait.timed_out', 'confirm', 4 * DAY],
			['step.attempt_failed', 'ship', 4 * DAY],
			['step.completed', 'ship', 4 * DAY + 60_000],
			['sleep.started', 'settle', 4 * DAY + 60_000],
			['sleep.finished', 'settle', 4 * DAY + 60_000 + 2 * 3_600_000],
			['workflow.completed', '', 4 * DAY + 60_000 + 2 * 3_600_000],
		]);
		expect(order.clock.now() - t0).toBe(7 * DAY);
	});

	it('fires nothing before its time: one hour short of the sleep leaves it sleeping', async () => {
		const order = testWorkflow(OrderWorkflow);
		await order.start({ sku: 'book' });
		await order.clock.advance('23 hours');
		expect((await order.status()).status).toBe('sleeping');
		await order.clock.advance('1 hour');
		expect((await order.status()).status).toBe('waiting');
	});
});

describe('inspection and misuse', () => {
	// Cloudflare: context.test.ts "should redact a sensitive step's output from waitForStepResult".
	it("shows a sensitive step's result redacted in waitForStepResult, steps() and history(), while the run used the real one", async () => {
		const secret = testWorkflow(SecretWorkflow).disableSleeps();
		await secret.start({});
		expect(await secret.output()).toBe('used 12 characters');
		expect(await secret.waitForStepResult('get-token')).toBe('[REDACTED]');
		expect((await secret.steps())[0]).toMatchObject({ name: 'get-token', result: '[REDACTED]' });
		expect(JSON.stringify(await secret.history())).not.toContain('super-secret');
	});

	it('waitForStepResult says why a step has no result', async () => {
		const order = testWorkflow(OrderWorkflow);
		await order.start({ sku: 'book' });
		await expect(order.waitForStepResult('ship')).rejects.toThrow(/step "ship" was never reached; the instance settled "sleeping"/);
	});

	it('output and error are typed errors until the instance completed or errored', async () => {
		const order = testWorkflow(OrderWorkflow);
		await expect(order.status()).rejects.toThrow(expect.objectContaining({ code: TestKitErrorCode.NotStarted }));
		await order.start({ sku: 'book' });
		await expect(order.start({ sku: 'book' })).rejects.toThrow(expect.objectContaining({ code: TestKitErrorCode.AlreadyStarted }));
		await expect(order.output()).rejects.toThrow(TestKitError);
		await expect(order.error()).rejects.toThrow(TestKitError);
	});

	it('runs in the author registry, and refuses one that holds another class under the type', async () => {
		const registry = defineRegistry({ order: { workflow: OrderWorkflow }, 'no-timeout': { workflow: NoTimeoutWorkflow } });
		const order = testWorkflow(OrderWorkflow, { registry, id: 'order-7' }).disableSleeps().forceEventTimeout('confirm');
		await order.start({ sku: 'book' });
		expect(await order.waitForStatus('completed')).toMatchObject({ id: 'order-7', type: 'order' });
		expect(() => testWorkflow(HangsOnceWorkflow, { registry })).toThrow(expect.objectContaining({ code: TestKitErrorCode.WrongWorkflow }));
	});

	it('crash() of a sleeping instance keeps its clock: the sleep still ends when the clock reaches it', async () => {
		const order = testWorkflow(OrderWorkflow);
		await order.start({ sku: 'book' });
		expect((await order.status()).status).toBe('sleeping');
		const before = order.clock.now();
		await order.crash();
		expect(order.clock.now()).toBe(before);
		expect((await order.status()).status).toBe('sleeping');
		await order.clock.advance('1 day');
		expect((await order.status()).status).toBe('waiting');
	});

	it('crash() kills a step in flight and the alarm brings the instance back, rerunning only that step', async () => {
		const held = testWorkflow(HangsOnceWorkflow);
		const started = held.start({});
		await new Promise((resolve) => setTimeout(resolve, 20));
		expect(calls.get('held')).toBe(1);
		await held.crash();
		expect(await held.waitForStatus('completed')).toMatchObject({ output: 'done' });
		expect(calls.get('before')).toBe(1);
		expect(calls.get('held')).toBe(2);
		expect((await held.steps())[1]).toMatchObject({ name: 'held', attempts: 2 });
		void started;
	});
});
