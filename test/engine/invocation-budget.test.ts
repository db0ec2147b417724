import { describe, expect, it } from 'vitest';
import { CONTINUE_WAKEUP, invocationBudgetOf } from '../../src/engine/instance/invocation-budget';
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
