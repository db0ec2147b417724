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
			void (awaitingPass ? life.engine.alarmAwaitingPass() : life.engine.alarm());
			await turn();
			await turn();
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
