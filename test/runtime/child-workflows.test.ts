import { abortAllDurableObjects, evictDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { api } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId, until } from '../helpers';
import { alarmInvocations, childNotices, executions } from '../worker/probes';
import { ChildDoublerWorkflow, ChildParentWorkflow } from '../worker/workflows';

afterEach(() => {
	resetClock();
	childNotices.drop = false;
});

const statusOf = async (id: string) => (await api('GET', `/workflows/${id}`)).json;

/** A parent whose invoked child waits for "go" (payload n = 0): the parent waits in `waiting`. */
async function waitingParent(options: { abandon?: boolean } = {}) {
	const id = uniqueId('parent');
	await ChildParentWorkflow.create(testEnv, { id, payload: { n: 0, ...options } });
	await until(async () => (await statusOf(`${id}::double`))?.status === 'waiting', 'the child to wait for go');
	await settle(id);
	expect((await statusOf(id)).status).toBe('waiting');
	return id;
}

describe('step.invoke (workerd)', () => {
	it("cannot be squatted: a create that names a child's id first is refused, and the parent's child then runs", async () => {
		const id = uniqueId('parent');
		for (const child of [`${id}::double`, `${id}::g1::double`]) {
			const refused = await api('POST', '/workflows', { type: 'child-double', id: child, payload: { n: 1 } });
			expect(refused.status, child).toBe(400);
			expect(refused.json.error.code).toBe('RESERVED_ID');
			const batch = await api('POST', '/workflows/batch', { items: [{ type: 'child-double', id: child, payload: { n: 1 } }] });
			expect(batch.json.items[0]).toMatchObject({ result: 'refused', error: { code: 'RESERVED_ID' } });
		}
		await ChildParentWorkflow.create(testEnv, { id, payload: { n: 21 } });
		await settle(id);
		await settle(`${id}::receipt`);
		expect(await ChildParentWorkflow.status(testEnv, id)).toMatchObject({ status: 'completed', output: `42 (receipt ${id}::receipt)` });
	});

	it("takes the outcome of a child that finishes at once in the parent's first pass: no notice, no alarm, the parent never waits", async () => {
		childNotices.drop = true;
		const id = uniqueId('parent');
		await ChildParentWorkflow.create(testEnv, { id, payload: { n: 21 } });
		await settle(id);
		expect(await ChildParentWorkflow.status(testEnv, id)).toMatchObject({ status: 'completed', output: `42 (receipt ${id}::receipt)` });
		expect(alarmInvocations.get(id) ?? 0).toBe(0);
	});

	it('runs the child and returns its output; status, history and the list show the parent', async () => {
		const id = uniqueId('parent');
		await ChildParentWorkflow.create(testEnv, { id, payload: { n: 21 } });
		await until(async () => (await statusOf(id)).status === 'completed', 'the parent to complete');
		expect(await ChildParentWorkflow.status(testEnv, id)).toMatchObject({ status: 'completed', output: `42 (receipt ${id}::receipt)` });
		expect(await ChildDoublerWorkflow.status(testEnv, `${id}::double`)).toMatchObject({ status: 'completed', output: 42, parentId: id });
		const parentHistory = (await api('GET', `/workflows/${id}/history`)).json.events;
		expect(parentHistory.filter((e: { kind: string }) => e.kind.startsWith('child.'))).toMatchObject([
			{ kind: 'child.started', step: 'receipt', childId: `${id}::receipt`, mode: 'start' },
			{ kind: 'child.started', step: 'double', childId: `${id}::double`, childType: 'child-double', mode: 'invoke' },
			{ kind: 'child.completed', step: 'double', childId: `${id}::double`, output: 42 },
		]);
		expect((await api('GET', `/workflows/${id}::double/history`)).json.events[0]).toMatchObject({ kind: 'workflow.created', parent: { id, type: 'child-parent', step: 'double' } });
		// The parent first: it publishes the child it ran inline (then the child's object delivers its entry).
		await settle(id);
		await Promise.all([settle(`${id}::double`), settle(`${id}::receipt`)]);
		const listed = (await api('GET', `/workflows?parent=${id}`)).json.items;
		expect(listed.map((e: { id: string }) => e.id).sort()).toEqual([`${id}::double`, `${id}::receipt`]);
		expect(listed[0]).toMatchObject({ parentId: id, type: 'child-double' });
	});

	it('makes invoke throw a catchable ChildWorkflowError when the child errors', async () => {
		const id = uniqueId('parent');
		await ChildParentWorkflow.create(testEnv, { id, payload: { n: -3 } });
		await until(async () => (await statusOf(id)).status === 'completed', 'the parent to complete');
		expect((await statusOf(id)).output).toBe(`child ${id}::double errored`);
		expect((await api('GET', `/workflows/${id}/history`)).json.events.find((e: { kind: string }) => e.kind === 'child.failed')).toMatchObject({
			status: 'errored',
			error: { message: 'cannot double -3' },
		});
	});

	it('wakes the parent once when the child completes while the parent is evicted', async () => {
		const id = await waitingParent();
		await evictDurableObject(stub(id));
		await instances.sendEvent(testEnv, { id: `${id}::double`, event: 'go', payload: {} });
		await until(async () => (await statusOf(id)).status === 'completed', 'the evicted parent to hear of its child');
		expect((await statusOf(id)).output).toBe(`0 (receipt ${id}::receipt)`);
		const completions = (await api('GET', `/workflows/${id}/history`)).json.events.filter((e: { kind: string }) => e.kind === 'child.completed');
		expect(completions).toHaveLength(1);
		expect(executions.get(`${id}::double:double`)).toBe(1);
	});

	it('wakes the parent from its alarm when the notice is lost (the runtime dies between the child finishing and the parent hearing)', async () => {
		const id = await waitingParent();
		childNotices.drop = true;
		await instances.sendEvent(testEnv, { id: `${id}::double`, event: 'go', payload: {} });
		await settle(`${id}::double`);
		await until(async () => childNotices.dropped > 0, 'the notice to be sent (and lost)');
		await abortAllDurableObjects();
		expect((await statusOf(id)).status).toBe('waiting');
		childNotices.drop = false;
		advanceClock(60_000);
		await fireAlarm(id);
		await settle(id);
		expect(await statusOf(id)).toMatchObject({ status: 'completed', output: `0 (receipt ${id}::receipt)` });
		// A later alarm or notice finds nothing more to do: the child's outcome was taken once.
		await fireAlarm(id);
		const completions = (await api('GET', `/workflows/${id}/history`)).json.events.filter((e: { kind: string }) => e.kind === 'child.completed');
		expect(completions).toHaveLength(1);
	});

	it('terminating the parent terminates its unfinished child and leaves its finished one', async () => {
		const id = await waitingParent();
		expect(await api('POST', `/workflows/${id}/terminate`)).toMatchObject({ status: 200 });
		await until(async () => (await statusOf(`${id}::double`)).status === 'terminated', 'the child to be terminated');
		expect((await statusOf(`${id}::receipt`)).status).toBe('completed');
	});

	it("leaves a child invoked with onParentTerminate: 'abandon' running", async () => {
		const id = await waitingParent({ abandon: true });
		await api('POST', `/workflows/${id}/terminate`);
		await settle(id);
		expect((await statusOf(`${id}::double`)).status).toBe('waiting');
	});

	it('refuses a parent filter that is not an id with a 400', async () => {
		const response = await api('GET', `/workflows?parent=${encodeURIComponent('no/such id')}`);
		expect(response.status).toBe(400);
		expect(response.json.error.code).toBe('INVALID_QUERY');
	});
});
