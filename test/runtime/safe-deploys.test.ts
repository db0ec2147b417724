import { afterEach, describe, expect, it } from 'vitest';
import { api } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, uniqueId } from '../helpers';
import { executions } from '../worker/probes';
import { deployedCode } from '../worker/workflows';

/** Creates an instance on v1 and takes it past its charge: it sleeps in "settle". */
async function chargedOnV1(): Promise<string> {
	deployedCode.version = 'v1';
	const id = uniqueId('deploy');
	await api('POST', '/workflows', { type: 'redeployed', id, payload: {} });
	await settle(id);
	await api('POST', `/workflows/${id}/events/approval`, { ok: true });
	await settle(id);
	expect((await api('GET', `/workflows/${id}`)).json.status).toBe('sleeping');
	return id;
}

afterEach(() => {
	deployedCode.version = 'v1';
	resetClock();
});

describe('a deploy that changes the steps under instances in flight (workerd)', () => {
	it('stops a diverged instance with its description in the status, the index and the history, running no step', async () => {
		const id = await chargedOnV1();
		deployedCode.version = 'v2-unpatched';
		advanceClock(3_600_000);
		await fireAlarm(id);
		expect(executions.get(`${id}:fraud-check`)).toBeUndefined();
		expect(executions.get(`${id}:charge`)).toBe(1);
		const status = (await api('GET', `/workflows/${id}`)).json;
		expect(status).toMatchObject({ status: 'diverged', error: { name: 'DivergenceError', code: 'DIVERGED' } });
		expect(status.error.message).toMatch(/position 2: the history has do "charge" there, the code asked for do "fraud-check"/);
		const listed = (await api('GET', '/workflows?type=redeployed&status=diverged&limit=1000')).json.items.map((e: { id: string }) => e.id);
		expect(listed).toContain(id);
		const history = (await api('GET', `/workflows/${id}/history`)).json.events;
		expect(history.at(-1)).toMatchObject({ kind: 'workflow.diverged', position: 2, recorded: { kind: 'do', name: 'charge' }, requested: { kind: 'do', name: 'fraud-check' } });
	});

	it('resumes a diverged instance once the patched code is deployed, and it finishes without running the charge again', async () => {
		const id = await chargedOnV1();
		deployedCode.version = 'v2-unpatched';
		advanceClock(3_600_000);
		await fireAlarm(id);
		expect((await api('GET', `/workflows/${id}`)).json.status).toBe('diverged');
		deployedCode.version = 'v2-patched';
		expect(await api('POST', `/workflows/${id}/resume`)).toMatchObject({ status: 200, json: { status: 'running' } });
		await settle(id);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'completed', output: 'done' });
		expect(executions.get(`${id}:charge`)).toBe(1);
		expect(executions.get(`${id}:fraud-check`)).toBeUndefined();
	});

	it('takes the patched branch on an instance still waiting for approval when the new code lands', async () => {
		deployedCode.version = 'v1';
		const id = uniqueId('deploy-wait');
		await api('POST', '/workflows', { type: 'redeployed', id, payload: {} });
		await settle(id);
		deployedCode.version = 'v2-patched';
		await api('POST', `/workflows/${id}/events/approval`, { ok: true });
		await settle(id);
		expect(executions.get(`${id}:fraud-check`)).toBe(1);
		const kinds = (await api('GET', `/workflows/${id}/history`)).json.events.map((e: { kind: string }) => e.kind);
		expect(kinds).toContain('patch.recorded');
	});

	it('restarts a diverged instance from the start', async () => {
		const id = await chargedOnV1();
		deployedCode.version = 'v2-unpatched';
		advanceClock(3_600_000);
		await fireAlarm(id);
		expect(await api('POST', `/workflows/${id}/restart`)).toMatchObject({ status: 200, json: { status: 'created' } });
		await settle(id);
		expect((await api('GET', `/workflows/${id}`)).json.status).toBe('waiting');
	});
});

describe('code version labels over HTTP', () => {
	it('show the version that started an instance in its status and listing, and filter the list by it', async () => {
		const id = uniqueId('labelled');
		await api('POST', '/workflows', { type: 'redeployed', id, payload: {} });
		await settle(id);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ codeVersion: '2026-11-26.1', lastCodeVersion: '2026-11-26.1', generation: 0 });
		const listed = (await api('GET', '/workflows?type=redeployed&codeVersion=2026-11-26.1&limit=1000')).json.items;
		expect(listed.find((e: { id: string }) => e.id === id)).toMatchObject({ codeVersion: '2026-11-26.1' });
		expect((await api('GET', '/workflows?type=redeployed&codeVersion=older&limit=1000')).json.items.map((e: { id: string }) => e.id)).not.toContain(id);
		expect(await api('GET', '/workflows?codeVersion=has%20space')).toMatchObject({ status: 400, json: { error: { code: 'INVALID_QUERY' } } });
	});
});
