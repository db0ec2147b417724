import { describe, expect, it } from 'vitest';
import { Workflow, type Step } from '../../src/authoring';
import { exploreCrashes } from '../../src/testing';
import { z } from 'zod';

/**
 * A pass woken by an alarm or an event holds its `running` in memory on a host that says so (EngineHost.holdsWokenRunning:
 * the compact layout's format 2), as a created instance's first pass does: storage keeps `sleeping` or `waiting` until
 * the pass's next status change. Crash exploration kills the instance before and after every durable write and
 * restarts it from the alarm: every run must end as the run without a crash.
 */
class NapThenWork extends Workflow<{}, number> {
	static override readonly type = 'nap-then-work';
	async run(step: Step) {
		const a = await step.do('before', () => 1);
		await step.sleep('nap', '1 hour');
		const b = await step.do('after', () => 2);
		return a + b + (await step.do('last', () => 3));
	}
}

const events = { go: z.object({ n: z.number() }) };
class WaitThenWork extends Workflow<{}, number> {
	static override readonly type = 'wait-then-work';
	static override events = events;
	async run(step: Step<typeof events>) {
		await step.do('before', () => 1);
		const { n } = await step.waitForEvent('go');
		return n + (await step.do('after', () => 2));
	}
}

let failures = 0;
class RetryThenWork extends Workflow<{}, string> {
	static override readonly type = 'retry-then-work';
	async run(step: Step) {
		const called = await step.do(
			'call',
			() => {
				// Fails the first two attempts of each exploration run (a run starts from scratch: `before` resets the count).
				if (++failures <= 2) throw new Error('upstream 503');
				return 'ok';
			},
			{ retries: { limit: 3, delay: '1 second', backoff: 'constant' } },
		);
		return `${called} ${await step.do('after', () => 'done')}`;
	}
}
class RetryReset extends RetryThenWork {
	static override readonly type = 'retry-then-work';
	override async run(step: Step) {
		await step.do('before', () => (failures = 0));
		return super.run(step);
	}
}

/** How many durable writes of the run without a crash store the status `running`. */
const runningWrites = (writes: readonly string[]) => writes.filter((w) => w.includes('status running')).length;

describe('a woken pass holds its running in memory (compact format 2)', () => {
	it('a sleep: the woken pass writes no running, and a crash before or after any write ends the run as without one', async () => {
		const held = await exploreCrashes(NapThenWork, { payload: {}, holdsWokenRunning: true });
		expect(held.baseline.outcome).toEqual({ status: 'completed', output: 6 });
		expect(runningWrites(held.baseline.writes)).toBe(0);
		expect(held.divergent).toEqual([]);
		expect(held.runs.every((run) => run.outcome.status === 'completed')).toBe(true);
		// Without it (format 1, the table layout) the woken pass writes its running.
		const written = await exploreCrashes(NapThenWork, { payload: {} });
		expect(runningWrites(written.baseline.writes)).toBe(1);
	});

	it('an event wait: the pass the event wakes writes no running, and no crash loses the consumed event', async () => {
		const held = await exploreCrashes(WaitThenWork, { payload: {}, events: [{ event: 'go', payload: { n: 40 } }], holdsWokenRunning: true });
		expect(held.baseline.outcome).toEqual({ status: 'completed', output: 42 });
		expect(runningWrites(held.baseline.writes)).toBe(0);
		expect(held.divergent).toEqual([]);
		expect(held.runs.every((run) => run.outcome.status === 'completed')).toBe(true);
		expect(runningWrites((await exploreCrashes(WaitThenWork, { payload: {}, events: [{ event: 'go', payload: { n: 40 } }] })).baseline.writes)).toBe(1);
	});

	it('an event wait that keeps its idle alarm (storage format 5): a crash before or after any write still ends the run as without one', async () => {
		const kept = await exploreCrashes(WaitThenWork, { payload: {}, events: [{ event: 'go', payload: { n: 40 } }], holdsWokenRunning: true, leavesIdleAlarm: true });
		expect(kept.baseline.outcome).toEqual({ status: 'completed', output: 42 });
		expect(kept.divergent).toEqual([]);
		expect(kept.runs.every((run) => run.outcome.status === 'completed')).toBe(true);
	});

	it('a step retried twice: neither woken pass writes running, and every crash point completes', async () => {
		const held = await exploreCrashes(RetryReset, { payload: {}, holdsWokenRunning: true });
		expect(held.baseline.outcome).toEqual({ status: 'completed', output: 'ok done' });
		expect(runningWrites(held.baseline.writes)).toBe(0);
		expect(held.divergent).toEqual([]);
		expect(held.runs.every((run) => run.outcome.status === 'completed')).toBe(true);
		expect(runningWrites((await exploreCrashes(RetryReset, { payload: {} })).baseline.writes)).toBe(2);
	});
});
