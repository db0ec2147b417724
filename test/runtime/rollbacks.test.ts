import { abortAllDurableObjects } from 'cloudflare:test';
import { api } from '../api/helpers';
import { afterEach, describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { advanceClock, fireAlarm, resetClock, settle, testEnv, uniqueId, until } from '../helpers';
import { executions } from '../worker/probes';

afterEach(resetClock);

describe('rollbacks in workerd', () => {
	it('a run that fails for good rolls back its completed steps newest first and ends errored with the rollback in its status', async () => {
		const id = uniqueId('saga');
		await instances.create(testEnv, { type: 'saga', id, payload: { fail: true } });
		await settle(id);
		const status = await instances.status(testEnv, { id });
		expect(status).toMatchObject({ status: 'errored', error: { name: 'StepFailedError' }, rollback: { reason: 'failed', state: 'completed', completed: 2 } });
		expect(executions.get(`${id}:undo-car:"C1"`)).toBe(1);
		expect(executions.get(`${id}:undo-flight:"F1"`)).toBe(1);
		const page = await instances.history(testEnv, { id, limit: 1000 });
		const rollbacks = page.events.filter((e) => e.kind.startsWith('rollback.')).map((e) => `${e.kind}:${'step' in e ? e.step : ''}`);
		expect(rollbacks).toEqual(['rollback.started:car', 'rollback.completed:car', 'rollback.started:flight', 'rollback.completed:flight']);
	});

	it('after kill -9 mid-rollback, the alarm resumes the rollbacks without running a finished one again', async () => {
		const id = uniqueId('saga-crash');
		await instances.create(testEnv, { type: 'saga', id, payload: { fail: true, hangUndo: 'flight' } });
		await until(() => executions.get(`${id}:undo-flight:"F1"`) === 1, 'the flight rollback to start');
		// Its attempt is durable (a read through the output gate sees it) before the process dies.
		const running = await instances.status(testEnv, { id });
		expect(running.steps.find((s) => s.kind === 'rollback' && s.name === 'flight')).toMatchObject({ status: 'running', attempts: 1 });
		await abortAllDurableObjects(); // the process dies: the rollback closures and promises are gone
		expect((await instances.status(testEnv, { id })).status).toBe('rolling_back');
		advanceClock(60_000);
		await fireAlarm(id); // the watchdog alarm replays run() to learn the rollbacks, then goes on
		await settle(id);
		const status = await instances.status(testEnv, { id });
		expect(status).toMatchObject({ status: 'errored', rollback: { state: 'completed', completed: 2 } });
		expect(status.steps.find((s) => s.kind === 'rollback' && s.name === 'flight')).toMatchObject({ status: 'completed', attempts: 2 });
		expect(executions.get(`${id}:undo-car:"C1"`)).toBe(1);
		expect(executions.get(`${id}:undo-flight:"F1"`)).toBe(2);
		expect(executions.get(`${id}:flight`)).toBe(1);
	});

	it('POST /workflows/:id/terminate?rollback=true rolls back a waiting instance and ends terminated', async () => {
		const id = uniqueId('saga-term');
		await instances.create(testEnv, { type: 'saga', id, payload: { wait: true } });
		await settle(id);
		expect((await instances.status(testEnv, { id })).status).toBe('waiting');
		const response = await api('POST', `/workflows/${id}/terminate?rollback=true`);
		expect(response.status).toBe(200);
		expect(response.json).toEqual({ id, status: 'rolling_back' });
		await settle(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'terminated', rollback: { reason: 'terminated', state: 'completed', completed: 2 } });
		expect(executions.get(`${id}:undo-flight:"F1"`)).toBe(1);
	});

	it('refuses rollback=maybe with a 400 and changes nothing', async () => {
		const id = uniqueId('saga-bad');
		await instances.create(testEnv, { type: 'saga', id, payload: { wait: true } });
		await settle(id);
		const response = await api('POST', `/workflows/${id}/terminate?rollback=maybe`);
		expect(response.status).toBe(400);
		expect(response.json).toMatchObject({ error: { code: 'INVALID_QUERY' } });
		expect((await instances.status(testEnv, { id })).status).toBe('waiting');
	});
});
