import { describe, expect, it } from 'vitest';
import { NonRetryableError } from '../../src/engine/support/errors';
import { CONTINUE_WAKEUP, invocationBudgetOf } from '../../src/engine/steps/invocation-budget';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

const ran: string[] = [];

/** A macrotask: what a step awaiting a `fetch` waits for (it is still pending after its first microtask turns). */
const io = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

class TenSteps extends Workflow<{ slowMs?: number; cpuOnly?: boolean; parallel?: boolean }, number> {
	static override readonly type = 'ten-steps';
	async run(step: Step, { slowMs = 0, cpuOnly = false, parallel = false }: { slowMs?: number; cpuOnly?: boolean; parallel?: boolean }) {
		const attempt = async (i: number) => {
			ran.push(`s${i}`);
			host.advance(slowMs);
			if (!cpuOnly) await io();
			return i;
		};
		if (parallel) return (await Promise.all(Array.from({ length: 10 }, (_, i) => step.do(`s${i}`, () => attempt(i))))).reduce((a, b) => a + b, 0);
		let total = 0;
		for (let i = 0; i < 10; i++) total += await step.do(`s${i}`, () => attempt(i));
		return total;
	}
}

let host: VirtualHost;

async function start(budget: { steps: number; ms: number }, payload: { slowMs?: number; cpuOnly?: boolean; parallel?: boolean } = {}) {
	ran.length = 0;
	host = new VirtualHost({ registry: registryOf(TenSteps) });
	host.invocationBudget = budget;
	const engine = host.engine();
	await engine.create('wf-1', 'ten-steps', payload);
	await host.idle();
	return engine;
}

describe('a pass and its invocation budget', () => {
	it('stops after the budgeted step attempts, stays running with an alarm due now, and continues in the next invocation', async () => {
		const engine = await start({ steps: 3, ms: 1e9 });
		expect(ran).toEqual(['s0', 's1', 's2']);
		expect(engine.status().status).toBe('running');
		expect(host.store.earliestWakeup()).toBe(host.now());
		expect(host.alarmAt).toBe(host.now());
		let invocations = 1;
		while (engine.status().status === 'running' && (await host.fireAlarm(engine))) invocations++;
		expect(engine.status()).toMatchObject({ status: 'completed', output: 45 });
		expect(invocations).toBe(4); // 3 + 3 + 3 + 1 attempts
		expect(ran).toEqual(Array.from({ length: 10 }, (_, i) => `s${i}`)); // every step once
		expect(host.store.readStepMeta({ afterSeq: -1, limit: 100 }).every((s) => s.attempts === 1)).toBe(true);
		expect(host.store.earliestWakeup()).toBeUndefined();
	});

	it('does not count steps that await no I/O against the step budget: a run of CPU-light steps is bounded by time alone', async () => {
		const engine = await start({ steps: 3, ms: 1e9 }, { cpuOnly: true });
		expect(ran).toEqual(Array.from({ length: 10 }, (_, i) => `s${i}`));
		expect(engine.status()).toMatchObject({ status: 'completed', output: 45 });
	});

	it('refunds an attempt that settled at once only once, also when its result is no JSON and run() catches the failure', async () => {
		ran.length = 0;
		class CaughtThenIo extends Workflow<{}, number> {
			static override readonly type = 'caught-then-io';
			async run(step: Step) {
				for (let i = 0; i < 3; i++) {
					try {
						await step.do(`bad${i}`, async () => 10n as unknown as number, { retries: { limit: 0, delay: '1 second' } });
					} catch {
						// a step whose result is no JSON fails; this run goes on
					}
				}
				let total = 0;
				for (let i = 0; i < 10; i++) total += await step.do(`s${i}`, async () => (ran.push(`s${i}`), await io(), i));
				return total;
			}
		}
		host = new VirtualHost({ registry: registryOf(CaughtThenIo) });
		host.invocationBudget = { steps: 3, ms: 1e9 };
		const engine = host.engine();
		await engine.create('wf-2', 'caught-then-io', {});
		await host.idle();
		// 3 attempts counted and refunded, then 3 that await I/O: the budget is spent after s2, not after s5.
		expect(ran).toEqual(['s0', 's1', 's2']);
		expect(engine.status().status).toBe('running');
	});

	it('counts parallel attempts as they start, before any is known to await I/O', async () => {
		const engine = await start({ steps: 3, ms: 1e9 }, { parallel: true });
		expect(ran).toEqual(['s0', 's1', 's2']);
		let invocations = 1;
		while (engine.status().status === 'running' && (await host.fireAlarm(engine))) invocations++;
		expect(engine.status()).toMatchObject({ status: 'completed', output: 45 });
		expect(invocations).toBe(4);
	});

	it('continues in the next invocation without counting it as a pass cut short (no cut-pass record written)', async () => {
		const engine = await start({ steps: 3, ms: 1e9 });
		expect(host.store.readCutPasses()).toBeUndefined();
		const writes: string[] = [];
		const store = host.store as unknown as Record<string, (...args: unknown[]) => unknown>;
		for (const method of ['insertStep', 'writeStepWithRecord', 'writeCutPasses']) {
			const original = store[method]!.bind(host.store);
			store[method] = (...args: unknown[]) => (writes.push(method), original(...args));
		}
		expect(await host.fireAlarm(engine)).toBe(true);
		expect(ran).toEqual(['s0', 's1', 's2', 's3', 's4', 's5']);
		// Each step awaits I/O: its start is written before it (insertStep), its completion after (writeStepWithRecord); no cut-pass count.
		expect(writes).toEqual(['insertStep', 'writeStepWithRecord', 'insertStep', 'writeStepWithRecord', 'insertStep', 'writeStepWithRecord']);
		expect(host.store.readCutPasses()).toBeUndefined();
	});

	it('stops on the time budget too, and always starts at least one attempt per invocation', async () => {
		const engine = await start({ steps: 1000, ms: 250 }, { slowMs: 100 });
		expect(ran).toEqual(['s0', 's1', 's2']); // 0, 100, 200 ms: the fourth would start at 300 ms
		let invocations = 1;
		while (engine.status().status === 'running' && (await host.fireAlarm(engine))) invocations++;
		expect(engine.status()).toMatchObject({ status: 'completed', output: 45 });
		expect(invocations).toBe(4);
		// A budget no attempt fits still moves: one attempt per invocation.
		const slow = await start({ steps: 1000, ms: 1 }, { slowMs: 100 });
		let n = 1;
		while (slow.status().status === 'running' && (await host.fireAlarm(slow))) n++;
		expect(slow.status().status).toBe('completed');
		expect(n).toBe(10);
	});

	it('uses the wake-up key no step can have', () => {
		expect(CONTINUE_WAKEUP).not.toMatch(/^(do|sleep|wait|webhook|child|rollback):/);
	});

	it('reads the budget from the deployment and refuses a value that is no whole number', () => {
		expect(invocationBudgetOf({})).toEqual({ steps: 1000, ms: 15_000 });
		expect(invocationBudgetOf({ SHARDFLOW_INVOCATION_STEPS: '40', SHARDFLOW_INVOCATION_MS: '5000' })).toEqual({ steps: 40, ms: 5000 });
		expect(() => invocationBudgetOf({ SHARDFLOW_INVOCATION_STEPS: '0' })).toThrow(/SHARDFLOW_INVOCATION_STEPS must be a whole number from 1/);
		expect(() => invocationBudgetOf({ SHARDFLOW_INVOCATION_MS: 'soon' })).toThrow(/SHARDFLOW_INVOCATION_MS/);
	});
});

/** `n` steps that await I/O, each with a rollback that awaits I/O too (a refund that calls an outside API); then the run fails for good. */
const undone: string[] = [];
let hangUndoOf: string | undefined;
let undoHanging: () => void = () => {};
class Compensated extends Workflow<{ n: number; cpuOnlyUndo?: boolean }, never> {
	static override readonly type = 'compensated';
	async run(step: Step, { n, cpuOnlyUndo = false }: { n: number; cpuOnlyUndo?: boolean }): Promise<never> {
		for (let i = 0; i < n; i++) {
			await step.do(`s${i}`, async () => (ran.push(`s${i}`), await io(), i), {
				rollback: async () => {
					undone.push(`s${i}`);
					if (hangUndoOf === `s${i}`) {
						hangUndoOf = undefined;
						undoHanging();
						await new Promise<never>(() => {});
					}
					if (!cpuOnlyUndo) await io();
				},
			});
		}
		await step.do('fail', () => Promise.reject(new NonRetryableError('declined')));
		throw new Error('unreachable');
	}
}

describe('rollbacks and the invocation budget', () => {
	async function startCompensated(n: number, steps: number, cpuOnlyUndo = false) {
		ran.length = 0;
		undone.length = 0;
		host = new VirtualHost({ registry: registryOf(Compensated) });
		host.invocationBudget = { steps, ms: 1e9 };
		const engine = host.engine();
		await engine.create('wf-c', 'compensated', { n, cpuOnlyUndo });
		await host.idle();
		return engine;
	}

	/** Fires the alarm until the instance is finished; counts the rollback attempts each invocation started. */
	async function drive(engine: ReturnType<VirtualHost['engine']>, perInvocation: number[]) {
		for (let guard = 0; guard < 1000 && !['errored', 'terminated'].includes(engine.status().status); guard++) {
			const before = undone.length;
			if (!(await host.fireAlarm(engine))) break;
			perInvocation.push(undone.length - before);
		}
	}

	it('counts compensations against the same per-invocation budget as forward steps and continues them from the alarm, each once', async () => {
		const engine = await startCompensated(12, 5);
		const perInvocation: number[] = [undone.length];
		await drive(engine, perInvocation);
		expect(engine.status()).toMatchObject({ status: 'errored', rollback: { state: 'completed', completed: 12 } });
		// Every compensation ran exactly once, newest first.
		expect(undone).toEqual(Array.from({ length: 12 }, (_, i) => `s${11 - i}`));
		// No invocation started more than 5 attempts, forward steps and compensations together.
		expect(Math.max(...perInvocation)).toBeLessThanOrEqual(5);
		expect(host.store.readStepsOfKind('rollback', 'completed').every((row) => row.attempts === 1)).toBe(true);
		expect(host.store.earliestWakeup()).toBeUndefined();
	});

	it('shares the budget of the invocation whose forward pass failed: its rollbacks start only with what that pass left', async () => {
		// 3 steps take 3 of 5 attempts (the failing one awaits no I/O: refunded): two compensations start in that invocation, the third later.
		const engine = await startCompensated(3, 5);
		expect(ran).toEqual(['s0', 's1', 's2']);
		expect(undone).toEqual(['s2', 's1']);
		expect(engine.status().status).toBe('rolling_back');
		expect(host.alarmAt).toBe(host.now());
		await drive(engine, []);
		expect(undone).toEqual(['s2', 's1', 's0']);
		expect(engine.status()).toMatchObject({ status: 'errored', rollback: { state: 'completed', completed: 3 } });
		expect(host.store.earliestWakeup()).toBeUndefined();
	});

	it('does not count compensations that await no I/O against the step budget', async () => {
		// The forward steps leave one attempt of 4: all three compensations run in it, none awaiting I/O.
		const engine = await startCompensated(3, 4, true);
		expect(engine.status()).toMatchObject({ status: 'errored', rollback: { state: 'completed', completed: 3 } });
		expect(undone).toEqual(['s2', 's1', 's0']);
	});

	it('after a crash in a continued rollback, runs each remaining compensation once and skips none', async () => {
		hangUndoOf = 's5';
		const hanging = new Promise<boolean>((resolve) => (undoHanging = () => resolve(true)));
		let engine = await startCompensated(12, 5);
		// Alarms until s5's compensation is under way (a continuation, past the first invocation), then the isolate dies in it.
		for (let guard = 0; guard < 20; guard++) {
			const fired = host.fireAlarm(engine);
			if (await Promise.race([fired.then(() => false), hanging])) break;
		}
		expect(undone.at(-1)).toBe('s5');
		host.crash();
		host = host.nextIsolate();
		engine = host.engine();
		expect(engine.status().status).toBe('rolling_back');
		await drive(engine, []);
		expect(engine.status()).toMatchObject({ status: 'errored', rollback: { state: 'completed', completed: 12 } });
		// s5's attempt began before the crash, so it runs a second attempt (as any interrupted attempt does); every other one once, none skipped.
		const newestFirst = Array.from({ length: 12 }, (_, i) => `s${11 - i}`);
		expect(undone).toEqual(newestFirst.flatMap((s) => (s === 's5' ? ['s5', 's5'] : [s])));
		const rows = host.store.readStepsOfKind('rollback', 'completed');
		expect(rows.map((row) => [row.name, row.attempts]).sort()).toEqual(newestFirst.map((s) => [s, s === 's5' ? 2 : 1]).sort());
	});

	it('continues a terminate-with-rollback past the budget from the alarm as well', async () => {
		ran.length = 0;
		undone.length = 0;
		class Waits extends Workflow<{}, void> {
			static override readonly type = 'waits';
			static override events = { go: {} as { ok: boolean } };
			async run(step: Step<{ go: { ok: boolean } }>) {
				for (let i = 0; i < 7; i++) await step.do(`s${i}`, async () => (await io(), i), { rollback: async () => (undone.push(`s${i}`), await io()) });
				await step.waitForEvent('go');
			}
		}
		host = new VirtualHost({ registry: registryOf(Waits) });
		host.invocationBudget = { steps: 3, ms: 1e9 };
		const engine = host.engine();
		await engine.create('wf-t', 'waits', {});
		await host.idle();
		const perInvocation: number[] = [];
		await drive(engine, perInvocation);
		expect(engine.status().status).toBe('waiting');
		engine.terminate({ rollback: true });
		await host.idle();
		expect(undone).toEqual(['s6', 's5', 's4']);
		perInvocation.length = 0;
		await drive(engine, perInvocation);
		expect(engine.status()).toMatchObject({ status: 'terminated', rollback: { state: 'completed', completed: 7 } });
		expect(undone).toEqual(['s6', 's5', 's4', 's3', 's2', 's1', 's0']);
		expect(Math.max(...perInvocation)).toBeLessThanOrEqual(3);
	});
});
