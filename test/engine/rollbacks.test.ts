import { beforeEach, describe, expect, it } from 'vitest';
import { NonRetryableError } from '../../src/engine/support/errors';
import type { HistoryEvent } from '../../src/engine/history/history';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf, startInstance } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

/** What ran, in order: `do:<step>` for step functions, `undo:<step>:<result>` for rollbacks. */
let ran: string[] = [];
/** Rollbacks that throw this many more times before they succeed (Infinity: always). */
let undoFailures: Record<string, number> = {};
/** A rollback that never settles on its first attempt (a crash or a terminate comes meanwhile). */
let hangUndo: string | undefined;
let undoStarted: () => void = () => {};
let undoSignal: AbortSignal | undefined;

beforeEach(() => {
	ran = [];
	undoFailures = {};
	hangUndo = undefined;
	undoSignal = undefined;
});

function undo(name: string) {
	return async (result: unknown, { signal }: { attempt: number; signal: AbortSignal }) => {
		ran.push(`undo:${name}:${JSON.stringify(result)}`);
		if (hangUndo === name) {
			hangUndo = undefined;
			undoSignal = signal;
			undoStarted();
			await new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
		}
		if ((undoFailures[name] ?? 0) > 0) {
			undoFailures[name]!--;
			throw new Error(`refund of ${name} failed`);
		}
	};
}

/** Books a trip: flight, hotel (no rollback), car, then the payment fails for good. */
class Trip extends Workflow<{ fail: boolean }, string> {
	static override readonly type = 'trip';
	static override defaults = { retries: { limit: 2, delay: '1s', backoff: 'constant' as const } };
	async run(step: Step, { fail }: { fail: boolean }) {
		const flight = await step.do('flight', () => (ran.push('do:flight'), { booking: 'F1' }), { rollback: undo('flight') });
		await step.do('hotel', () => (ran.push('do:hotel'), 'H1'));
		await step.do('car', () => (ran.push('do:car'), 'C1'), { rollback: undo('car'), rollbackRetries: { limit: 1, delay: '1 minute' } });
		await step.do('pay', () => {
			ran.push('do:pay');
			if (fail) throw new NonRetryableError('card declined');
			return 'paid';
		});
		return flight.booking;
	}
}

/** Two steps in parallel: `slow` completes after `fast`, so its rollback runs first. */
class Parallel extends Workflow<{}, void> {
	static override readonly type = 'parallel';
	async run(step: Step) {
		await Promise.all([
			step.do('slow', () => new Promise((r) => setTimeout(() => r('s'), 20)), { rollback: undo('slow') }),
			step.do('fast', () => 'f', { rollback: undo('fast') }),
		]);
		await step.do('boom', () => {
			throw new NonRetryableError('boom');
		});
	}
}

/** Reserves, then waits for an approval that a terminate cuts short. */
class Approval extends Workflow<{}, string> {
	static override readonly type = 'approval';
	static override events = { approved: {} as { ok: boolean } };
	async run(step: Step<{ approved: { ok: boolean } }>) {
		await step.do('reserve', () => (ran.push('do:reserve'), 'R1'), { rollback: undo('reserve') });
		await step.waitForEvent('approved');
		await step.do('ship', () => 'shipped', { rollback: undo('ship') });
		return 'done';
	}
}

/** Fails with no rollback registered anywhere. */
class NoRollbacks extends Workflow<{}, void> {
	static override readonly type = 'no-rollbacks';
	async run(step: Step) {
		await step.do('a', () => 1);
		await step.do('b', () => {
			throw new NonRetryableError('nope');
		});
	}
}

/** A rollback retried with `delay: 0`: its retry is due the moment its attempt fails. */
class NoDelayUndo extends Workflow<{}, void> {
	static override readonly type = 'no-delay-undo';
	async run(step: Step) {
		await step.do('car', () => 'C1', { rollback: undo('car'), rollbackRetries: { limit: 2, delay: 0 } });
		await step.do('pay', () => {
			throw new NonRetryableError('card declined');
		});
	}
}

const registry = registryOf(Trip, Parallel, Approval, NoRollbacks, NoDelayUndo);

async function history(host: VirtualHost, engine: ReturnType<VirtualHost['engine']>): Promise<HistoryEvent[]> {
	await host.idle();
	return engine.history({ limit: 1000 }).events;
}

describe('rollbacks after run() fails for good', () => {
	it('runs the rollbacks of completed steps in reverse completion order, each with its step result, and ends errored', async () => {
		const { host, engine } = await startInstance(registry, 'trip', { fail: true });
		expect(ran).toEqual(['do:flight', 'do:hotel', 'do:car', 'do:pay', 'undo:car:"C1"', 'undo:flight:{"booking":"F1"}']);
		const status = engine.status();
		expect(status.status).toBe('errored');
		expect(status.error).toMatchObject({ name: 'StepFailedError' });
		expect(status.rollback).toEqual({ reason: 'failed', state: 'completed', completed: 2 });
		expect(status.steps.filter((s) => s.kind === 'rollback').map((s) => [s.name, s.status])).toEqual([
			['car', 'completed'],
			['flight', 'completed'],
		]);
		const kinds = (await history(host, engine)).map((e) => `${e.kind}${'step' in e ? `:${e.step}` : ''}`);
		expect(kinds.slice(kinds.indexOf('step.failed:pay'))).toEqual([
			'step.failed:pay',
			'workflow.rolling_back',
			'rollback.started:car',
			'rollback.completed:car',
			'rollback.started:flight',
			'rollback.completed:flight',
			'workflow.errored',
		]);
		const errored = (await history(host, engine)).find((e) => e.kind === 'workflow.errored');
		expect(errored).toMatchObject({ error: { name: 'StepFailedError' }, rollback: { state: 'completed', completed: 2 } });
	});

	it('a restart after the rollbacks starts clean: no rollback state, and a new failure rolls back its own steps', async () => {
		const { host, engine } = await startInstance(registry, 'trip', { fail: true });
		expect(engine.restart()).toBe('created');
		expect(engine.status().rollback).toBeUndefined();
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'errored', generation: 1, rollback: { state: 'completed', completed: 2 } });
		expect(ran.filter((r) => r.startsWith('undo'))).toHaveLength(4);
		expect(engine.history({ generation: 1, limit: 1000 }).events.filter((e) => e.kind === 'rollback.completed')).toHaveLength(2);
	});

	it('a restart from a step after the rollbacks keeps only the steps that were not undone, and never rolls one back twice', async () => {
		const { host, engine } = await startInstance(registry, 'trip', { fail: true });
		ran = [];
		// flight and car were undone by the rollbacks: the kept prefix ends before flight, so all runs again.
		expect(engine.restart({ from: 'pay' })).toBe('created');
		await host.idle();
		expect(ran).toEqual(['do:flight', 'do:hotel', 'do:car', 'do:pay', 'undo:car:"C1"', 'undo:flight:{"booking":"F1"}']);
		expect(engine.status()).toMatchObject({ status: 'errored', generation: 1, rollback: { state: 'completed', completed: 2 } });
		expect(engine.history({ generation: 1, limit: 1000 }).events.find((e) => e.kind === 'workflow.restarted')).toMatchObject({ from: 'pay', keptSteps: 0 });
	});

	it('a restart from a step keeps a step whose rollback failed for good (its effect is still in place) and does not run it twice', async () => {
		undoFailures.car = Infinity;
		const { host, engine } = await startInstance(registry, 'trip', { fail: true });
		await host.fireAlarm(engine); // the car refund's retry, which fails for good
		expect(engine.status().rollback).toMatchObject({ state: 'failed', failedStep: 'car' });
		undoFailures.car = 0;
		ran = [];
		expect(engine.restart({ from: 'pay' })).toBe('created');
		await host.idle();
		// flight (never undone), hotel and car (its refund never happened) are kept: only pay runs, and fails again.
		expect(ran).toEqual(['do:pay', 'undo:car:"C1"', 'undo:flight:{"booking":"F1"}']);
		expect(engine.history({ generation: 1, limit: 1000 }).events.find((e) => e.kind === 'workflow.restarted')).toMatchObject({ from: 'pay', keptSteps: 3 });
	});

	it('rolls kept steps back after the steps of the new generation, newest completion first, after a restart from a step', async () => {
		const { host, engine } = await startInstance(registry, 'trip', { fail: false });
		expect(engine.status().status).toBe('completed');
		ran = [];
		expect(engine.restart({ from: 'car' })).toBe('created');
		await host.idle();
		expect(engine.status().status).toBe('completed');
		// car and pay completed in generation 1; flight then hotel (kept) only in generation 0.
		const { rollbackOrder } = await import('../../src/engine/steps/rollback-runner');
		const order = rollbackOrder(host.store, 1, [
			{ name: 'flight', fn: async () => {}, retries: { limit: 0, delay: 0 }, result: null },
			{ name: 'hotel', fn: async () => {}, retries: { limit: 0, delay: 0 }, result: null },
			{ name: 'car', fn: async () => {}, retries: { limit: 0, delay: 0 }, result: null },
		] as never);
		expect(order.map((r: { name: string }) => r.name)).toEqual(['car', 'hotel', 'flight']);
	});

	it('refuses pause and restart while rolling back', async () => {
		undoFailures.car = 1;
		const { engine } = await startInstance(registry, 'trip', { fail: true });
		expect(engine.status().status).toBe('rolling_back');
		expect(() => engine.pause()).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
		expect(() => engine.restart()).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
	});

	it('a run that succeeds runs no rollback', async () => {
		const { engine } = await startInstance(registry, 'trip', { fail: false });
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'F1' });
		expect(ran.filter((r) => r.startsWith('undo'))).toEqual([]);
		expect(engine.status().rollback).toBeUndefined();
	});

	it('a failure with no rollback registered errors at once, without a rolling_back record', async () => {
		const { host, engine } = await startInstance(registry, 'no-rollbacks');
		expect(engine.status().status).toBe('errored');
		expect(engine.status().rollback).toBeUndefined();
		expect((await history(host, engine)).some((e) => e.kind === 'workflow.rolling_back')).toBe(false);
	});

	it('orders parallel steps by when they completed, not by where they appear in the code', async () => {
		const { engine } = await startInstance(registry, 'parallel');
		expect(ran).toEqual(['undo:slow:"s"', 'undo:fast:"f"']);
		expect(engine.status().rollback).toMatchObject({ state: 'completed', completed: 2 });
	});

	it('retries a failing rollback durably with its own retry policy, then goes on', async () => {
		undoFailures.car = 1;
		const { host, engine } = await startInstance(registry, 'trip', { fail: true });
		expect(engine.status().status).toBe('rolling_back');
		expect(engine.status().steps.find((s) => s.kind === 'rollback')).toMatchObject({ name: 'car', status: 'retrying', attempts: 1 });
		// The retry waits a minute: an eviction meanwhile loses nothing.
		const later = host.engine();
		expect(await host.fireAlarm(later)).toBe(true);
		expect(later.status().status).toBe('errored');
		expect(later.status().rollback).toEqual({ reason: 'failed', state: 'completed', completed: 2 });
		expect(ran.filter((r) => r.startsWith('undo'))).toEqual(['undo:car:"C1"', 'undo:car:"C1"', 'undo:flight:{"booking":"F1"}']);
		expect((await history(host, later)).filter((e) => e.kind === 'rollback.attempt_failed')).toHaveLength(1);
	});

	it('retries a rollback with a retry delay of 0 on the alarm due at once, not after the watchdog', async () => {
		undoFailures.car = 2;
		const { host, engine } = await startInstance(registry, 'no-delay-undo');
		const t0 = host.now();
		expect(engine.status().steps.find((s) => s.kind === 'rollback')).toMatchObject({ name: 'car', status: 'retrying', attempts: 1, wakeAt: t0 });
		expect(host.alarmAt).toBe(t0);
		expect(await host.fireAlarm(engine)).toBe(true);
		expect(host.alarmAt).toBe(t0);
		expect(await host.fireAlarm(engine)).toBe(true);
		expect(engine.status()).toMatchObject({ status: 'errored', rollback: { reason: 'failed', state: 'completed', completed: 1 } });
		expect(ran.filter((r) => r.startsWith('undo'))).toHaveLength(3);
		expect(host.now()).toBe(t0);
	});

	it('a rollback that fails for good stops the rollbacks and says which one failed', async () => {
		undoFailures.car = Infinity;
		const { host, engine } = await startInstance(registry, 'trip', { fail: true });
		await host.fireAlarm(engine);
		const status = engine.status();
		expect(status.status).toBe('errored');
		expect(status.error).toMatchObject({ name: 'StepFailedError' });
		expect(status.rollback).toEqual({
			reason: 'failed',
			state: 'failed',
			completed: 0,
			failedStep: 'car',
			error: { name: 'Error', message: 'refund of car failed' },
		});
		expect(ran.filter((r) => r.startsWith('undo:flight'))).toEqual([]);
		expect((await history(host, engine)).find((e) => e.kind === 'rollback.failed')).toMatchObject({ step: 'car', attempt: 2 });
	});

	it('after a crash mid-rollback, resumes without running a finished rollback again', async () => {
		hangUndo = 'flight';
		const hanging = new Promise<void>((r) => (undoStarted = r));
		let { host } = await startInstance(registry, 'trip', { fail: true }, false);
		await hanging;
		host.crash(); // the isolate dies while the flight's refund runs: closures and promises are gone
		host = host.nextIsolate();
		const after = host.engine();
		expect(after.status().status).toBe('rolling_back');
		host.advance(60_000);
		after.alarm();
		await host.idle();
		expect(after.status()).toMatchObject({ status: 'errored', rollback: { state: 'completed', completed: 2 } });
		expect(ran.filter((r) => r.startsWith('undo'))).toEqual(['undo:car:"C1"', 'undo:flight:{"booking":"F1"}', 'undo:flight:{"booking":"F1"}']);
		expect(after.status().steps.find((s) => s.kind === 'rollback' && s.name === 'flight')).toMatchObject({ attempts: 2, status: 'completed' });
		// The step functions themselves never ran again.
		expect(ran.filter((r) => r === 'do:flight')).toHaveLength(1);
	});
});

describe('terminate with rollback', () => {
	it('rolls back the completed steps, not the one never reached, and ends terminated', async () => {
		const { host, engine } = await startInstance(registry, 'approval');
		expect(engine.status().status).toBe('waiting');
		expect(engine.terminate({ rollback: true })).toBe('rolling_back');
		await host.idle();
		expect(ran).toEqual(['do:reserve', 'undo:reserve:"R1"']);
		expect(engine.status()).toMatchObject({ status: 'terminated', rollback: { reason: 'terminated', state: 'completed', completed: 1 } });
		const events = await history(host, engine);
		expect(events.find((e) => e.kind === 'workflow.rolling_back')).toMatchObject({ reason: 'terminated' });
		expect(events.at(-1)).toMatchObject({ kind: 'workflow.terminated', rollback: { state: 'completed', completed: 1 } });
	});

	it('cancels the step the terminate interrupted at once, not when the rollbacks end', async () => {
		hangUndo = 'reserve';
		const hanging = new Promise<void>((r) => (undoStarted = r));
		const { engine } = await startInstance(registry, 'approval');
		expect(engine.status().steps.find((s) => s.kind === 'wait')).toMatchObject({ status: 'waiting' });
		engine.terminate({ rollback: true });
		await hanging;
		const status = engine.status();
		expect(status.status).toBe('rolling_back');
		expect(status.steps.find((s) => s.kind === 'wait')).toMatchObject({ status: 'cancelled' });
		expect(status.stepCounts.waiting ?? 0).toBe(0);
	});

	it('a plain terminate while rolling back abandons the rest and aborts the rollback in flight', async () => {
		hangUndo = 'flight';
		const hanging = new Promise<void>((r) => (undoStarted = r));
		const { host, engine } = await startInstance(registry, 'trip', { fail: true }, false);
		await hanging;
		expect(engine.terminate()).toBe('terminated');
		await host.idle();
		expect(undoSignal?.aborted).toBe(true);
		expect(engine.status()).toMatchObject({ status: 'terminated', rollback: { reason: 'failed', state: 'abandoned', completed: 1 } });
		// The rollback it aborted says so: cancelled, not running for good.
		const rollbacks = engine.status().steps.filter((s) => s.kind === 'rollback');
		expect(rollbacks.map((s) => s.status)).toContain('cancelled');
		expect(engine.status().stepCounts.running ?? 0).toBe(0);
	});

	it('refuses a second terminate with rollback while one runs', async () => {
		hangUndo = 'reserve';
		const hanging = new Promise<void>((r) => (undoStarted = r));
		const { engine } = await startInstance(registry, 'approval');
		engine.terminate({ rollback: true });
		await hanging;
		expect(() => engine.terminate({ rollback: true })).toThrow(/already rolling back/);
		engine.terminate();
	});
});

/** A rollback whose retry policy is invalid: it can never run. */
class BadRollbackOptions extends Workflow<{}, void> {
	static override readonly type = 'bad-rollback-options';
	async run(step: Step) {
		await step.do('a', () => 1, { rollback: undo('a'), rollbackTimeout: 'forever' as never });
		await step.do('b', () => {
			throw new NonRetryableError('nope');
		});
	}
}

/** A rollback given no time to run: it could never finish an attempt that awaits anything. */
class ZeroRollbackTimeout extends Workflow<{}, void> {
	static override readonly type = 'zero-rollback-timeout';
	async run(step: Step) {
		await step.do('a', () => 1, { rollback: undo('a'), rollbackTimeout: 0 });
		await step.do('b', () => {
			throw new NonRetryableError('nope');
		});
	}
}

describe('rollback options', () => {
	it('a rollbackTimeout of 0 fails that rollback for good with INVALID_OPTIONS, as a step timeout of 0 is refused', async () => {
		const { engine } = await startInstance(registryOf(ZeroRollbackTimeout), 'zero-rollback-timeout');
		expect(engine.status()).toMatchObject({
			status: 'errored',
			rollback: { state: 'failed', failedStep: 'a', error: { code: 'INVALID_OPTIONS', message: expect.stringContaining('rollbackTimeout') } },
		});
		expect(ran).toEqual([]);
	});

	it('an invalid rollbackTimeout fails that rollback for good with INVALID_DURATION instead of retrying forever', async () => {
		const { engine } = await startInstance(registryOf(BadRollbackOptions), 'bad-rollback-options');
		expect(engine.status()).toMatchObject({
			status: 'errored',
			rollback: { state: 'failed', failedStep: 'a', error: { code: 'INVALID_DURATION' } },
		});
		expect(ran).toEqual([]);
	});
});
