import { abortAllDurableObjects, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/client/index-client';
import { instances } from '../../src/client/instance-client';
import { limiterInfo } from '../../src/client/limiter-client';
import { limiterName } from '../../src/engine/object-names';
import { ErrorCode } from '../../src/engine/support/errors';
import { api } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, testEnv, uniqueId, until } from '../helpers';
import { limiterFaults } from '../worker/probes';
import { testRegistry } from '../worker/index';
import { LimitedWorkflow } from '../worker/workflows';

afterEach(() => {
	resetClock();
	limiterFaults.failReleases = 0;
});

const statusOf = async (id: string) => (await instances.status(testEnv, { id })).status;

/** Creates instances of one tenant one after the other (so their arrival order is known) and lets each reach its place. */
async function createInOrder(tenant: string, n: number): Promise<string[]> {
	const ids: string[] = [];
	for (let i = 0; i < n; i++) {
		const id = uniqueId(`lim-${i}`);
		await LimitedWorkflow.create(testEnv, { id, payload: { tenant } });
		await settle(id);
		ids.push(id);
	}
	return ids;
}

const finish = (id: string, fail = false) => LimitedWorkflow.sendEvent(testEnv, { id, event: 'finish', payload: { fail } });
const running = async (id: string) => (await statusOf(id)) === 'waiting';

describe('concurrency keys', () => {
	it('keeps at most the limit running per key under a burst, queues the rest (visible in the index) and leaves other keys alone', async () => {
		const tenant = uniqueId('burst');
		const ids = Array.from({ length: 8 }, (_, i) => uniqueId(`burst-${i}`));
		await Promise.all(ids.map((id) => LimitedWorkflow.create(testEnv, { id, payload: { tenant } })));
		const other = uniqueId('other');
		await LimitedWorkflow.create(testEnv, { id: other, payload: { tenant: `${tenant}-b` } });
		await Promise.all([...ids, other].map((id) => settle(id)));
		const statuses = await Promise.all(ids.map(statusOf));
		expect(statuses.filter((s) => s === 'waiting')).toHaveLength(2);
		expect(statuses.filter((s) => s === 'queued')).toHaveLength(6);
		expect(await statusOf(other)).toBe('waiting');
		const info = await limiterInfo(testEnv, 'limited', tenant);
		expect(info).toMatchObject({ limit: 2 });
		expect(info.holders).toHaveLength(2);
		expect(info.waiting).toHaveLength(6);
		const queued = await new IndexClient(testEnv, testRegistry).list({ type: 'limited', status: ['queued'], limit: 100 });
		expect(queued.items.map((e) => e.id).filter((id) => ids.includes(id)).sort()).toEqual(info.waiting.slice().sort());
		const overHttp = await api('GET', '/workflows?type=limited&status=queued&limit=1000');
		expect(overHttp.status).toBe(200);
		expect(overHttp.json.items.filter((e: { id: string }) => ids.includes(e.id)).map((e: { status: string }) => e.status)).toEqual(Array(6).fill('queued'));
		const list = await api('GET', `/dashboard/instances?type=limited&status=queued`);
		expect(list.status).toBe(200);
		expect(list.text).toContain(`data-id="${info.waiting[0]}"`);
		expect(list.text).toContain(`class="badge status-queued"`);
	});

	it('starts queued instances in arrival order as slots free', async () => {
		const ids = await createInOrder(uniqueId('fifo'), 5);
		expect(await Promise.all(ids.map(statusOf))).toEqual(['waiting', 'waiting', 'queued', 'queued', 'queued']);
		const started: string[] = [];
		for (const holder of ids.slice(0, 3)) {
			await finish(holder);
			await settle(holder);
			const next = ids[ids.indexOf(holder) + 2]!;
			await until(() => running(next), `${next} to start`);
			started.push(next);
			// Only the oldest waiter started: the others are still queued.
			for (const later of ids.slice(ids.indexOf(next) + 1)) expect(await statusOf(later)).toBe('queued');
		}
		expect(started).toEqual(ids.slice(2));
		const history = await instances.history(testEnv, { id: ids[2]! });
		expect(history.events.map((e) => e.kind)).toEqual(expect.arrayContaining(['workflow.created', 'workflow.queued', 'slot.acquired']));
	});

	it.for([
		['completes', (id: string) => finish(id)],
		['errors', (id: string) => finish(id, true)],
		['is terminated', (id: string) => instances.terminate(testEnv, { id })],
		['is deleted', (id: string) => instances.delete(testEnv, { id, terminate: true })],
	] as const)('gives the slot to the next waiter when a holder %s', async ([, end]) => {
		const tenant = uniqueId('release');
		const [a, b, c] = await createInOrder(tenant, 3);
		expect(await statusOf(c!)).toBe('queued');
		await end(a!);
		await settle(a!);
		await until(() => running(c!), 'the waiter to start');
		expect((await limiterInfo(testEnv, 'limited', tenant)).holders.sort()).toEqual([b!, c!].sort());
	});

	it('does not leak the slot of a holder whose process died: its release is retried until the limiter has it', async () => {
		const tenant = uniqueId('crash');
		const [a, , c] = await createInOrder(tenant, 3);
		limiterFaults.failReleases = 1; // the release is refused once ...
		await finish(a!);
		await settle(a!);
		expect(await statusOf(a!)).toBe('completed');
		expect(limiterFaults.failReleases).toBe(0);
		expect((await limiterInfo(testEnv, 'limited', tenant)).holders).toContain(a!);
		expect(await statusOf(c!)).toBe('queued');
		await abortAllDurableObjects(); // ... and the process dies before its retry
		advanceClock(2_000);
		await fireAlarm(a!); // the alarm retries the release
		await until(() => running(c!), 'the waiter to start');
		const history = await instances.history(testEnv, { id: a! });
		expect(history.events.at(-1)).toMatchObject({ kind: 'slot.released', key: tenant });
	});

	it('keeps the slot of a holder that crashed mid-step, and the holder runs on after the alarm', async () => {
		const tenant = uniqueId('hang');
		const a = uniqueId('hang-a');
		await LimitedWorkflow.create(testEnv, { id: a, payload: { tenant, hang: true } });
		await until(async () => (await statusOf(a)) === 'running', 'the hanging step to start');
		const [b, c] = await createInOrder(tenant, 2);
		await abortAllDurableObjects();
		advanceClock(60_000);
		await fireAlarm(a);
		await until(() => running(a), 'the holder to run on');
		expect(await statusOf(b!)).toBe('waiting');
		expect(await statusOf(c!)).toBe('queued');
		await finish(a);
		await settle(a);
		await until(() => running(c!), 'the waiter to start');
	});

	it('takes a terminated queued instance out of the queue: it never starts, the next waiter does', async () => {
		const tenant = uniqueId('leave');
		const [a, , c, d] = await createInOrder(tenant, 4);
		expect(await instances.terminate(testEnv, { id: c! })).toBe('terminated');
		await settle(c!);
		expect((await limiterInfo(testEnv, 'limited', tenant)).waiting).toEqual([d!]);
		await finish(a!);
		await settle(a!);
		await until(() => running(d!), 'the next waiter to start');
		expect(await statusOf(c!)).toBe('terminated');
		expect((await instances.steps(testEnv, { id: c! })).items).toEqual([]);
	});

	it('gives the slot to the next waiter when it is granted to a terminated instance whose release has not reached the limiter', async () => {
		advanceClock(86_400_000); // every alarm set from here on is a day away: only the grant can move the slot
		const tenant = uniqueId('declined');
		const [a, , c, d] = await createInOrder(tenant, 4);
		limiterFaults.failReleases = 1; // c's release is refused; its retry waits for its alarm
		const terminated = await api('POST', `/workflows/${c}/terminate`);
		expect([terminated.status, terminated.json.status]).toEqual([200, 'terminated']);
		await settle(c!);
		expect(limiterFaults.failReleases).toBe(0);
		expect((await limiterInfo(testEnv, 'limited', tenant)).waiting).toEqual([c!, d!]);
		await finish(a!); // a's slot is granted to c, which declines it
		await settle(a!);
		await until(() => running(d!), 'the next waiter to start');
		expect(await statusOf(c!)).toBe('terminated');
		expect((await instances.steps(testEnv, { id: c! })).items).toEqual([]);
		expect((await limiterInfo(testEnv, 'limited', tenant)).holders).not.toContain(c!);
	});

	it('refuses to pause a queued instance (terminate takes it out of the queue)', async () => {
		const [, , c] = await createInOrder(uniqueId('pause'), 3);
		await expect(instances.pause(testEnv, { id: c! })).rejects.toMatchObject({ code: ErrorCode.InvalidState });
	});

	it('frees the storage of a key nobody holds or waits for, and queues on it again as before', async () => {
		const tenant = uniqueId('idle');
		const limiter = testEnv.WORKFLOW_RUNNER.get(testEnv.WORKFLOW_RUNNER.idFromName(limiterName('limited', tenant)));
		const tables = () => runInDurableObject(limiter, (_, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").one().n);
		const [a, b] = await createInOrder(tenant, 2);
		expect(await tables()).toBeGreaterThan(0);
		for (const id of [a!, b!]) await finish(id), await settle(id);
		await until(async () => (await tables()) === 0, 'the idle limiter to free its storage');
		expect(await limiterInfo(testEnv, 'limited', tenant)).toEqual({ limit: 2, holders: [], waiting: [] });
		const again = await createInOrder(tenant, 3);
		expect(await Promise.all(again.map(statusOf))).toEqual(['waiting', 'waiting', 'queued']);
		expect(await limiterInfo(testEnv, 'limited', tenant)).toMatchObject({ holders: again.slice(0, 2), waiting: [again[2]] });
	});

	it('refuses a create whose concurrency key cannot be computed, storing nothing', async () => {
		await expect(LimitedWorkflow.create(testEnv, { id: uniqueId('nokey'), payload: {} as { tenant: string } })).rejects.toMatchObject({ code: ErrorCode.InvalidPayload });
	});
});
