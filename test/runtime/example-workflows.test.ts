import { afterEach, describe, expect, it } from 'vitest';
import { PaymentWorkflow } from '../../examples/demo/workflows/payment-workflow';
import { TestWorkflow } from '../../examples/demo/workflows/test-workflow';
import { advanceClock, fireAlarm, resetClock, settle, testEnv, uniqueId } from '../helpers';

afterEach(resetClock);

describe('test workflow', () => {
	it('greets, naps one second through the alarm, then completes with the greeting', async () => {
		const id = uniqueId('test');
		const created = await TestWorkflow.create(testEnv, { id, payload: { name: 'World' } });
		expect(created).toMatchObject({ id, type: 'test', created: true });
		await settle(id);
		const sleeping = await TestWorkflow.status(testEnv, id);
		expect(sleeping.status).toBe('sleeping');
		expect(sleeping.steps.map((s) => [s.name, s.status])).toEqual([
			['greet', 'completed'],
			['nap', 'sleeping'],
		]);
		advanceClock(1000);
		expect(await fireAlarm(id)).toBe(true);
		const done = await TestWorkflow.status(testEnv, id);
		expect(done.status).toBe('completed');
		expect(done.output).toEqual({ greeting: 'Hello, World!' });
	});
});

describe('payment workflow', () => {
	it('charges the card when the reviewer approves', async () => {
		const id = uniqueId('pay');
		await PaymentWorkflow.create(testEnv, { id, payload: { amount: 42, currency: 'EUR' } });
		await settle(id);
		expect((await PaymentWorkflow.status(testEnv, id)).status).toBe('waiting');
		await PaymentWorkflow.sendEvent(testEnv, { id, event: 'approval', payload: { approved: true, reviewer: 'alice' } });
		await settle(id);
		const status = await PaymentWorkflow.status(testEnv, id);
		expect(status.status).toBe('completed');
		expect(status.output).toEqual({ status: 'charged', amount: 42, currency: 'EUR', reviewer: 'alice' });
	});

	it('releases the funds when the reviewer declines', async () => {
		const id = uniqueId('pay');
		await PaymentWorkflow.create(testEnv, { id, payload: { amount: 5, currency: 'USD' } });
		await PaymentWorkflow.sendEvent(testEnv, { id, event: 'approval', payload: { approved: false, reviewer: 'bob' } });
		await settle(id);
		const status = await PaymentWorkflow.status(testEnv, id);
		expect(status.output).toEqual({ status: 'declined', reviewer: 'bob' });
		expect(status.steps.map((s) => s.name)).toEqual(['reserve-funds', 'approval', 'payment-reviewer-attribute', 'reviewer', 'release-funds']);
		expect(status.attributes).toMatchObject({ reviewer: 'bob' });
	});

	it('expires after seven days without an approval', async () => {
		const id = uniqueId('pay');
		await PaymentWorkflow.create(testEnv, { id, payload: { amount: 5, currency: 'USD' } });
		await settle(id);
		advanceClock(7 * 86_400_000);
		await fireAlarm(id);
		const status = await PaymentWorkflow.status(testEnv, id);
		expect(status.status).toBe('completed');
		expect(status.output).toEqual({ status: 'expired' });
	});
});
