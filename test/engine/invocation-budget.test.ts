import { describe, expect, it } from 'vitest';
import { CONTINUE_WAKEUP, invocationBudgetOf } from '../../src/engine/instance/invocation-budget';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

const ran: string[] = [];

class TenSteps extends Workflow<{ slowMs?: number }, number> {
	static override readonly type = 'ten-steps';
	async run(step: Step, { slowMs = 0 }: { slowMs?: number }) {
		let total = 0;
		for (let i = 0; i < 10; i++) total += await step.do(`s${i}`, () => (ran.push(`s${i}`), (host.advance(slowMs), i)));
		return total;
	}
}

let host: VirtualHost;

async function start(budget: { steps: number; ms: number }, payload: { slowMs?: number } = {}) {
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
