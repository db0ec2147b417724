import { describe, expect, it } from 'vitest';
import { NonRetryableError, WebhookExpiredError } from '../../src/engine/support/errors';
import type { Step } from '../../src/engine/definition/types';
import { assertCrashSafe, exploreCrashes, TestKitErrorCode, testWorkflow } from '../../src/testing';
import { Workflow } from '../../src/workflow';

const undone: string[] = [];

/** Reserves, then asks for an approval by webhook; a rejection fails the run, which releases the reservation. */
class ApprovedReservation extends Workflow<{}, string> {
	static override readonly type = 'approved-reservation';
	async run(step: Step) {
		await step.do('reserve', () => 'R1', { rollback: (id) => void undone.push(`release ${id}`) });
		const hook = await step.webhook<{ approved: boolean }>('approval', { timeout: '1 day' });
		await step.do('mail', () => hook.url);
		let approved: boolean;
		try {
			({ approved } = await hook.wait());
		} catch (error) {
			if (error instanceof WebhookExpiredError) return 'expired';
			throw error;
		}
		await step.do('confirm', () => {
			if (!approved) throw new NonRetryableError('rejected');
			return 'ok';
		});
		return 'confirmed';
	}
}

describe('the test kit drives webhooks and rollbacks', () => {
	it('callWebhook POSTs the pending webhook once; a second call is refused with WEBHOOK_USED', async () => {
		const kit = testWorkflow(ApprovedReservation);
		await kit.start({});
		expect((await kit.status()).webhooks?.[0]?.url).toMatch(/^\/webhooks\//);
		await kit.callWebhook('approval', { approved: true });
		expect(await kit.output()).toBe('confirmed');
		await expect(kit.callWebhook('approval', { approved: false })).rejects.toMatchObject({ code: 'WEBHOOK_USED' });
	});

	it('a rejected approval fails the run and rolls back the reservation', async () => {
		undone.length = 0;
		const kit = testWorkflow(ApprovedReservation);
		await kit.start({});
		await kit.callWebhook('approval', { approved: false });
		expect(await kit.status()).toMatchObject({ status: 'errored', rollback: { reason: 'failed', state: 'completed', completed: 1 } });
		expect(undone).toEqual(['release R1']);
	});

	it('terminate({rollback: true}) rolls back what completed', async () => {
		undone.length = 0;
		const kit = testWorkflow(ApprovedReservation);
		await kit.start({});
		expect(await kit.terminate({ rollback: true })).toBe('rolling_back');
		expect(await kit.waitForStatus('terminated')).toMatchObject({ rollback: { reason: 'terminated', state: 'completed' } });
		expect(undone).toEqual(['release R1']);
	});

	it('callWebhook after the timeout is refused with WEBHOOK_EXPIRED, and a step with no webhook with TESTKIT_NO_PENDING_WEBHOOK', async () => {
		const kit = testWorkflow(ApprovedReservation);
		await kit.start({});
		await kit.clock.advance('1 day');
		expect(await kit.output()).toBe('expired');
		await expect(kit.callWebhook('approval', {})).rejects.toMatchObject({ code: 'WEBHOOK_EXPIRED' });
		await expect(kit.callWebhook('nope', {})).rejects.toMatchObject({ code: TestKitErrorCode.NoPendingWebhook });
	});
});

/** Books, then fails for good: its two rollbacks must survive a crash at every durable write. */
class FailingBooking extends Workflow<{}, string> {
	static override readonly type = 'failing-booking';
	async run(step: Step) {
		await step.do('flight', () => 'F1', { rollback: (f) => void undone.push(`cancel ${f}`) });
		await step.do('hotel', () => 'H1', { rollback: (h) => void undone.push(`cancel ${h}`) });
		await step.do('pay', () => {
			throw new NonRetryableError('card declined');
		});
		return 'booked';
	}
}

describe('rollbacks under crash exploration', () => {
	it('reach the same outcome (errored, both rolled back) whatever durable write a crash lands on', async () => {
		const report = await exploreCrashes(FailingBooking, { payload: {} });
		assertCrashSafe(report);
		expect(report.baseline.outcome).toMatchObject({ status: 'errored', rollback: 'completed' });
		expect(report.runs.length).toBeGreaterThan(10);
	});
});
