import { afterEach, describe, expect, it } from 'vitest';
import { RedeployedWorkflow } from '../worker/workflows';
import { api } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, testEnv, uniqueId } from '../helpers';
import { executions } from '../worker/probes';

/** A `redeployed` instance run to completion: reserve, approval, charge, an hour's settle. */
async function completed(): Promise<string> {
	const id = uniqueId('restart-from');
	await api('POST', '/workflows', { type: 'redeployed', id, payload: {} });
	await settle(id);
	await api('POST', `/workflows/${id}/events/approval`, { ok: true });
	await settle(id);
	advanceClock(3_600_001);
	await fireAlarm(id);
	expect((await api('GET', `/workflows/${id}`)).json.status).toBe('completed');
	return id;
}

afterEach(() => resetClock());

describe('restart from a step (workerd)', () => {
	it('POST /workflows/:id/restart {from} keeps the steps before it and runs it and the rest again', async () => {
		const id = await completed();
		expect(await api('POST', `/workflows/${id}/restart`, { from: 'charge' })).toMatchObject({ status: 200, json: { id, status: 'created' } });
		await settle(id);
		// The approval wait before the charge is kept: no event is needed again.
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'sleeping', generation: 1 });
		advanceClock(3_600_001);
		await fireAlarm(id);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'completed', output: 'done' });
		expect(executions.get(`${id}:reserve`)).toBe(1);
		expect(executions.get(`${id}:charge`)).toBe(2);
		const history = (await api('GET', `/workflows/${id}/history`)).json.events;
		expect(history[0]).toMatchObject({ kind: 'workflow.restarted', previousGeneration: 0, from: 'charge', keptSteps: 2 });
	});

	it('restarts from a middle step of a run whose steps await I/O: only it and the later steps run again (found from outside: the run ended diverged)', async () => {
		const id = uniqueId('restart-io');
		await api('POST', '/workflows', { type: 'steps-child', id, payload: { n: 6, ms: 1 } });
		await settle(id);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'completed', output: 6 });
		for (const from of ['s3', 's1']) {
			expect(await api('POST', `/workflows/${id}/restart`, { from })).toMatchObject({ status: 200 });
			await settle(id);
			expect((await api('GET', `/workflows/${id}`)).json, `from ${from}`).toMatchObject({ status: 'completed', output: 6 });
		}
		// s0 ran once; s1 and s2 again only for the restart from s1; s3-s5 for both restarts.
		expect([0, 1, 2, 3, 4, 5].map((i) => executions.get(`${id}:s${i}`))).toEqual([1, 2, 2, 3, 3, 3]);
	});

	it('the typed helper restarts from a step too', async () => {
		const id = await completed();
		expect(await RedeployedWorkflow.restart(testEnv, id, { from: 'settle' })).toBe('created');
		await settle(id);
		expect(executions.get(`${id}:charge`)).toBe(1);
		expect((await api('GET', `/workflows/${id}`)).json.status).toBe('sleeping');
	});

	// Cloudflare: engine.test.ts "should default restart from step type to step.do" (the kind and occurrence are the caller's to pick).
	it('POST /workflows/:id/restart {from: {name, type, count}} restarts from the step of that kind', async () => {
		const id = await completed();
		expect(await api('POST', `/workflows/${id}/restart`, { from: { name: 'approval', type: 'waitForEvent', count: 1 } })).toMatchObject({ status: 200, json: { status: 'created' } });
		await settle(id);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'waiting', generation: 1 });
		const history = (await api('GET', `/workflows/${id}/history`)).json.events;
		expect(history[0]).toMatchObject({ kind: 'workflow.restarted', from: 'approval', fromType: 'waitForEvent', keptSteps: 1 });
	});

	it('the typed helper takes the kind of step too', async () => {
		const id = await completed();
		expect(await RedeployedWorkflow.restart(testEnv, id, { from: { name: 'settle', type: 'sleep' } })).toBe('created');
		await settle(id);
		expect(executions.get(`${id}:charge`)).toBe(1);
	});

	it.for([
		[{ from: { name: 'charge', type: 'sleep' } }, 'UNKNOWN_STEP'],
		[{ from: { name: 'charge', count: 2 } }, 'UNKNOWN_STEP'],
		[{ from: { name: 'charge', type: 'nap' } }, 'INVALID_REQUEST'],
		[{ from: { name: 'charge', count: 0 } }, 'INVALID_REQUEST'],
		[{ from: { name: 'charge', kind: 'do' } }, 'INVALID_REQUEST'],
		[{ from: { type: 'do' } }, 'INVALID_REQUEST'],
		[{ from: 'refund' }, 'UNKNOWN_STEP'],
		[{ from: 42 }, 'INVALID_REQUEST'],
		[{ from: '' }, 'INVALID_REQUEST'],
		[{ form: 'charge' }, 'INVALID_REQUEST'],
	] as const)('answers %j with a 400 (%s) and changes nothing', async ([body, code]) => {
		const id = await completed();
		const before = (await api('GET', `/workflows/${id}`)).json;
		const response = await api('POST', `/workflows/${id}/restart`, body);
		expect(response.status).toBe(400);
		expect(response.json.error.code).toBe(code);
		expect((await api('GET', `/workflows/${id}`)).json).toEqual(before);
	});

	it('refuses an unknown step through the helper with a typed error', async () => {
		const id = await completed();
		await expect(RedeployedWorkflow.restart(testEnv, id, { from: 'refund' })).rejects.toMatchObject({ code: 'UNKNOWN_STEP' });
	});
});
