import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/engine/definition/types';
import { NonRetryableError } from '../../src/engine/support/errors';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';
import { cutPassBackoffMs } from '../../src/engine/support/timing';
import type { EngineHost } from '../../src/engine/instance/engine-host';

/** Attempt 1 fails at once (a retry, its wake-up); every later attempt awaits what never comes while `hanging` (I/O cut by a crash). */
let hanging = true;
let attempts = 0;
class SlowRetrier extends Workflow<{}, string> {
	static override readonly type = 'slow-retrier';
	async run(step: Step) {
		return step.do(
			'flaky',
			() => {
				attempts++;
				if (attempts === 1) throw new Error('boom 1');
				return hanging ? new Promise<string>(() => {}) : 'done';
			},
			{ retries: { limit: 6, delay: 500, backoff: 'constant' } },
		);
	}
}

const turn = () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * One instance across isolates: `die()` kills the isolate (the next one over the same durable state), `fire(at)` runs
 * the alarm as the runtime fires it on its first try (the handler's work not awaited when it hangs). `awaitingPass`: the
 * alarm handler awaits its pass, the watchdog's writes held meanwhile (InstanceEngine.alarmAwaitingPass).
 */
function isolates(first: VirtualHost, awaitingPass: boolean) {
	const lend = (h: VirtualHost) => (awaitingPass ? (((h as VirtualHost & Pick<EngineHost, 'holdAlarmRetries'>).holdAlarmRetries = () => () => {}), h) : h);
	const life = { host: lend(first), engine: first.engine() };
	return {
		life,
		die() {
			life.host.crash();
			life.host = lend(life.host.nextIsolate());
			life.engine = life.host.engine();
		},
		async fire(at: number) {
			life.host.clock.moveTo(Math.max(life.host.now(), at));
			life.host.alarmAt = undefined;
			const handler = awaitingPass ? life.engine.alarmAwaitingPass() : life.engine.alarm();
			await turn();
			await turn();
			// A handler that starts no pass ends here, and re-arms as it ends.
			await Promise.race([handler, turn()]);
		},
	};
}

const layouts = [
	{ layout: 'a woken pass writes `running`', options: {} },
	// Storage format 5: storage keeps `sleeping` while the woken attempt runs, and the retry's wake-up stays due until the pass ends.
	{ layout: 'a woken pass holds `running` in memory (storage format 5)', options: { holdsWokenRunning: true, leavesIdleAlarm: true } },
] as const;

describe.each(layouts)('a retried step whose attempts await I/O, its isolate killed twice in a row, on a runtime that runs an alarm again when its handler dies: $layout', ({ options }) => {
	it('leaves its alarm at the cut-pass backoff, not at the retry wake-up already past, and runs the next attempt when the backoff ends', async () => {
		[hanging, attempts] = [true, 0];
		const { life, die, fire } = isolates(new VirtualHost({ registry: registryOf(SlowRetrier), ...options }), true);
		await life.engine.create('wf-1', 'slow-retrier', {});
		await life.host.idle();
		expect(attempts).toBe(1);
		const retryAt = life.host.alarmAt!;
		await fire(retryAt); // the retry's wake-up: attempt 2 starts and awaits
		expect(attempts).toBe(2);
		die(); // killed during attempt 2: the runtime runs the alarm again
		await fire(life.host.now());
		expect(attempts).toBe(3); // one cut: straight back to work
		const cutAt = life.host.now();
		die(); // killed again during attempt 3, within the backoff of one cut
		await fire(life.host.now() + 1_000);
		// Two cuts in a row: the next pass waits for the backoff, and the alarm is set for its end.
		const backoffEnds = cutAt + cutPassBackoffMs(1);
		expect(attempts).toBe(3);
		expect(life.host.alarmAt).toBe(backoffEnds);
		hanging = false;
		await fire(life.host.alarmAt!);
		await life.host.idle();
		expect(life.engine.status()).toMatchObject({ status: 'completed', output: 'done' });
		expect(attempts).toBe(4);
	});
});

/** A charge whose refund awaits I/O that never comes while `refundHanging` (cut by a crash); the shipping then fails for good. */
let refundHanging = true;
let refunds = 0;
class HangingRefund extends Workflow<{}, string> {
	static override readonly type = 'hanging-refund';
	async run(step: Step) {
		const refund = async () => {
			refunds++;
			if (refundHanging) await new Promise<never>(() => {});
		};
		await step.do('charge', () => 'c1', { rollback: refund, rollbackRetries: { limit: 6, delay: 500, backoff: 'constant' } });
		await step.do('ship', () => {
			throw new NonRetryableError('out of stock');
		});
		return 'shipped';
	}
}

describe('a rollback whose attempts await I/O, its isolate killed twice in a row', () => {
	it('backs off after the second cut instead of starting the refund again at once, and finishes the rollback when the backoff ends', async () => {
		[refundHanging, refunds] = [true, 0];
		const { life, die, fire } = isolates(new VirtualHost({ registry: registryOf(HangingRefund) }), false);
		await life.engine.create('wf-r', 'hanging-refund', {});
		await turn();
		await turn();
		expect(refunds).toBe(1); // the shipping failed; the refund awaits
		expect(life.engine.status()).toMatchObject({ status: 'rolling_back' });
		die(); // killed during refund attempt 1: its watchdog alarm runs the rollback again
		await fire(life.host.now());
		expect(refunds).toBe(2); // one cut: straight back to work
		const cutAt = life.host.now();
		die(); // killed again during attempt 2
		await fire(life.host.now() + 1_000);
		expect(refunds).toBe(2); // two cuts in a row: the next attempt waits for the backoff
		expect(life.host.alarmAt).toBe(cutAt + cutPassBackoffMs(1));
		refundHanging = false;
		await fire(life.host.alarmAt!);
		await life.host.idle();
		expect(refunds).toBe(3);
		expect(life.engine.status()).toMatchObject({ status: 'errored', rollback: { state: 'completed' } });
	});
});

/** A nap (or a wait for `go`), then a call that awaits I/O that never comes while `callHanging` (cut by a crash). */
let callHanging = true;
let calls = 0;
class NapThenCall extends Workflow<{ wait?: boolean }, string> {
	static override readonly type = 'nap-then-call';
	static override events = { go: {} as { ok: boolean } };
	async run(step: Step<{ go: { ok: boolean } }>, { wait }: { wait?: boolean }) {
		// 20 s: past the index delivery's deadline, so the `sleeping` entry is delivered and nothing of it stays due.
		if (wait) await step.waitForEvent('go');
		else await step.sleep('nap', 20_000);
		return step.do('call', () => (calls++, callHanging ? new Promise<string>(() => {}) : 'answered'), { retries: { limit: 6, delay: 500, backoff: 'constant' } });
	}
}

describe.each([
	{ layout: 'storage format 5', options: { holdsWokenRunning: true, leavesIdleAlarm: true } },
	{ layout: 'storage format 4 (an idle wait leaves no alarm)', options: { holdsWokenRunning: true } },
] as const)('the step after a sleep or an event, killed again and again in its first moments, its woken pass\'s `running` held in memory: $layout', ({ options }) => {
	it.each([{ after: 'a sleep', wait: false }, { after: 'an event', wait: true }])('keeps an alarm at each cut-pass backoff\'s end although nothing else is due ($after), and runs the call when the last one ends', async ({ wait }) => {
		[callHanging, calls] = [true, 0];
		const { life, die, fire } = isolates(new VirtualHost({ registry: registryOf(NapThenCall), ...options }), true);
		await life.engine.create('wf-n', 'nap-then-call', { wait });
		await life.host.idle();
		if (wait) {
			// Waiting past the delivery deadline (its entry delivered), then the event: the call starts and awaits.
			await fire(life.host.now() + 20_000);
			await life.engine.sendEvent('go', { ok: true });
			await turn();
			await turn();
		} else await fire(life.host.alarmAt!); // the nap ends: the call starts and awaits
		expect(calls).toBe(1);
		die(); // killed in the call's first moments: storage still holds `sleeping` or `waiting`
		await fire(life.host.now());
		expect(calls).toBe(2); // one cut: straight back to work
		let backoffEnds = life.host.now() + cutPassBackoffMs(1);
		for (const [cut, nextCall] of [[2, 3], [3, 4]] as const) {
			die();
			await fire(life.host.now() + 1_000);
			expect(calls).toBe(nextCall - 1);
			// Nothing else is due (the nap's wake-up or the event was taken, the entry delivered): the backoff's end keeps the
			// alarm (a pass the event started has stored `running`, whose watchdog may come a little later).
			expect(life.host.alarmAt).toBeGreaterThanOrEqual(backoffEnds);
			expect(life.host.alarmAt).toBeLessThanOrEqual(backoffEnds + 1_000);
			await fire(life.host.alarmAt!); // the backoff ends: the call starts again
			expect(calls).toBe(nextCall);
			backoffEnds = life.host.now() + cutPassBackoffMs(cut);
		}
		callHanging = false;
		die();
		await fire(life.host.now() + 1_000);
		expect(life.host.alarmAt).toBeGreaterThanOrEqual(backoffEnds);
		await fire(life.host.alarmAt!);
		await life.host.idle();
		expect(life.engine.status()).toMatchObject({ status: 'completed', output: 'answered' });
		expect(calls).toBe(5);
	});
});
