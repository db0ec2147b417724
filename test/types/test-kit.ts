// Compile-time checks of the test kit's typing (checked by `npm test`'s type-check, never run).
import { exploreCrashes, introspectWorkflow, testWorkflow } from '../../src/testing';
import { PaymentWorkflow } from '../../examples/demo/workflows/payment-workflow';

export async function typedTestKit() {
	const payment = testWorkflow(PaymentWorkflow);
	await payment.start({ amount: 42, currency: 'EUR' });
	// @ts-expect-error: the payload is the workflow's schema input
	await payment.start({ amount: 'lots' });
	await payment.sendEvent('approval', { approved: true, reviewer: 'alice' });
	// @ts-expect-error: only declared events can be sent
	await payment.sendEvent('aproval', { approved: true, reviewer: 'alice' });
	// @ts-expect-error: the event payload is the declared one
	await payment.sendEvent('approval', { approved: 'yes' });
	const output = await payment.output();
	const status: 'charged' | 'declined' | 'expired' = output.status;
	await exploreCrashes(PaymentWorkflow, { payload: { amount: 1, currency: 'EUR' }, events: [{ event: 'approval', payload: { approved: false, reviewer: 'b' } }] });
	// @ts-expect-error: exploration events are typed too
	await exploreCrashes(PaymentWorkflow, { payload: { amount: 1, currency: 'EUR' }, events: [{ event: 'nudge', payload: {} }] });
	return status;
}

export async function typedIntrospection() {
	const payments = await introspectWorkflow(PaymentWorkflow);
	await payments.modifyAll((m) => m.mockStepResult('reserve-funds', { ok: true }).disableSleeps());
	// @ts-expect-error: modifyAll hands out modifiers only; an instance created later has no actions yet
	await payments.modifyAll((m) => m.start({ amount: 1, currency: 'EUR' }));
	const [payment] = await payments.get();
	if (!payment) return;
	await payment.sendEvent('approval', { approved: true, reviewer: 'alice' });
	// @ts-expect-error: the handles' events are the workflow's
	await payment.sendEvent('aproval', { approved: true, reviewer: 'alice' });
	const status: 'charged' | 'declined' | 'expired' = (await payment.output()).status;
	return status;
}
