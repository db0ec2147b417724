import { abortAllDurableObjects, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { api } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId, until } from '../helpers';
import { executions } from '../worker/probes';
import { ChildParentWorkflow, SlowChildWorkflow, SlowParentWorkflow, StepsParentWorkflow } from '../worker/workflows';
import { storedCount } from '../stored-parts';

// step.invoke of a short child runs it inside its parent's object first, then publishes it to its own
// (src/engine/instance/inline-child.ts); these drive the real runner in workerd over HTTP and RPC.

const get = async (path: string) => api('GET', path);

/** Whether the object of `id` holds an instance (a child its parent has published), and the inline rows the object keeps. */
const objectOf = (id: string) =>
	runInDurableObject(stub(id), (_, state) => ({ holdsInstance: storedCount(state.storage, 'instance') > 0, inlineRows: storedCount(state.storage, 'inline_children') }));

afterEach(() => resetClock());

describe('inline children (workerd)', () => {
	it("answers a child's status, steps and history by its id while it runs inside its parent, then from its own object", async () => {
		const id = uniqueId('ip');
		const child = `${id}::slow`;
		await SlowParentWorkflow.create(testEnv, { id, payload: { ms: 400 } });
		await until(async () => (await get(`/workflows/${child}`)).status === 200, 'the child to be readable');
		const running = await get(`/workflows/${child}`);
		expect(running.json).toMatchObject({ id: child, type: 'slow-child', status: 'running', parentId: id });
		expect((await get(`/workflows/${child}/steps`)).json.items[0]).toMatchObject({ name: 'first', status: 'completed' });
		expect((await get(`/workflows/${child}/history`)).json.events[0]).toMatchObject({ kind: 'workflow.created', parent: { id, step: 'slow' } });
		expect(await objectOf(child)).toMatchObject({ holdsInstance: false });

		await until(async () => (await SlowParentWorkflow.status(testEnv, id)).status === 'completed', 'the parent to complete');
		expect(await SlowChildWorkflow.status(testEnv, child)).toMatchObject({ status: 'completed', output: 400 });
		await settle(id);
		expect(await objectOf(child)).toEqual({ holdsInstance: true, inlineRows: 0 });
		expect(await objectOf(id)).toMatchObject({ inlineRows: 0 });
		expect([executions.get(`${child}:first`), executions.get(`${child}:wait`)]).toEqual([1, 1]);
		await settle(child); // the child's own index delivery
		const listed = await get(`/workflows?type=slow-child&parent=${encodeURIComponent(id)}`);
		expect(listed.json.items).toMatchObject([{ id: child, status: 'completed', parentId: id }]);
	});

	it('takes an event sent to a child while it runs inside its parent: the parent hands it over, and the child consumes the event', async () => {
		const id = uniqueId('ip');
		const child = `${id}::slow`;
		await SlowParentWorkflow.create(testEnv, { id, payload: { ms: 300, wait: true } });
		await until(async () => (await get(`/workflows/${child}`)).json?.status === 'running', 'the child to run inline');
		expect(await objectOf(child)).toMatchObject({ holdsInstance: false });
		const sent = await api('POST', `/workflows/${child}/events/go`, { n: 7 });
		expect(sent.status).toBe(202);
		expect(await objectOf(child)).toMatchObject({ holdsInstance: true });
		await until(async () => (await SlowParentWorkflow.status(testEnv, id)).status === 'completed', 'the parent to complete');
		expect((await SlowParentWorkflow.status(testEnv, id)).output).toBe(7);
		expect([executions.get(`${child}:first`), executions.get(`${child}:wait`)]).toEqual([1, 1]);
	});

	it('stops an inline run at its next step when the child is paused, and hands it over paused to its own object', async () => {
		const id = uniqueId('ip');
		const child = `${id}::steps`;
		const done = () => [0, 1, 2, 3, 4, 5].filter((i) => executions.get(`${child}:s${i}`) !== undefined).length;
		await StepsParentWorkflow.create(testEnv, { id, payload: { n: 6, ms: 150 } });
		await until(async () => (await get(`/workflows/${child}`)).status === 200, 'the child to run inline');
		const paused = await api('POST', `/workflows/${child}/pause`);
		expect(paused.json.status).toBe('paused');
		// The step in flight when the pause came finishes inline; the hand-over may begin the next one in the
		// child's own object before the pause reaches it; none after that.
		await new Promise((r) => setTimeout(r, 500));
		expect(done()).toBeLessThanOrEqual(2);
		expect((await get(`/workflows/${child}`)).json.status).toBe('paused');
		expect((await api('POST', `/workflows/${child}/resume`)).status).toBe(200);
		await until(async () => (await StepsParentWorkflow.status(testEnv, id)).status === 'completed', 'the parent to complete');
		expect([0, 1, 2, 3, 4, 5].map((i) => executions.get(`${child}:s${i}`))).toEqual([1, 1, 1, 1, 1, 1]);
	});

	it('pauses a child while it runs inside its parent, and resumes it in its own object', async () => {
		const id = uniqueId('ip');
		const child = `${id}::slow`;
		await SlowParentWorkflow.create(testEnv, { id, payload: { ms: 300, wait: true } });
		await until(async () => (await get(`/workflows/${child}`)).json?.status === 'running', 'the child to run inline');
		const paused = await api('POST', `/workflows/${child}/pause`);
		expect(paused.status).toBe(200);
		expect(paused.json.status).toBe('paused');
		expect((await api('POST', `/workflows/${child}/resume`)).status).toBe(200);
		expect((await api('POST', `/workflows/${child}/events/go`, { n: 3 })).status).toBe(202);
		await until(async () => (await SlowParentWorkflow.status(testEnv, id)).status === 'completed', 'the parent to complete');
		expect((await SlowParentWorkflow.status(testEnv, id)).output).toBe(3);
	});

	it('hands a child that waits for an event over to its own object, which takes the event', async () => {
		const id = uniqueId('ip');
		await ChildParentWorkflow.create(testEnv, { id, payload: { n: 0 } });
		await until(async () => (await get(`/workflows/${id}::double`)).json?.status === 'waiting', 'the child to wait');
		await settle(id);
		expect(await objectOf(`${id}::double`)).toMatchObject({ holdsInstance: true });
		expect((await api('POST', `/workflows/${id}::double/events/go`, {})).status).toBe(202);
		await until(async () => (await ChildParentWorkflow.status(testEnv, id)).status === 'completed', 'the parent to complete');
		expect((await ChildParentWorkflow.status(testEnv, id)).output).toBe(`0 (receipt ${id}::receipt)`);
		expect(await objectOf(id)).toMatchObject({ inlineRows: 0 });
	});

	it("opens the stream of a child running inside its parent: the parent publishes it, and the stream carries the child's run from its creation to its end", async () => {
		const id = uniqueId('ip');
		const child = `${id}::slow`;
		await SlowParentWorkflow.create(testEnv, { id, payload: { ms: 400 } });
		await until(async () => (await get(`/workflows/${child}`)).json?.status === 'running', 'the child to run inline');
		expect(await objectOf(child)).toMatchObject({ holdsInstance: false });
		// Server-Sent Events to the end of the child's run (the body ends with it).
		const sse = await get(`/workflows/${child}/stream`);
		expect(sse.status).toBe(200);
		const events = sse.text
			.split('\n\n')
			.filter((block) => block.includes('data: '))
			.map((block) => JSON.parse(block.slice(block.indexOf('data: ') + 6).split('\n')[0]!) as { kind: string; step?: string; status?: string });
		expect(events[0]).toMatchObject({ kind: 'workflow.created' });
		expect(events.filter((e) => e.kind === 'step.completed').map((e) => e.step)).toEqual(['first', 'wait']);
		expect(events.at(-2)).toMatchObject({ kind: 'workflow.completed' });
		expect(events.at(-1)).toMatchObject({ kind: 'end', status: 'completed' });
		await until(async () => (await SlowParentWorkflow.status(testEnv, id)).status === 'completed', 'the parent to complete');
		expect((await SlowParentWorkflow.status(testEnv, id)).output).toBe(400);
		expect([executions.get(`${child}:first`), executions.get(`${child}:wait`)]).toEqual([1, 1]);
	});

	it('ends a child read as running inside its parent terminated, with its history, when the parent is terminated: its id never answers 404', async () => {
		const id = uniqueId('ip');
		const child = `${id}::slow`;
		await SlowParentWorkflow.create(testEnv, { id, payload: { ms: 400 } });
		await until(async () => (await get(`/workflows/${child}`)).json?.status === 'running', 'the child to run inline');
		expect((await api('POST', `/workflows/${id}/terminate`)).status).toBe(200);
		// Every read from now on finds the child: first through its parent, then in its own object.
		let last: Awaited<ReturnType<typeof get>> | undefined;
		await until(async () => {
			last = await get(`/workflows/${child}`);
			expect(last.status).toBe(200);
			return last.json.status === 'terminated' && (await objectOf(child)).holdsInstance;
		}, 'the child to be published terminated');
		expect(last!.json).toMatchObject({ id: child, status: 'terminated', parentId: id });
		const steps = (await get(`/workflows/${child}/steps`)).json.items;
		expect(steps).toMatchObject([{ name: 'first', status: 'completed' }, { name: 'wait', status: 'cancelled' }]);
		expect((await get(`/workflows/${child}/history`)).json.events.at(-1)).toMatchObject({ kind: 'workflow.terminated' });
		await settle(id);
		expect(await objectOf(id)).toMatchObject({ inlineRows: 0 });
		expect(executions.get(`${child}:first`)).toBe(1);
	});

	it('publishes a child read as running inside its parent terminated from the alarm when every object died right after the terminate', async () => {
		const id = uniqueId('ip');
		const child = `${id}::slow`;
		await SlowParentWorkflow.create(testEnv, { id, payload: { ms: 2_000 } });
		await until(async () => (await get(`/workflows/${child}`)).json?.status === 'running', 'the child to run inline');
		expect((await api('POST', `/workflows/${id}/terminate`)).status).toBe(200);
		await abortAllDurableObjects(); // within the 20 ms before the publishing starts
		const read = await get(`/workflows/${child}`);
		expect(read.status).toBe(200);
		expect(read.json).toMatchObject({ id: child, status: 'terminated', parentId: id });
		advanceClock(10_000);
		await fireAlarm(id);
		await until(async () => (await objectOf(child)).holdsInstance, 'the child to be published');
		expect(await SlowChildWorkflow.status(testEnv, child)).toMatchObject({ status: 'terminated', parentId: id });
		expect((await get(`/workflows/${child}/steps`)).json.items).toMatchObject([{ name: 'first', status: 'completed' }, { name: 'wait', status: 'cancelled' }]);
		expect(executions.get(`${child}:first`)).toBe(1);
	});

	it('answers 404 for the stream of a child id no parent holds', async () => {
		const stream = await get(`/workflows/${uniqueId('ip')}::nobody/stream`);
		expect(stream.status).toBe(404);
		expect(stream.json.error.code).toBe('NOT_FOUND');
	});

	it('answers 404 for a child id no parent holds', async () => {
		const missing = await get(`/workflows/${uniqueId('nobody')}::child`);
		expect(missing.status).toBe(404);
		expect(missing.json.error.code).toBe('NOT_FOUND');
	});
});
