import { z } from 'zod';
import { EventTimeoutError } from '../../src/engine/support/errors';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';

/** How often each fixture step's own function ran; reset by each test. */
export const calls = new Map<string, number>();
export function ran(step: string): number {
	const n = (calls.get(step) ?? 0) + 1;
	calls.set(step, n);
	return n;
}

const orderEvents = { confirm: z.object({ by: z.string() }), cancel: z.undefined() };

/**
 * A step whose own function must never run under a mock, a flaky step, a
 * long sleep, a wait with a timeout and a second sleep: one of each thing the
 * kit can mock or skip.
 */
export class OrderWorkflow extends Workflow<{ sku: string }, { price: number; confirmedBy: string | null; shippedAt: number }> {
	static override readonly type = 'order';
	static override events = orderEvents;
	static override defaults = { retries: { limit: 2, delay: '1 minute', backoff: 'constant' as const } };

	async run(step: Step<typeof orderEvents>, { sku }: { sku: string }) {
		const price = await step.do('price', () => {
			ran('price');
			if (sku === 'broken') throw new Error('pricing service down');
			return 10;
		});
		await step.sleep('cool-off', '1 day');
		let confirmedBy: string | null = null;
		try {
			confirmedBy = (await step.waitForEvent('confirm', { timeout: '3 days' })).by;
		} catch (error) {
			if (!(error instanceof EventTimeoutError)) throw error;
		}
		const shippedAt = await step.do('ship', () => (ran('ship'), Date.UTC(2030, 0, 9)));
		await step.sleep('settle', '2 hours');
		return { price, confirmedBy, shippedAt };
	}
}

/** Waits for an event that has no timeout. */
export class NoTimeoutWorkflow extends Workflow<{}, string> {
	static override readonly type = 'no-timeout';
	static override events = { ping: z.object({}) };
	async run(step: Step<{ ping: z.ZodObject<{}> }>) {
		await step.waitForEvent('ping');
		return 'pinged';
	}
}

/** A step whose result is sensitive (`sensitive: 'output'`), used after a sleep: the later pass replays it from storage. */
export class SecretWorkflow extends Workflow<{}, string> {
	static override readonly type = 'secret-kit';
	async run(step: Step) {
		const secret = await step.do('get-token', () => (ran('get-token'), { token: 'super-secret' }), { sensitive: 'output' });
		await step.sleep('nap', '1 minute');
		return step.do('use-token', () => `used ${secret.token.length} characters`);
	}
}

/** A step whose first attempt never ends: only a crash (and the alarm) gets it going again. */
export class HangsOnceWorkflow extends Workflow<{}, string> {
	static override readonly type = 'hangs-once-kit';
	async run(step: Step) {
		await step.do('before', () => (ran('before'), 1));
		return step.do('held', ({ attempt }) => {
			ran('held');
			return attempt === 1 ? new Promise<string>(() => {}) : 'done';
		});
	}
}

/**
 * Durations of 0, as Cloudflare's own tests write them (`retries: { limit: 2, delay: 0 }`):
 * a retry, a sleep and an event timeout each due the moment they begin. The step fails
 * its first `failures` attempts.
 */
export class ZeroDurationsWorkflow extends Workflow<{ failures: number }, { call: string; ping: string }> {
	static override readonly type = 'zero-durations';
	static override events = { ping: z.object({}) };
	async run(step: Step<typeof ZeroDurationsWorkflow.events>, { failures }: { failures: number }) {
		const call = await step.do(
			'call',
			({ attempt }) => {
				ran('call');
				if (attempt <= failures) throw new Error(`attempt ${attempt} failed`);
				return `ok on attempt ${attempt}`;
			},
			{ retries: { limit: 2, delay: 0 } },
		);
		await step.sleep('nap', 0);
		let ping = 'pinged';
		try {
			await step.waitForEvent('ping', { timeout: 0 });
		} catch (error) {
			if (!(error instanceof EventTimeoutError)) throw error;
			ping = 'timed out';
		}
		return { call, ping };
	}
}

/** A fake payment provider: `charge` without a key books a new charge every call; with one, a retry returns the first. */
export class FakeBank {
	private readonly byKey = new Map<string, number>();
	charges = 0;
	charge(key?: string): number {
		if (key !== undefined && this.byKey.has(key)) return this.byKey.get(key)!;
		this.charges++;
		if (key !== undefined) this.byKey.set(key, this.charges);
		return this.charges;
	}
}
type BankEnv = { bank: FakeBank };

/** Charges without an idempotency key: a crash between the charge and its checkpoint charges twice. */
export class CarelessChargeWorkflow extends Workflow<{}, { chargeNumber: number }, BankEnv> {
	static override readonly type = 'careless-charge';
	async run(step: Step) {
		await step.do('reserve', () => 'reserved');
		const chargeNumber = await step.do('charge', () => this.env.bank.charge());
		await step.sleep('cool-off', '1 hour');
		return { chargeNumber };
	}
}

/** Charges without an idempotency key and returns the same output whatever the charge: only the bank sees the second charge. */
export class SilentChargeWorkflow extends Workflow<{}, string, BankEnv> {
	static override readonly type = 'silent-charge';
	async run(step: Step) {
		await step.do('charge', () => (this.env.bank.charge(), 'charged'));
		await step.sleep('cool-off', '1 hour');
		return 'done';
	}
}

/** The same charge with an idempotency key (the instance id plus the step name): a retry returns the first charge. */
export class CarefulChargeWorkflow extends Workflow<{}, { chargeNumber: number }, BankEnv> {
	static override readonly type = 'careful-charge';
	async run(step: Step) {
		await step.do('reserve', () => 'reserved');
		const chargeNumber = await step.do('charge', () => this.env.bank.charge(`${this.ctx.id}:charge`));
		await step.sleep('cool-off', '1 hour');
		return { chargeNumber };
	}
}

/** A child that prices a sku in one step (its function counted as `quote`). */
export class QuoteWorkflow extends Workflow<{ sku: string }, number> {
	static override readonly type = 'quote';
	async run(step: Step, { sku }: { sku: string }) {
		return step.do('quote', () => ran('quote') * 0 + sku.length * 10);
	}
}

/** A parent that invokes a QuoteWorkflow child and starts one it does not wait for. */
export class BasketWorkflow extends Workflow<{ skus: string[] }, number> {
	static override readonly type = 'basket';
	async run(step: Step, { skus }: { skus: string[] }) {
		await step.start('receipt', QuoteWorkflow, { payload: { sku: 'receipt' } });
		let total = 0;
		for (const sku of skus) total += await step.invoke(`quote-${sku}`, QuoteWorkflow, { payload: { sku } });
		return total;
	}
}
