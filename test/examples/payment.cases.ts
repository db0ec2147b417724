import { describe, expect, it } from 'vitest';
import { assertCrashSafe, assertReplays, exploreCrashes, replayHistory, type WorkflowTestKit } from '../../src/testing';
import { PaymentWorkflow } from '../../examples/demo/workflows/payment-workflow';
import recorded from './payment-approved.history.json';

/**
 * The payment workflow's tests as its author writes them, once for both
 * modes: `payment.node.test.ts` runs them on the pure engine, and
 * `payment.workerd.test.ts` in the real runner inside workerd.
 */
export function paymentCases(newPayment: () => WorkflowTestKit<typeof PaymentWorkflow>) {
	const order = { amount: 42, currency: 'EUR' };

	describe('the payment workflow', () => {
		it('charges the card when the reviewer approves', async () => {
			const payment = newPayment();
			await payment.start(order);
			await payment.waitForStatus('waiting');
			await payment.sendEvent('approval', { approved: true, reviewer: 'alice' });
			await payment.waitForStatus('completed');
			expect(await payment.output()).toEqual({ status: 'charged', amount: 42, currency: 'EUR', reviewer: 'alice' });
			expect(await payment.waitForStepResult('charge-card')).toEqual({ charged: 42, currency: 'EUR' });
		});

		it('releases the funds when the reviewer declines', async () => {
			const payment = newPayment();
			await payment.start(order);
			await payment.sendEvent('approval', { approved: false, reviewer: 'bob' });
			expect(await payment.output()).toEqual({ status: 'declined', reviewer: 'bob' });
			expect((await payment.steps()).map((s) => s.name)).toEqual(['reserve-funds', 'approval', 'payment-reviewer-attribute', 'reviewer', 'release-funds']);
		});

		it('sets the reviewer search attribute once the approval names one', async () => {
			const payment = newPayment();
			await payment.start(order);
			await payment.waitForStatus('waiting');
			expect((await payment.status()).attributes?.reviewer).toBeUndefined();
			await payment.sendEvent('approval', { approved: true, reviewer: 'carol' });
			await payment.waitForStatus('completed');
			expect((await payment.status()).attributes).toMatchObject({ reviewer: 'carol' });
		});

		it('expires after seven days without an answer', async () => {
			const payment = newPayment();
			await payment.start(order);
			await payment.clock.advance('6 days');
			expect((await payment.status()).status).toBe('waiting');
			await payment.clock.advance('1 day');
			expect(await payment.output()).toEqual({ status: 'expired' });
		});

		it('charges after the card network fails twice', async () => {
			const payment = newPayment().mockStepError('charge-card', new Error('card network down'), { times: 2 }).disableRetryDelays();
			await payment.start(order);
			await payment.sendEvent('approval', { approved: true, reviewer: 'alice' });
			expect(await payment.output()).toMatchObject({ status: 'charged' });
			const charge = (await payment.steps()).find((s) => s.name === 'charge-card');
			expect(charge).toMatchObject({ status: 'completed', attempts: 3 });
			const failures = (await payment.history()).filter((e) => e.kind === 'step.attempt_failed');
			expect(failures.map((e) => e.kind === 'step.attempt_failed' && e.error.message)).toEqual(['card network down', 'card network down']);
		});

		it('survives a crash at every durable write', async () => {
			const report = await exploreCrashes(PaymentWorkflow, {
				payload: order,
				events: [{ event: 'approval', payload: { approved: true, reviewer: 'alice' } }],
			});
			assertCrashSafe(report);
			expect(report.runs.length).toBeGreaterThan(20);
		});

		it('replays a recorded history against the current code', async () => {
			assertReplays(await replayHistory(PaymentWorkflow, recorded));
			const payment = newPayment();
			await payment.start(order);
			await payment.sendEvent('approval', { approved: false, reviewer: 'bob' });
			assertReplays(await replayHistory(PaymentWorkflow, await payment.history()));
		});
	});
}
