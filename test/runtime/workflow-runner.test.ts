import { evictDurableObject, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/client/index-client';
import { instances } from '../../src/client/instance-client';
import { ErrorCode } from '../../src/engine/support/errors';
import { shardIndex } from '../../src/engine/index/shard';
import { shardName } from '../../src/engine/object-names';
import { PaymentWorkflow } from '../../examples/demo/workflows/payment-workflow';
import { registry } from '../../examples/demo/workflows/registry';
import { TestWorkflow } from '../../examples/demo/workflows/test-workflow';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId } from '../helpers';

afterEach(resetClock);

describe('WorkflowRunner', () => {
	it('resumes after an eviction between steps without re-running completed steps', async () => {
		const id = uniqueId('evict');
		await TestWorkflow.create(testEnv, { id, payload: { name: 'Ada' } });
		await settle(id);
		const greetBefore = (await TestWorkflow.status(testEnv, id)).steps[0]!;
		await evictDurableObject(stub(id));
		advanceClock(1000);
		await fireAlarm(id);
		const status = await TestWorkflow.status(testEnv, id);
		expect(status).toMatchObject({ status: 'completed', output: { greeting: 'Hello, Ada!' } });
		expect(status.steps[0]).toEqual(greetBefore);
	});

	it('keeps a buffered event across an eviction and delivers it once', async () => {
		const id = uniqueId('evict-event');
		await PaymentWorkflow.create(testEnv, { id, payload: { amount: 1, currency: 'EUR' } });
		await PaymentWorkflow.sendEvent(testEnv, { id, event: 'approval', payload: { approved: true, reviewer: 'eve' } });
		await evictDurableObject(stub(id));
		await fireAlarm(id);
		await settle(id);
		const status = await PaymentWorkflow.status(testEnv, id);
		expect(status).toMatchObject({ status: 'completed', output: { status: 'charged', reviewer: 'eve' } });
	});

	it('answers NOT_FOUND for an unknown id without creating any storage', async () => {
		const id = uniqueId('ghost');
		await expect(instances.status(testEnv, { id })).rejects.toMatchObject({ code: ErrorCode.NotFound });
		const tables = await runInDurableObject(stub(id), (_, state) => state.storage.sql.exec(`SELECT name FROM sqlite_master WHERE type = 'table'`).toArray());
		expect(tables).toEqual([]);
	});

	it('leaves a new object without storage when its create is refused', async () => {
		const id = uniqueId('refused');
		await expect(PaymentWorkflow.create(testEnv, { id, payload: { amount: -1, currency: 'EUR' } })).rejects.toMatchObject({ code: ErrorCode.InvalidPayload });
		const tables = await runInDurableObject(stub(id), (_, state) => state.storage.sql.exec(`SELECT name FROM sqlite_master WHERE type = 'table'`).toArray());
		expect(tables).toEqual([]);
	});

	it('refuses index calls on a workflow instance and workflow calls on an index shard', async () => {
		const id = uniqueId('role');
		await TestWorkflow.create(testEnv, { id, payload: { name: 'x' } });
		const asShard = stub(id);
		expect(await asShard.indexCounts()).toMatchObject({ ok: false, error: { code: ErrorCode.WrongRole } });
		const shard = stub(shardName('test', 0));
		expect(await shard.create({ id: shardName('test', 0), type: 'test', payload: { name: 'x' } })).toMatchObject({ ok: false });
		expect(await shard.describe()).toMatchObject({ ok: false, error: { code: ErrorCode.WrongRole } });
	});

	it('refuses every call on an object without a name: its role cannot be known', async () => {
		const unnamed = testEnv.WORKFLOW_RUNNER.get(testEnv.WORKFLOW_RUNNER.newUniqueId());
		expect(await unnamed.describe()).toMatchObject({ ok: false, error: { code: ErrorCode.WrongRole } });
		expect(await unnamed.indexCounts()).toMatchObject({ ok: false, error: { code: ErrorCode.WrongRole } });
	});

	it('refuses reserved ids from the typed helpers before any object is touched', async () => {
		await expect(TestWorkflow.create(testEnv, { id: '__index:test:0', payload: { name: 'x' } })).rejects.toMatchObject({ code: ErrorCode.ReservedId });
	});

	it('generates a time-ordered UUIDv7 id when create gets none', async () => {
		const { id } = await TestWorkflow.create(testEnv, { payload: { name: 'anon' } });
		expect(id).toMatch(/^[0-9a-f-]{36}$/);
		expect((await TestWorkflow.status(testEnv, id)).type).toBe('test');
	});

	it('writes every transition to the owning index shard, newest version wins', async () => {
		const id = uniqueId('indexed');
		await PaymentWorkflow.create(testEnv, { id, payload: { amount: 3, currency: 'GBP' } });
		await settle(id);
		const shard = shardIndex(id, 4);
		const rows = await stub(shardName('payment', shard)).indexVersions([id]);
		const status = await PaymentWorkflow.status(testEnv, id);
		expect(rows).toEqual({ ok: true, value: { [id]: status.version } });
		const page = await new IndexClient(testEnv, registry).list({ type: 'payment', status: ['waiting'], limit: 1000 });
		expect(page.items.find((item) => item.id === id)).toMatchObject({ status: 'waiting', type: 'payment' });
	});
});

describe('the production WorkflowRunner class', () => {
	it('has no test hook reachable over RPC: settle exists only on the test Worker', async () => {
		const { WorkflowRunner } = await import('../../examples/demo/index');
		const methods = new Set<string>();
		for (let proto = WorkflowRunner.prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
			for (const name of Object.getOwnPropertyNames(proto)) methods.add(name);
		}
		expect(methods.has('settle')).toBe(false);
		expect(methods.has('describe')).toBe(true); // a real RPC method, for contrast
	});
});
