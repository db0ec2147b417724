import { abortAllDurableObjects, runDurableObjectAlarm } from 'cloudflare:test';
import { exports } from 'cloudflare:workers';
import { bulk } from '../../src/client/bulk-client';
import { bulkName } from '../../src/engine/object-names';
import { inPlace, placeOf } from '../../src/engine/support/group-id';
import { describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/client/index-client';
import { instances, type ShardflowEnv } from '../../src/client/instance-client';
import { workflowClient } from '../../src/client/workflow-client';
import { listAcrossGroups } from '../../src/client/group-listing';
import { createBatch } from '../../src/client/create-batch';
import { deleteBatch } from '../../src/client/delete-batch';
import { ErrorCode } from '../../src/engine/support/errors';
import { settle, stub, testEnv, uniqueId, until } from '../helpers';
import { api } from '../api/helpers';
import { testRegistry } from '../worker/index';
import { ResidentOrderWorkflow } from '../worker/residency-workflows';
import type { InboxWorkflow } from '../worker/workflows';

// Groups and residency (docs/residency.md). workerd does not implement jurisdictions: under
// SHARDFLOW_ENV=development (the pool's binding) a jurisdiction's objects are reached through the
// namespace itself, by their own (tagged) names. What the client asks of the namespace is recorded
// here through a namespace that records every getByName with the jurisdiction it went through.

type Call = { jurisdiction: string | null; name: string; locationHint?: string };

/** The test env with a WORKFLOW_RUNNER that records which namespace each name was reached through. */
function recordingEnv(): { env: ShardflowEnv; calls: Call[] } {
	const calls: Call[] = [];
	const real = testEnv.WORKFLOW_RUNNER as unknown as { getByName(name: string, options?: unknown): unknown; idFromName(name: string): unknown; get(id: unknown): unknown };
	const through = (jurisdiction: string | null) => ({
		idFromName: (name: string) => real.idFromName(name),
		get: (id: unknown) => real.get(id),
		getByName: (name: string, options?: { locationHint?: string }) => {
			calls.push({ jurisdiction, name, ...(options?.locationHint ? { locationHint: options.locationHint } : {}) });
			return real.getByName(name);
		},
	});
	return { env: { ...(testEnv as object), WORKFLOW_RUNNER: { ...through(null), jurisdiction: (j: string) => through(j) } } as unknown as ShardflowEnv, calls };
}

const EU_ID = /^eu\.eu~[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('an instance of a group with a jurisdiction', () => {
	it('is created, read, signalled and listed through the jurisdiction namespace of its group, with its location hint on create', async () => {
		const { env, calls } = recordingEnv();
		const created = await instances.create(env, { type: 'resident-order', payload: { customerId: 'c-eu', amount: 12 } });
		expect(created).toMatchObject({ type: 'resident-order', created: true, group: 'eu' });
		expect(created.id).toMatch(EU_ID);
		expect(calls).toEqual([{ jurisdiction: 'eu', name: created.id, locationHint: 'weur' }]);
		await settle(created.id);
		calls.length = 0;
		expect((await instances.status(env, { id: created.id })).status).toBe('waiting');
		await instances.sendEvent(env, { id: created.id, event: 'approve', payload: { by: 'ann' } });
		expect(calls.map((c) => [c.jurisdiction, c.name])).toEqual([
			['eu', created.id],
			['eu', created.id],
		]);
		await settle(created.id);
		expect(await instances.status(env, { id: created.id })).toMatchObject({ status: 'completed', output: { settled: 12 } });
		calls.length = 0;
		const page = await new IndexClient(env, testRegistry, { group: 'eu' }).list({ type: 'resident-order', attributes: { customerId: 'c-eu' } });
		expect(page.items.map((e) => [e.id, e.status])).toContainEqual([created.id, 'completed']);
		// Every shard of the group's index is reached through eu's namespace, under the group's own names.
		expect(calls.length).toBeGreaterThan(0);
		for (const call of calls.filter((c) => c.name.includes('__index'))) {
			expect(call.jurisdiction).toBe('eu');
			expect(call.name).toMatch(/^eu\.eu~__index:resident-order:[01]$/);
		}
	});

	it('never shows in a listing of the default group, and shows with its group in a listing across groups that names who answered', async () => {
		const { id } = await ResidentOrderWorkflow.create(testEnv, { payload: { customerId: 'c-only-eu', amount: 1 } });
		expect(id).toMatch(EU_ID);
		await settle(id);
		const home = new IndexClient(testEnv, testRegistry);
		expect((await home.list({ type: 'resident-order', limit: 1000 })).items.map((e) => e.id)).not.toContain(id);
		expect((await home.list({ limit: 1000 })).items.map((e) => e.id)).not.toContain(id);
		expect((await home.counts('resident-order')).waiting).toBe(0);
		expect((await home.inGroup('eu').counts('resident-order')).waiting).toBeGreaterThanOrEqual(1);
		// An id prefix with the group part finds it in its group (the dashboard's exact-id search with conditions uses one).
		expect((await home.inGroup('eu').list({ type: 'resident-order', idPrefix: id })).items.map((e) => e.id)).toEqual([id]);
		const across = await listAcrossGroups(testEnv, testRegistry, { type: 'resident-order', attributes: { customerId: 'c-only-eu' } });
		expect(across.items.map((e) => [e.id, e.group])).toEqual([[id, 'eu']]);
		expect(across.answered).toEqual(['global', 'eu', 'tenant', 'later', 'soon']);
		expect(across.failed).toEqual([]);
	});

	it('refuses a cursor of one group in another group (INVALID_CURSOR)', async () => {
		for (let i = 0; i < 3; i++) await settle((await ResidentOrderWorkflow.create(testEnv, { payload: { customerId: 'c-cursor', amount: i } })).id);
		const eu = new IndexClient(testEnv, testRegistry, { group: 'eu' });
		const first = await eu.list({ type: 'resident-order', limit: 1 });
		expect(first.nextCursor).not.toBeNull();
		await expect(new IndexClient(testEnv, testRegistry).list({ type: 'resident-order', limit: 1, cursor: first.nextCursor })).rejects.toMatchObject({ code: ErrorCode.InvalidCursor });
		expect((await eu.list({ type: 'resident-order', limit: 1, cursor: first.nextCursor })).items).toHaveLength(1);
	});

	it('keeps a child of a type without a group in its parent group, and refuses a child pinned to another group', async () => {
		const parent = await instances.create(testEnv, { type: 'resident-parent', payload: {} });
		await until(async () => (await instances.status(testEnv, { id: parent.id })).status === 'completed', 'the eu parent');
		// A short child runs inline in its parent, then is published to its own object (20 ms later): its id and index are its parent's group's.
		const euIndex = new IndexClient(testEnv, testRegistry, { group: 'eu' });
		await until(async () => (await euIndex.list({ type: 'resident-child', parent: parent.id })).items.length === 1, 'the child in the eu index');
		expect((await euIndex.list({ type: 'resident-child', parent: parent.id })).items.map((e) => e.id)).toEqual([`${parent.id}::local`]);
		expect((await new IndexClient(testEnv, testRegistry).list({ type: 'resident-child', parent: parent.id })).items).toEqual([]);
		const crossing = await instances.create(testEnv, { type: 'resident-parent', payload: { crossGroup: true } });
		await until(async () => (await instances.status(testEnv, { id: crossing.id })).status === 'completed', 'the crossing parent');
		expect((await instances.status(testEnv, { id: crossing.id })).output).toMatch(/^refused:.*a child in another group is refused/);
	});
});

describe('a child in another group, opted in per call (allowCrossGroup)', () => {
	it("creates a default-group parent's eu child in eu, under an id of eu naming its parent's group; kill -9 loses nothing and the parent gets its output", async () => {
		const { env, calls } = recordingEnv();
		const parent = await instances.create(env, { type: 'crossing-parent', payload: { customerId: uniqueId('cx'), allow: true } });
		expect(parent.id).not.toContain('~');
		const childId = `eu.eu~.::-::${parent.id}::order`;
		await until(async () => (await instances.status(testEnv, { id: parent.id })).status === 'waiting', 'the parent waiting for its eu child');
		const child = await instances.status(env, { id: childId });
		expect(child).toMatchObject({ type: 'resident-order', status: 'waiting' });
		expect(calls.filter((c) => c.name === childId).every((c) => c.jurisdiction === 'eu')).toBe(true);
		expect(calls.some((c) => c.name === childId)).toBe(true);
		// The child's index entry is eu's; the default group's index never shows it.
		expect((await new IndexClient(testEnv, testRegistry).list({ type: 'resident-order', parent: parent.id })).items).toEqual([]);
		await abortAllDurableObjects();
		await instances.sendEvent(testEnv, { id: childId, event: 'approve', payload: { by: 'eve' } });
		await until(async () => (await instances.status(testEnv, { id: parent.id })).status === 'completed', 'the parent, after a kill -9');
		expect((await instances.status(testEnv, { id: parent.id })).output).toEqual({ order: { settled: 7 } });
		expect((await instances.status(testEnv, { id: childId })).status).toBe('completed');
	});

	it('refuses the same child without the option (CROSS_GROUP), creating nothing in eu', async () => {
		const parent = await instances.create(testEnv, { type: 'crossing-parent', payload: { customerId: uniqueId('cx'), allow: false } });
		await until(async () => (await instances.status(testEnv, { id: parent.id })).status === 'completed', 'the refused parent');
		expect((await instances.status(testEnv, { id: parent.id })).output).toMatch(/^refused:STEP_FAILED:.*a child in another group is refused unless its step passes allowCrossGroup: true/);
		await expect(instances.status(testEnv, { id: `eu.eu~.::-::${parent.id}::order` })).rejects.toMatchObject({ code: ErrorCode.NotFound });
	});

	it('terminates the eu child when its default-group parent is terminated', async () => {
		const parent = await instances.create(testEnv, { type: 'crossing-parent', payload: { customerId: uniqueId('cx'), allow: true } });
		const childId = `eu.eu~.::-::${parent.id}::order`;
		await until(async () => (await instances.status(testEnv, { id: parent.id })).status === 'waiting', 'the parent waiting');
		await instances.terminate(testEnv, { id: parent.id });
		await until(async () => {
			await runDurableObjectAlarm(stub(parent.id));
			return (await instances.status(testEnv, { id: childId })).status === 'terminated';
		}, 'the eu child terminated by the cascade');
	});
});

describe('creating in a group', () => {
	it('places a create by the payload, falls back to the default group for an undeclared or undeployed group and says so', async () => {
		const routed = workflowClient(testEnv, 'routed-order');
		const de = await routed.create({ payload: { country: 'DE' } });
		expect(de).toMatchObject({ group: 'eu', created: true });
		expect(de.id).toMatch(EU_ID);
		const fr = await routed.create({ payload: { country: 'FR' } });
		expect(fr).toMatchObject({ group: 'global', created: true });
		expect(fr.id).not.toContain('~');
		const au = await routed.create({ payload: { country: 'AU' } });
		expect(au).toMatchObject({ group: 'global', groupFallback: { requested: 'au', reason: 'unknown' } });
		expect(au.id).not.toContain('~');
		const yy = await routed.create({ payload: { country: 'YY' } });
		expect(yy).toMatchObject({ group: 'global', groupFallback: { requested: 'soon', reason: 'undeployed' } });
	});

	it('refuses a create for an undeployed group with a jurisdiction (503 GROUP_NOT_DEPLOYED) instead of writing it outside the jurisdiction, storing nothing', async () => {
		await expect(workflowClient(testEnv, 'routed-order').create({ payload: { country: 'XX' } })).rejects.toMatchObject({ code: ErrorCode.GroupNotDeployed });
		await expect(workflowClient(testEnv, 'inbox').create({ group: 'later', payload: { expect: 1 } })).rejects.toMatchObject({ code: ErrorCode.GroupNotDeployed });
		const id = uniqueId('not-deployed');
		await expect(instances.create(testEnv, { type: 'inbox', id, group: 'later', payload: { expect: 1 } })).rejects.toMatchObject({ code: ErrorCode.GroupNotDeployed });
		await expect(instances.status(testEnv, { id })).rejects.toMatchObject({ code: ErrorCode.NotFound });
		const response = await api('POST', '/workflows', { type: 'routed-order', payload: { country: 'XX' } });
		expect(response.status).toBe(503);
		expect(response.json.error.code).toBe('GROUP_NOT_DEPLOYED');
		const batch = await api('POST', '/workflows/batch', { items: [{ type: 'routed-order', payload: { country: 'XX' } }] });
		expect(batch.json.items).toMatchObject([{ result: 'refused', status: 503, error: { code: 'GROUP_NOT_DEPLOYED' } }]);
	});

	it('refuses a given id that names another group than its type chooses, before anything is stored', async () => {
		const plain = uniqueId('eu-plain');
		await expect(instances.create(testEnv, { type: 'resident-order', id: plain, payload: { customerId: 'x', amount: 1 } })).rejects.toMatchObject({ code: ErrorCode.GroupMismatch });
		await expect(instances.status(testEnv, { id: plain })).rejects.toMatchObject({ code: ErrorCode.NotFound });
		await expect(instances.create(testEnv, { type: 'resident-order', id: `tenant~${uniqueId()}`, payload: { customerId: 'x', amount: 1 } })).rejects.toMatchObject({ code: ErrorCode.GroupMismatch });
		// The group with another jurisdiction than the declared one.
		await expect(instances.create(testEnv, { type: 'resident-order', id: `eu.fedramp~${uniqueId()}`, payload: { customerId: 'x', amount: 1 } })).rejects.toMatchObject({ code: ErrorCode.GroupMismatch });
		// A declared group that is not deployed takes no creates, not even by id.
		await expect(instances.create(testEnv, { type: 'inbox', id: `later.eu~${uniqueId()}`, payload: { expect: 1 } })).rejects.toMatchObject({ code: ErrorCode.GroupNotDeployed });
		await expect(instances.create(testEnv, { type: 'inbox', id: `soon.eu~${uniqueId()}`, payload: { expect: 1 } })).rejects.toMatchObject({ code: ErrorCode.GroupMismatch });
		await expect(instances.create(testEnv, { type: 'inbox', id: `Bad_Group~${uniqueId()}`, payload: { expect: 1 } })).rejects.toMatchObject({ code: ErrorCode.InvalidId });
		// A given id in the type's group is kept as given.
		const given = `eu.eu~${uniqueId('given')}`;
		expect(await instances.create(testEnv, { type: 'resident-order', id: given, payload: { customerId: 'x', amount: 1 } })).toMatchObject({ id: given, group: 'eu' });
	});

	it('creates a type without a group of its own in the group the create asks for, with its own index there', async () => {
		const created = await workflowClient<typeof InboxWorkflow>(testEnv, 'inbox').create({ group: 'tenant', payload: { expect: 1 } });
		expect(created).toMatchObject({ group: 'tenant' });
		expect(created.id).toMatch(/^tenant~/);
		await settle(created.id);
		expect((await new IndexClient(testEnv, testRegistry, { group: 'tenant' }).list({ type: 'inbox' })).items.map((e) => e.id)).toEqual([created.id]);
		expect((await new IndexClient(testEnv, testRegistry).list({ type: 'inbox', limit: 1000 })).items.map((e) => e.id)).not.toContain(created.id);
	});
});

describe('a batch create', () => {
	it('places each item as a single create does: its group field, its pinned type, its choosing function, its fallback answer', async () => {
		const response = await api('POST', '/workflows/batch', {
			items: [
				{ type: 'inbox', group: 'tenant', payload: { expect: 1 } },
				{ type: 'resident-order', payload: { customerId: 'c-batch', amount: 4 } },
				{ type: 'routed-order', payload: { country: 'DE' } },
				{ type: 'routed-order', payload: { country: 'AU' } },
				{ type: 'inbox', group: 'eu', payload: { expect: 1 } },
				{ type: 'resident-order', group: 'tenant', payload: { customerId: 'c-batch', amount: 1 } },
			],
		});
		expect(response.status).toBe(200);
		const items = response.json.items;
		expect(items).toMatchObject([
			{ result: 'created', status: 201, type: 'inbox', group: 'tenant' },
			{ result: 'created', status: 201, type: 'resident-order', group: 'eu' },
			{ result: 'created', status: 201, type: 'routed-order', group: 'eu' },
			{ result: 'created', status: 201, type: 'routed-order', group: 'global', groupFallback: { requested: 'au', reason: 'unknown' } },
			{ result: 'created', status: 201, type: 'inbox', group: 'eu' },
			{ result: 'refused', status: 400, type: 'resident-order', error: { code: 'GROUP_MISMATCH' } },
		]);
		expect(items[0].id).toMatch(/^tenant~/);
		expect(items[1].id).toMatch(EU_ID);
		expect(items[2].id).toMatch(EU_ID);
		expect(items[3].id).not.toContain('~');
		expect(items[4].id).toMatch(EU_ID);
		// Each is listed in its own group's index only.
		await settle(items[4].id);
		expect((await api('GET', `/workflows?type=inbox&group=eu&idPrefix=${encodeURIComponent(items[4].id)}`)).json.items.map((e: { id: string }) => e.id)).toEqual([items[4].id]);
		expect((await api('GET', `/workflows?type=inbox&idPrefix=${encodeURIComponent(items[4].id)}`)).json.items).toEqual([]);
	});

	it("from the typed client: createBatch takes each item's group and reaches its objects through the group's jurisdiction", async () => {
		const { env, calls } = recordingEnv();
		const outcomes = await createBatch(env, [
			{ type: 'inbox', group: 'eu', payload: { expect: 1 } },
			{ type: 'resident-order', payload: { customerId: 'c-client-batch', amount: 2 } },
		]);
		expect(outcomes).toMatchObject([
			{ result: 'created', group: 'eu' },
			{ result: 'created', group: 'eu' },
		]);
		for (const outcome of outcomes) expect(outcome.id).toMatch(EU_ID);
		expect(calls.filter((c) => !c.name.startsWith('__'))).toEqual(outcomes.map((o) => ({ jurisdiction: 'eu', name: o.id, locationHint: 'weur' })));
		const typed = await ResidentOrderWorkflow.createBatch(testEnv, [{ payload: { customerId: 'c-typed-batch', amount: 1 } }]);
		expect(typed).toMatchObject([{ result: 'created', group: 'eu' }]);
		expect(typed[0]!.id).toMatch(EU_ID);
	});

	it('deletes each id of a batch delete in the group its id names', async () => {
		const { id } = await ResidentOrderWorkflow.create(testEnv, { payload: { customerId: 'c-batch-delete', amount: 1 } });
		await settle(id);
		const { env, calls } = recordingEnv();
		expect(await deleteBatch(env, [id], { terminate: true })).toEqual([{ result: 'deleted', id }]);
		expect(calls.filter((c) => c.name === id).map((c) => c.jurisdiction)).toEqual(['eu']);
		await expect(instances.status(testEnv, { id })).rejects.toMatchObject({ code: ErrorCode.NotFound });
	});
});

describe('the default group', () => {
	it('keeps ids without a group part where they always were, answering a create as before groups', async () => {
		const id = uniqueId('before-groups');
		const created = await instances.create(testEnv, { type: 'inbox', id, payload: { expect: 1 } });
		expect(created).toEqual({ id, type: 'inbox', status: 'created', created: true });
		await settle(id);
		await instances.sendEvent(testEnv, { id, event: 'msg', payload: { n: 7 } });
		await settle(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: [7] });
		expect((await new IndexClient(testEnv, testRegistry).list({ type: 'inbox', idPrefix: id })).items.map((e) => e.id)).toEqual([id]);
	});
});

describe('a crash', () => {
	it('loses nothing of an instance in either group (kill -9 of every object)', async () => {
		const eu = await ResidentOrderWorkflow.create(testEnv, { payload: { customerId: 'c-crash', amount: 5 } });
		const home = uniqueId('crash-home');
		await instances.create(testEnv, { type: 'inbox', id: home, payload: { expect: 1 } });
		await settle(eu.id);
		await settle(home);
		await abortAllDurableObjects();
		await instances.sendEvent(testEnv, { id: eu.id, event: 'approve', payload: { by: 'bob' } });
		await instances.sendEvent(testEnv, { id: home, event: 'msg', payload: { n: 1 } });
		await settle(eu.id);
		await settle(home);
		expect(await instances.status(testEnv, { id: eu.id })).toMatchObject({ status: 'completed', output: { settled: 5 } });
		expect(await instances.status(testEnv, { id: home })).toMatchObject({ status: 'completed', output: [1] });
		const inEu = await new IndexClient(testEnv, testRegistry, { group: 'eu' }).list({ type: 'resident-order', attributes: { customerId: 'c-crash' } });
		expect(inEu.items.map((e) => [e.id, e.status])).toEqual([[eu.id, 'completed']]);
		expect((await new IndexClient(testEnv, testRegistry).list({ type: 'inbox', idPrefix: home })).items.map((e) => [e.id, e.status])).toEqual([[home, 'completed']]);
	});
});

describe('a bulk operation', () => {
	it("acts on one group only: the job lives in the group, walks the group's index and carries the group in its id", async () => {
		const customer = uniqueId('bulk-eu');
		const ids: string[] = [];
		for (let i = 0; i < 3; i++) ids.push((await ResidentOrderWorkflow.create(testEnv, { payload: { customerId: customer, amount: i } })).id);
		for (const id of ids) await settle(id);
		// In the default group the query matches nothing: the eu instances are not in its index.
		const home = await bulk.start(testEnv, testRegistry, { query: { type: 'resident-order', attributes: { customerId: customer } }, action: { kind: 'terminate' }, dryRun: true });
		expect(home.id).not.toContain('~');
		const started = await bulk.start(testEnv, testRegistry, { group: 'eu', query: { type: 'resident-order', attributes: { customerId: customer } }, action: { kind: 'terminate' } });
		expect(started.id).toMatch(/^eu\.eu~/);
		for (let i = 0; i < 50; i++) {
			const ran = await runDurableObjectAlarm(stub(inPlace(placeOf(started.id), bulkName(started.id.split('~')[1]!))));
			if (!ran || (await bulk.progress(testEnv, started.id)).state !== 'running') break;
		}
		expect(await bulk.progress(testEnv, started.id)).toMatchObject({ state: 'completed', matched: 3, done: 3 });
		for (const id of ids) expect((await instances.status(testEnv, { id })).status).toBe('terminated');
		for (let i = 0; i < 50; i++) {
			if (!(await runDurableObjectAlarm(stub(bulkName(home.id)))) || (await bulk.progress(testEnv, home.id)).state !== 'running') break;
		}
		expect(await bulk.progress(testEnv, home.id)).toMatchObject({ matched: 0 });
	});

	it('refuses to span groups unless the call opts in, then starts one job per group', async () => {
		const request = { query: { type: 'resident-order' }, action: { kind: 'terminate' as const }, dryRun: true };
		await expect(bulk.startInGroups(testEnv, testRegistry, request, { groups: ['global', 'eu'] })).rejects.toMatchObject({ code: ErrorCode.CrossGroup });
		const { jobs, failed } = await bulk.startInGroups(testEnv, testRegistry, request, { groups: ['global', 'eu', 'mars'], allowCrossGroup: true });
		expect(jobs.map((job) => placeOf(job.id).group)).toEqual([null, 'eu']);
		expect(failed).toEqual([{ group: 'mars', error: expect.objectContaining({ code: ErrorCode.InvalidGroup }) }]);
	});
});

describe('over HTTP', () => {
	it('creates, reads, signals, lists and counts a group-pinned type end to end', async () => {
		const created = await api('POST', '/workflows', { type: 'resident-order', payload: { customerId: 'c-http', amount: 3 } });
		expect(created.status).toBe(201);
		expect(created.json).toMatchObject({ type: 'resident-order', group: 'eu' });
		const id: string = created.json.id;
		expect(id).toMatch(EU_ID);
		await settle(id);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ id, status: 'waiting' });
		expect((await api('POST', `/workflows/${id}/events/approve`, { by: 'http' })).status).toBeLessThan(300);
		await settle(id);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'completed' });
		const inEu = await api('GET', `/workflows?type=resident-order&group=eu&attr.customerId=c-http`);
		expect(inEu.json.items.map((e: { id: string }) => e.id)).toEqual([id]);
		const home = await api('GET', `/workflows?type=resident-order&attr.customerId=c-http`);
		expect(home.json.items).toEqual([]);
		const across = await api('GET', `/workflows?type=resident-order&groups=*&attr.customerId=c-http`);
		expect(across.json).toMatchObject({ items: [{ id, group: 'eu' }], nextCursor: null, groups: { answered: ['global', 'eu', 'tenant', 'later', 'soon'], failed: [] } });
		const types = await api('GET', '/types?group=eu');
		expect(types.json.types.find((t: { type: string }) => t.type === 'resident-order').counts.completed).toBeGreaterThanOrEqual(1);
		expect((await api('GET', '/types/resident-order/metrics?group=eu')).status).toBe(200);
	});

	it("follows a group's changes at GET /types/:type/stream?group=, from the group's own shards", async () => {
		const worker = (exports as unknown as { default: Fetcher }).default;
		const response = await worker.fetch('http://shardflow.test/types/resident-order/stream?status=waiting&group=eu');
		expect(response.status).toBe(200);
		const { id } = await ResidentOrderWorkflow.create(testEnv, { payload: { customerId: 'c-stream', amount: 1 } });
		const reader = response.body!.getReader();
		const decoder = new TextDecoder();
		let text = '';
		while (!text.includes(`"id":"${id}"`)) {
			const { value, done } = await reader.read();
			if (done) break;
			text += decoder.decode(value, { stream: true });
		}
		await reader.cancel();
		expect(text).toContain(`"id":"${id}"`);
		expect((await worker.fetch('http://shardflow.test/types/resident-order/stream?group=mars')).status).toBe(400);
	});

	it("walks a group's index in the admin routes: reconcile checks its entries, purge deletes its finished instances", async () => {
		const { id } = await ResidentOrderWorkflow.create(testEnv, { payload: { customerId: 'c-purge', amount: 1 } });
		await settle(id);
		await instances.terminate(testEnv, { id });
		await settle(id);
		const walk = async (path: string, body: Record<string, unknown>) => {
			const totals: Record<string, number> = {};
			let cursor: string | null = null;
			for (let i = 0; i < 50; i++) {
				const { status, json } = await api('POST', path, { ...body, ...(cursor ? { cursor } : {}) });
				expect(status).toBe(200);
				for (const [k, v] of Object.entries(json)) if (typeof v === 'number') totals[k] = (totals[k] ?? 0) + v;
				if (json.done) return totals;
				cursor = json.cursor;
			}
			throw new Error('the walk did not end');
		};
		expect((await walk('/admin/types/resident-order/reconcile', { group: 'eu' })).scanned).toBeGreaterThanOrEqual(1);
		const purge = { status: 'terminated', updatedBefore: Date.now() + 60_000 };
		// The default group's walk never reaches it; the eu group's deletes it.
		await walk('/admin/types/resident-order/purge', purge);
		expect((await instances.status(testEnv, { id })).status).toBe('terminated');
		expect((await walk('/admin/types/resident-order/purge', { ...purge, group: 'eu' })).deleted).toBeGreaterThanOrEqual(1);
		await expect(instances.status(testEnv, { id })).rejects.toMatchObject({ code: ErrorCode.NotFound });
		expect((await api('POST', '/admin/types/resident-order/reconcile', { group: 'mars' })).json.error.code).toBe('INVALID_GROUP');
	});

	it("refuses an admin walk's cursor in another group than the one it walked (INVALID_CURSOR), as listing cursors are", async () => {
		for (const customerId of ['c-walk-1', 'c-walk-2']) await settle((await ResidentOrderWorkflow.create(testEnv, { payload: { customerId, amount: 1 } })).id);
		const purge = { status: 'terminated', updatedBefore: 1, batchSize: 1 };
		for (const walk of ['purge', 'reconcile', 'rebalance']) {
			const body = walk === 'purge' ? purge : { batchSize: 1 };
			const first = await api('POST', `/admin/types/resident-order/${walk}`, { ...body, group: 'eu' });
			expect(first.status, walk).toBe(200);
			expect(first.json.done, walk).toBe(false);
			const { cursor } = first.json;
			for (const elsewhere of [{}, { group: 'tenant' }]) {
				const refused = await api('POST', `/admin/types/resident-order/${walk}`, { ...body, ...elsewhere, cursor });
				expect(refused.status, `${walk} ${JSON.stringify(elsewhere)}`).toBe(400);
				expect(refused.json.error.code).toBe('INVALID_CURSOR');
			}
			expect((await api('POST', `/admin/types/resident-order/${walk}`, { ...body, group: 'eu', cursor })).status, walk).toBe(200);
		}
		// A default group's cursor (as before groups) is refused in a group too.
		for (const id of [uniqueId('walk-home'), uniqueId('walk-home')]) {
			await instances.create(testEnv, { type: 'inbox', id, payload: { expect: 1 } });
			await settle(id);
		}
		const home = await api('POST', '/admin/types/inbox/purge', purge);
		expect(home.json.done).toBe(false);
		expect((await api('POST', '/admin/types/inbox/purge', { ...purge, group: 'eu', cursor: home.json.cursor })).json.error.code).toBe('INVALID_CURSOR');
		expect((await api('POST', '/admin/types/inbox/purge', { ...purge, cursor: home.json.cursor })).status).toBe(200);
	});

	it('refuses an id in the wrong group, an undeclared group to read, and a cursor with groups= (400)', async () => {
		const wrong = await api('POST', '/workflows', { type: 'resident-order', id: uniqueId('plain'), payload: { customerId: 'x', amount: 1 } });
		expect(wrong.status).toBe(400);
		expect(wrong.json.error.code).toBe('GROUP_MISMATCH');
		const unknown = await api('GET', '/workflows?group=mars');
		expect(unknown.status).toBe(400);
		expect(unknown.json.error.code).toBe('INVALID_GROUP');
		expect((await api('GET', '/workflows?groups=*&cursor=abc')).status).toBe(400);
		const fallback = await api('POST', '/workflows', { type: 'routed-order', payload: { country: 'AU' } });
		expect(fallback.status).toBe(201);
		expect(fallback.json).toMatchObject({ group: 'global', groupFallback: { requested: 'au', reason: 'unknown' } });
	});

	it('refuses to archive an instance of a jurisdiction group without an archive bucket of its own (ARCHIVE_NOT_CONFIGURED)', async () => {
		const { id } = await ResidentOrderWorkflow.create(testEnv, { payload: { customerId: 'c-archive', amount: 2 } });
		await settle(id);
		const refused = await api('DELETE', `/workflows/${id}?archive=true&terminate=true`);
		expect(refused.status).toBe(400);
		expect(refused.json.error.code).toBe('ARCHIVE_NOT_CONFIGURED');
	});
});
