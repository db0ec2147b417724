import { z } from 'zod';
import { defineRegistry, EventTimeoutError, Workflow, type Step } from '../../src/authoring';

/**
 * The workflows of the deploy-rollback check (scripts/rollback-check.mjs): each is mid-run when the
 * deploy changes, and each would show it if a build's storage error reached `run()`: an errored
 * status, a compensation run, a fallback taken, an event accepted but never consumed. Outputs name
 * the attempt numbers and branches taken, so the driver checks them.
 */

const wake = z.object({ wakeAt: z.number() });

/** A step, a sleep until `wakeAt` (the next deploy of the check), two steps. */
export class RcSleeper extends Workflow<{ wakeAt: number }, string[]> {
	static override readonly type = 'rc-sleeper';
	static override payload = wake;
	async run(step: Step, { wakeAt }: { wakeAt: number }) {
		const a = await step.do('a', async () => 'a');
		await step.sleepUntil('nap', wakeAt);
		const b = await step.do('b', async () => 'b');
		const c = await step.do('c', async () => 'c');
		return [a, b, c];
	}
}

/** A step, a wait for `go` (sent during a deploy), a step with the event's value. */
export class RcWaiter extends Workflow<{}, string> {
	static override readonly type = 'rc-waiter';
	static override events = { go: z.object({ value: z.string() }) };
	async run(step: Step<typeof RcWaiter.events>) {
		await step.do('a', async () => 'a');
		let go;
		try {
			go = await step.waitForEvent('go', { timeout: '1 hour' });
		} catch (error) {
			if (error instanceof EventTimeoutError) return 'timed out';
			throw error;
		}
		return step.do('b', async () => `got ${go.value}`);
	}
}

/** A step whose first two attempts fail, retried 4 s apart: its retries fall into the next deploys. */
export class RcRetrier extends Workflow<{}, string> {
	static override readonly type = 'rc-retrier';
	async run(step: Step) {
		return step.do(
			'flaky',
			async ({ attempt }) => {
				if (attempt <= 2) throw new Error(`upstream 503 (attempt ${attempt})`);
				return `ok at attempt ${attempt}`;
			},
			{ retries: { limit: 6, delay: '4 seconds', backoff: 'constant' } },
		);
	}
}

/** A saga: a step with a compensation, a sleep until `wakeAt`, then more steps. Nothing fails, so no compensation may run. */
export class RcSaga extends Workflow<{ wakeAt: number }, string> {
	static override readonly type = 'rc-saga';
	static override payload = wake;
	async run(step: Step, { wakeAt }: { wakeAt: number }) {
		await step.do('charge', async () => 'charged', { rollback: async () => 'refunded' });
		await step.sleepUntil('nap', wakeAt);
		await step.do('ship', async () => 'shipped');
		return 'booked';
	}
}

/** A run() that catches a step's error and takes a fallback: the primary never fails, so the fallback must never run. */
export class RcCatcher extends Workflow<{ wakeAt: number }, string> {
	static override readonly type = 'rc-catcher';
	static override payload = wake;
	async run(step: Step, { wakeAt }: { wakeAt: number }) {
		await step.sleepUntil('nap', wakeAt);
		try {
			return await step.do('primary', async () => 'primary');
		} catch {
			return step.do('fallback', async () => 'fallback');
		}
	}
}

/** One step: a child that finishes inside its parent's pass (run inline, then published to its own object). */
export class RcLeaf extends Workflow<{ n: number }, number> {
	static override readonly type = 'rc-leaf';
	async run(step: Step, { n }: { n: number }) {
		return step.do('double', async () => n * 2);
	}
}

/** A step, a sleep until `wakeAt`, a step: run inline in its parent until its sleep, then handed over to its own object. */
export class RcNapChild extends Workflow<{ wakeAt: number }, string> {
	static override readonly type = 'rc-nap-child';
	static override payload = wake;
	async run(step: Step, { wakeAt }: { wakeAt: number }) {
		const a = await step.do('a', async () => 'a');
		await step.sleepUntil('nap', wakeAt);
		return a + (await step.do('b', async () => 'b'));
	}
}

/** Children across the deploys: one finished inline, one that sleeps in its own object while the parent waits, one after. */
export class RcParent extends Workflow<{ wakeAt: number }, (number | string)[]> {
	static override readonly type = 'rc-parent';
	static override payload = wake;
	async run(step: Step, { wakeAt }: { wakeAt: number }) {
		const first = await step.invoke('first', RcLeaf, { payload: { n: 1 } });
		const napped = await step.invoke('napper', RcNapChild, { payload: { wakeAt } });
		const last = await step.invoke('last', RcLeaf, { payload: { n: 3 } });
		return [first, napped, last];
	}
}

export const registry = defineRegistry({
	'rc-leaf': { workflow: RcLeaf },
	'rc-nap-child': { workflow: RcNapChild },
	'rc-parent': { workflow: RcParent },
	'rc-sleeper': { workflow: RcSleeper },
	'rc-waiter': { workflow: RcWaiter },
	'rc-retrier': { workflow: RcRetrier },
	'rc-saga': { workflow: RcSaga },
	'rc-catcher': { workflow: RcCatcher },
});
