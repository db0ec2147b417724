import { runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/client/index-client';
import { instances } from '../../src/client/instance-client';
import { reconcile } from '../../src/client/reconcile';
import { rebalance } from '../../src/client/rebalance';
import { ErrorCode } from '../../src/engine/support/errors';
import { defineRegistry } from '../../src/engine/definition/registry';
import { PaymentWorkflow } from '../../examples/demo/workflows/payment-workflow';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { shardIndex } from '../../src/engine/index/shard';
import { shardName } from '../../src/engine/object-names';
import { api, apiWith } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId } from '../helpers';
import { testRegistry } from '../worker/index';
import { indexFaults } from '../worker/probes';

afterEach(() => {
	resetClock();
	indexFaults.failWrites = 0;
});

const SHARDS = 4; // payment's shards in the test registry

async function createPayments(prefix: string, n: number): Promise<string[]> {
	const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
	for (const id of ids) await instances.create(testEnv, { type: 'payment', id, payload: { amount: 1, currency: 'EUR' } });
	await Promise.all(ids.map(settle));
	return ids;
}

const shardOf = (id: string) => stub(shardName('payment', shardIndex(id, SHARDS)));

/** Edits a shard row behind the engine's back, as corruption or a lost write would. */
async function corrupt(id: string, edit: 'older' | 'other-status' | 'delete') {
	await runInDurableObject(shardOf(id), (_, state) => {
		if (edit === 'delete') state.storage.sql.exec('DELETE FROM index_entries WHERE id = ?', id);
		else if (edit === 'older') state.storage.sql.exec(`UPDATE index_entries SET version = version - 1, status = 'running' WHERE id = ?`, id);
		else state.storage.sql.exec(`UPDATE index_entries SET status = 'running' WHERE id = ?`, id);
	});
}

async function listed(id: string): Promise<IndexEntry | undefined> {
	const result = await shardOf(id).indexScan({ afterId: '', limit: 1000 });
	if (!result.ok) throw new Error(result.error.message);
	return result.value.find((e) => e.id === id);
}

/** Runs a whole reconcile pass through the REST API in batches of `batchSize`; returns the summed counts. */
async function reconcileFully(batchSize: number) {
	const total = { calls: 0, scanned: 0, unchanged: 0, repaired: 0, removed: 0, ahead: 0, unreachable: 0 };
	let cursor: string | null = null;
	for (let i = 0; i < 200; i++) {
		const { status, json } = await api('POST', '/admin/types/payment/reconcile', { cursor, batchSize });
		expect(status, JSON.stringify(json)).toBe(200);
		total.calls++;
		for (const key of ['scanned', 'unchanged', 'repaired', 'removed', 'ahead', 'unreachable'] as const) total[key] += json[key];
		if (json.done) return total;
		cursor = json.cursor;
	}
	throw new Error('reconcile did not finish');
}

describe('delivery backlog in GET /types', () => {
	it('counts instances whose delivery failed, with the age of the oldest, until their deliveries succeed', async () => {
		const before = (await api('GET', '/types')).json.types.find((t: { type: string }) => t.type === 'payment').backlog;
		indexFaults.failWrites = 1_000;
		const ids = await createPayments(uniqueId('behind'), 3);
		advanceClock(5_000);

		const during = (await api('GET', '/types')).json.types.find((t: { type: string }) => t.type === 'payment').backlog;
		expect(during.pending).toBe(before.pending + 3);
		expect(during.oldestAgeMs).toBeGreaterThanOrEqual(5_000);
		if (before.pending === 0) expect(during.oldest.map((o: { id: string }) => o.id).sort()).toEqual([...ids].sort());

		indexFaults.failWrites = 0;
		advanceClock(10 * 60_000);
		for (const id of ids) await fireAlarm(id);
		const after = (await api('GET', '/types')).json.types.find((t: { type: string }) => t.type === 'payment').backlog;
		expect(after.pending).toBe(before.pending);
		for (const id of ids) expect(await listed(id)).toMatchObject({ status: 'waiting' });
	});

	it('reports an empty backlog for a type whose deliveries never failed, without creating its object', async () => {
		const { json } = await api('GET', '/types');
		expect(json.types.find((t: { type: string }) => t.type === 'inbox').backlog).toEqual({ pending: 0, oldestAgeMs: null, oldest: [] });
		const tables = await runInDurableObject(stub('__backlog:inbox'), (_, state) =>
			state.storage.sql.exec(`SELECT name FROM sqlite_master WHERE type = 'table'`).toArray(),
		);
		expect(tables).toEqual([]);
	});

	it('a backlog object refuses workflow calls', async () => {
		expect(await stub('__backlog:payment').describe()).toMatchObject({ ok: false, error: { code: ErrorCode.WrongRole } });
	});
});

describe('reconcile and reindex', () => {
	it('repairs stale entries and removes orphans in resumable batches; a second pass repairs nothing', async () => {
		const ids = await createPayments(uniqueId('heal'), 12);
		await reconcileFully(1000); // start from a clean index whatever other tests left behind

		const [older1, older2, otherStatus, lost] = ids as [string, string, string, string];
		await corrupt(older1, 'older');
		await corrupt(older2, 'older');
		await corrupt(otherStatus, 'other-status');
		await corrupt(lost, 'delete');
		const ghosts = [uniqueId('ghost'), uniqueId('ghost')];
		for (const id of ghosts) {
			await shardOf(id).indexWrite([{ id, type: 'payment', status: 'running', createdAt: 1, updatedAt: 2, version: 3 }]);
		}

		const first = await reconcileFully(5);
		expect(first.calls).toBeGreaterThan(2);
		expect(first).toMatchObject({ repaired: 3, removed: 2, ahead: 0, unreachable: 0 });
		for (const id of [older1, older2, otherStatus]) {
			const truth = await instances.status(testEnv, { id });
			expect(await listed(id)).toMatchObject({ status: 'waiting', version: truth.version });
		}
		for (const id of ghosts) expect(await listed(id)).toBeUndefined();
		// Reconcile repairs what the shards list: an entry lost from its shard stays lost.
		expect(await listed(lost)).toBeUndefined();

		const second = await reconcileFully(5);
		expect(second).toMatchObject({ repaired: 0, removed: 0, scanned: first.scanned - ghosts.length });
	});

	it('reindex brings back an entry its shard lost', async () => {
		const [id] = await createPayments(uniqueId('lost'), 1);
		await corrupt(id!, 'delete');
		const page = await new IndexClient(testEnv, testRegistry).list({ type: 'payment', status: ['waiting'], limit: 1000 });
		expect(page.items.some((e) => e.id === id)).toBe(false);

		const { status, json } = await api('POST', `/admin/workflows/${id}/reindex`);
		expect(status, JSON.stringify(json)).toBe(200);
		const truth = await instances.status(testEnv, { id: id! });
		expect(json).toEqual({ id, type: 'payment', version: truth.version, delivered: true });
		expect(await listed(id!)).toMatchObject({ status: 'waiting', version: truth.version });
	});

	it('reindex while the shard refuses writes reports it undelivered and leaves the retry to the alarm', async () => {
		const [id] = await createPayments(uniqueId('refused'), 1);
		await corrupt(id!, 'delete');
		indexFaults.failWrites = 1_000;
		const { json } = await api('POST', `/admin/workflows/${id}/reindex`);
		expect(json).toMatchObject({ id, delivered: false });
		indexFaults.failWrites = 0;
		advanceClock(10 * 60_000);
		await fireAlarm(id!);
		expect(await listed(id!)).toMatchObject({ status: 'waiting' });
	});

	it('the instance RPC for reconcile answers null for an unknown id and writes nothing', async () => {
		const id = uniqueId('nobody');
		expect(await stub(id).currentIndexEntry()).toEqual({ ok: true, value: null });
		const tables = await runInDurableObject(stub(id), (_, state) => state.storage.sql.exec(`SELECT name FROM sqlite_master WHERE type = 'table'`).toArray());
		expect(tables).toEqual([]);
	});

	it.for([
		['an unknown type', '/admin/types/nope/reconcile', {}, 400, ErrorCode.UnknownType],
		['a forged cursor', '/admin/types/payment/reconcile', { cursor: 'not-a-cursor' }, 400, ErrorCode.InvalidCursor],
		['a batch size of 0', '/admin/types/payment/reconcile', { batchSize: 0 }, 400, 'INVALID_REQUEST'],
		['a batch size that is not a number', '/admin/types/payment/reconcile', { batchSize: 'ten' }, 400, 'INVALID_REQUEST'],
		['a missing instance', '/admin/workflows/never-created-x/reindex', undefined, 404, ErrorCode.NotFound],
		['a reserved id', '/admin/workflows/__index:payment:0/reindex', undefined, 400, ErrorCode.ReservedId],
	] as const)('refuses %s with a JSON error', async ([, path, body, status, code]) => {
		const response = await api('POST', path, body);
		expect(response.status).toBe(status);
		expect(response.json).toMatchObject({ error: { code, message: expect.any(String) } });
	});

	it('admin routes follow the auth rules: a token is required when set, and production without one refuses them', async () => {
		for (const path of ['/admin/types/payment/reconcile', '/admin/workflows/x-1/reindex']) {
			expect(await apiWith({ API_TOKEN: 'secret' }, 'POST', path)).toMatchObject({ status: 401, json: { error: { code: 'UNAUTHORIZED' } } });
			expect(await apiWith({ SHARDFLOW_ENV: 'production' }, 'POST', path)).toMatchObject({ status: 403, json: { error: { code: 'AUTH_NOT_CONFIGURED' } } });
		}
	});

	it('refuses a rebalance cursor', async () => {
		await createPayments(uniqueId('cur'), 1);
		const progress = await rebalance(testEnv, testRegistry, 'payment', { batchSize: 1 });
		await expect(reconcile(testEnv, testRegistry, 'payment', { cursor: progress.cursor })).rejects.toMatchObject({ code: ErrorCode.InvalidCursor });
	});

	// Last in the file: it writes payment entries into shards 4-7, which the test registry never reads.
	it('while resizing, repairs a stale copy by writing its home shard and retiring the copy', async () => {
		const resizing = defineRegistry({ payment: { workflow: PaymentWorkflow, shards: 8, previousShards: SHARDS } });
		const ids = await createPayments(uniqueId('moving'), 12);
		const id = ids.find((i) => shardIndex(i, 8) !== shardIndex(i, SHARDS))!;
		await corrupt(id, 'older');
		let cursor: string | null = null;
		let repaired = 0;
		for (let i = 0; i < 100; i++) {
			const progress = await reconcile(testEnv, resizing, 'payment', { cursor, batchSize: 50 });
			repaired += progress.repaired;
			if (progress.done) break;
			cursor = progress.cursor;
		}
		expect(repaired).toBe(1);
		const truth = await instances.status(testEnv, { id });
		const home = await stub(shardName('payment', shardIndex(id, 8))).indexVersions([id]);
		expect(home).toEqual({ ok: true, value: { [id]: truth.version } });
		expect(await listed(id)).toBeUndefined();
		const page = await new IndexClient(testEnv, resizing).list({ type: 'payment', limit: 1000 });
		expect(page.items.filter((e) => e.id === id)).toMatchObject([{ status: 'waiting', version: truth.version }]);
	});
});
