import { describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { settle, testEnv, uniqueId } from '../helpers';
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
