import { describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { settle, testEnv, uniqueId } from '../helpers';
import { invocations } from '../harness/invocations';
import { alarmInvocations, executions } from '../worker/probes';

describe('a pass continues in a new invocation once its budget is spent (real runner, real alarms)', () => {
	it('runs 10 steps at 4 attempts per invocation to completion, each step once, staying running in between', async () => {
		const id = uniqueId('budgeted');
		await instances.create(testEnv, { type: 'budgeted', id, payload: {} });
		const seen = new Set<string>();
		for (let i = 0; i < 200; i++) {
			await settle(id);
			const { status } = await instances.status(testEnv, { id });
			seen.add(status);
			if (status === 'completed') break;
			await new Promise((r) => setTimeout(r, 10));
		}
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 45 });
		expect([...seen].filter((s) => s !== 'running' && s !== 'completed')).toEqual([]);
		for (let i = 0; i < 10; i++) expect(executions.get(`${id}:b${i}`), `b${i}`).toBe(1);
		const history = await instances.history(testEnv, { id });
		expect(history.events.filter((e: { kind: string }) => e.kind === 'step.started')).toHaveLength(10);
		// 4 + 4 + 2 attempts: the create's invocation, then two alarms, each its own invocation.
		expect(alarmInvocations.get(id)).toBeGreaterThanOrEqual(2);
	});
});

describe('subrequests per invocation (the harness counts every fetch an invocation and its background work make)', () => {
	it('keeps a run of 300 fetch steps at 50 subrequests per invocation at most, where one invocation used to make all 300', async () => {
		const id = uniqueId('fetcher');
		await instances.create(testEnv, { type: 'fetcher', id, payload: { n: 300 } });
		for (let i = 0; i < 300; i++) {
			await settle(id);
			if ((await instances.status(testEnv, { id })).status === 'completed') break;
			await new Promise((r) => setTimeout(r, 10));
		}
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 300 });
		const counted = invocations.get(id) ?? [];
		const perInvocation = counted.map((inv) => inv.subrequests);
		expect(perInvocation.reduce((a, b) => a + b, 0)).toBe(300);
		expect(Math.max(...perInvocation)).toBeLessThanOrEqual(50);
		expect(counted.filter((inv) => inv.subrequests > 0).length).toBeGreaterThanOrEqual(6);
	});
});

describe('compensations per invocation (the same harness: a counter of subrequests per invocation)', () => {
	it('keeps 120 fetch steps and their 120 fetching compensations at 50 subrequests per invocation, each compensation once', async () => {
		const id = uniqueId('comp-fetcher');
		await instances.create(testEnv, { type: 'compensating-fetcher', id, payload: { n: 120 } });
		for (let i = 0; i < 300; i++) {
			await settle(id);
			if ((await instances.status(testEnv, { id })).status === 'errored') break;
			await new Promise((r) => setTimeout(r, 10));
		}
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'errored', rollback: { state: 'completed', completed: 120 } });
		for (let i = 0; i < 120; i++) expect(executions.get(`${id}:refund-${i}`), `refund-${i}`).toBe(1);
		const perInvocation = (invocations.get(id) ?? []).map((inv) => inv.subrequests);
		expect(perInvocation.reduce((a, b) => a + b, 0)).toBe(240);
		expect(Math.max(...perInvocation)).toBeLessThanOrEqual(50);
	});
});
