import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/client/index-client';
import { instances } from '../../src/client/instance-client';
import { unwrap } from '../../src/client/rpc';
import { ARCHIVE_CHUNK_BYTES, archivePointerKey } from '../../src/engine/lifecycle/archive';
import { ErrorCode } from '../../src/engine/support/errors';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { shardIndex } from '../../src/engine/index/shard';
import { shardName } from '../../src/engine/object-names';
import { api } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId } from '../helpers';
import { DELETED_TOMBSTONE_GRACE_MS } from '../../src/runtime/index-shard-store';
import { testRegistry } from '../worker/index';
import { indexFaults } from '../worker/probes';
import { storedParts } from '../stored-parts';

const bucket = (env as unknown as { ARCHIVE: R2Bucket }).ARCHIVE;
const TYPE = 'short-lived';
const SHARDS = 2;
const HOUR = 3_600_000;

afterEach(() => {
	resetClock();
	indexFaults.failWrites = 0;
});

async function finished(id = uniqueId('del'), n = 1): Promise<string> {
	await instances.create(testEnv, { type: TYPE, id, payload: { n } });
	await settle(id);
	expect((await instances.status(testEnv, { id })).status).toBe('completed');
	return id;
}

/** What is left of an object's storage: its tables (engine-owned `_cf_` ones aside), its alarm and its size. */
async function leftovers(id: string) {
	return runInDurableObject(stub(id), async (_, state) => ({
		tables: storedParts(state.storage),
		alarm: await state.storage.getAlarm(),
	}));
}

/** The shard row of an id, tombstones included. */
async function shardRow(id: string) {
	return runInDurableObject(stub(shardName(TYPE, shardIndex(id, SHARDS))), (_, state) => {
		try {
			return [...state.storage.sql.exec('SELECT status, version, created_at AS createdAt FROM index_entries WHERE id = ?', id)][0] as
				| { status: string; version: number; createdAt: number }
				| undefined;
		} catch {
			return undefined; // a shard never written has no table
		}
	});
}

async function listedIds(): Promise<string[]> {
	const page = await new IndexClient(testEnv, testRegistry).list({ type: TYPE, limit: 1000 });
	return page.items.map((i) => i.id);
}

/** Every record of the current generation, page by page over HTTP. */
async function allHistory(id: string): Promise<unknown[]> {
	const events: unknown[] = [];
	for (let after = ''; ; ) {
		const { status, json } = await api('GET', `/workflows/${id}/history?limit=1000${after ? `&after=${after}` : ''}`);
		expect(status).toBe(200);
		events.push(...json.events);
		if (json.nextCursor === null) return events;
		after = json.nextCursor;
	}
}

async function archivedKeys(id: string): Promise<string[]> {
	const listing = await bucket.list({ prefix: `shardflow/workflows/${TYPE}/` });
	return listing.objects.map((o) => o.key).filter((k) => k.includes(`/${id}/`));
}

describe('DELETE /workflows/:id', () => {
	it('frees the whole storage and the alarm, removes the index entry, and lets the id be created again', async () => {
		const id = await finished();
		expect(await listedIds()).toContain(id);
		const { status, json } = await api('DELETE', `/workflows/${id}`);
		expect(status).toBe(200);
		expect(json).toEqual({ id, deleted: true });
		expect(await leftovers(id)).toEqual({ tables: [], alarm: null });
		expect((await api('GET', `/workflows/${id}`)).status).toBe(404);
		expect(await listedIds()).not.toContain(id);
		expect(await shardRow(id)).toMatchObject({ status: '__deleted' });
		// The alarms of a deleted instance never fire again.
		expect(await runDurableObjectAlarm(stub(id))).toBe(false);

		const again = await api('POST', '/workflows', { type: TYPE, id, payload: { n: 21 } });
		expect(again.status).toBe(201);
		await settle(id);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'completed', output: 42 });
		expect(await listedIds()).toContain(id);
		expect(await shardRow(id)).toMatchObject({ status: 'completed' });
	});

	it('leaves an object indistinguishable from one never written: no table at all (not even the runtime\'s _cf_ ones) and the same size, one empty SQLite page', async () => {
		const id = await finished(uniqueId('del-bytes'), 50);
		const measure = (name: string) =>
			runInDurableObject(stub(name), (_, state) => ({
				bytes: state.storage.sql.databaseSize,
				schema: [...state.storage.sql.exec('SELECT type, name FROM sqlite_master')],
			}));
		const before = await measure(id);
		// Its tables (the instance role's, but those created on their first write; a compact instance's one key-value
		// table) and 50 steps: several pages, where the deleted object keeps one.
		expect(before.schema.length).toBeGreaterThan(0);
		expect(before.bytes).toBeGreaterThan(2 * 4096);
		expect((await api('DELETE', `/workflows/${id}`)).status).toBe(200);
		const after = await measure(id);
		const never = await measure(uniqueId('never-written'));
		expect(after).toEqual({ bytes: 4096, schema: [] });
		expect(after).toEqual(never);
	});

	it('answers 404 for an unknown id and for a repeated delete', async () => {
		const id = await finished();
		expect((await api('DELETE', `/workflows/${uniqueId('never')}`)).status).toBe(404);
		expect((await api('DELETE', `/workflows/${id}`)).status).toBe(200);
		const repeated = await api('DELETE', `/workflows/${id}`);
		expect(repeated.status).toBe(404);
		expect(repeated.json.error.code).toBe(ErrorCode.NotFound);
		expect(await leftovers(id)).toEqual({ tables: [], alarm: null });
	});

	it('answers 409 for an instance that has not finished, unless terminate=true', async () => {
		const id = uniqueId('del-wait');
		await instances.create(testEnv, { type: 'payment', id, payload: { amount: 1, currency: 'EUR' } });
		await settle(id);
		const refused = await api('DELETE', `/workflows/${id}`);
		expect(refused.status).toBe(409);
		expect(refused.json.error.code).toBe(ErrorCode.InvalidState);
		expect((await api('GET', `/workflows/${id}`)).json.status).toBe('waiting');
		expect((await api('DELETE', `/workflows/${id}?terminate=true`)).status).toBe(200);
		expect(await leftovers(id)).toEqual({ tables: [], alarm: null });
	});

	it.for(['?terminate=yes', '?archive=1'])('refuses %s with a 400', async (query) => {
		const id = await finished();
		const { status, json } = await api('DELETE', `/workflows/${id}${query}`);
		expect(status).toBe(400);
		expect(json.error.code).toBe(ErrorCode.InvalidQuery);
	});

	it('is a typed helper: Workflow.delete(env, id)', async () => {
		const { ShortLivedWorkflow } = await import('../worker/workflows');
		const id = await finished();
		await expect(ShortLivedWorkflow.delete(testEnv, id)).resolves.toEqual({ id, deleted: true });
		await expect(ShortLivedWorkflow.status(testEnv, id)).rejects.toMatchObject({ code: ErrorCode.NotFound });
	});
});

describe('deletion while the index refuses writes', () => {
	it('keeps a minimal deletion until the shard acknowledges the removal, through a crash; the id is refused meanwhile, then free', async () => {
		const id = await finished();
		indexFaults.failWrites = 1;
		expect((await api('DELETE', `/workflows/${id}`)).status).toBe(200);
		expect((await leftovers(id)).tables).toContain('deletion'); // the removal was refused: storage stays
		expect((await api('GET', `/workflows/${id}`)).status).toBe(404);
		const early = await api('POST', '/workflows', { type: TYPE, id, payload: { n: 1 } });
		expect(early.status).toBe(409);
		expect(early.json.error.code).toBe(ErrorCode.InvalidState);

		await abortAllDurableObjects(); // the process dies with the deletion half done
		advanceClock(HOUR / 2);
		await fireAlarm(id);
		expect(await leftovers(id)).toEqual({ tables: [], alarm: null });
		expect(await listedIds()).not.toContain(id);
		expect((await api('POST', '/workflows', { type: TYPE, id, payload: { n: 1 } })).status).toBe(201);
	});
});

describe('the index after a deletion', () => {
	it('never lists a deleted instance again once deliveries settle: a late write of the old incarnation is refused, a new incarnation is kept', async () => {
		const id = await finished();
		const old = (await instances.currentIndexEntry(testEnv, { id }))!;
		await api('DELETE', `/workflows/${id}`);
		const shard = stub(shardName(TYPE, shardIndex(id, SHARDS)));
		// A delivery of the old incarnation that arrives late (a timed-out RPC, a reconcile that read before the delete).
		await unwrap(shard.indexWrite([{ ...old, status: 'running' } satisfies IndexEntry]));
		await unwrap(shard.indexWrite([old]));
		expect(await listedIds()).not.toContain(id);

		await instances.create(testEnv, { type: TYPE, id, payload: { n: 2 } });
		await settle(id);
		const fresh = (await instances.currentIndexEntry(testEnv, { id }))!;
		expect(fresh.createdAt).toBeGreaterThan(old.createdAt);
		expect(fresh.version).toBeLessThanOrEqual(old.version); // versions restart with the incarnation
		// The old incarnation's entry, late again, cannot replace the new one.
		await unwrap(shard.indexWrite([old]));
		expect(await shardRow(id)).toMatchObject({ status: 'completed', version: fresh.version, createdAt: fresh.createdAt });
		const reconciled = await api('POST', `/admin/types/${TYPE}/reconcile`, {});
		expect(reconciled.json).toMatchObject({ repaired: 0, ahead: 0 });
	});

	it('keeps a deletion tombstone 7 days, then the shard collects it with a later removal, and the deleted instance stays unlisted', async () => {
		/** A finished instance whose id lives in shard 0 of the type. */
		const inShardZero = async () => {
			let id = uniqueId('tomb');
			while (shardIndex(id, SHARDS) !== 0) id = uniqueId('tomb');
			return finished(id);
		};
		const first = await inShardZero();
		const second = await inShardZero();
		const third = await inShardZero();
		expect((await api('DELETE', `/workflows/${first}`)).status).toBe(200);
		expect(await shardRow(first)).toMatchObject({ status: '__deleted' });

		// Within the grace period a removal in the same shard keeps it: a late write could still come.
		advanceClock(DELETED_TOMBSTONE_GRACE_MS - 60_000);
		expect((await api('DELETE', `/workflows/${second}`)).status).toBe(200);
		expect(await shardRow(first)).toMatchObject({ status: '__deleted' });

		advanceClock(120_000);
		expect((await api('DELETE', `/workflows/${third}`)).status).toBe(200);
		expect(await shardRow(first)).toBeUndefined();
		expect(await shardRow(second)).toMatchObject({ status: '__deleted' });
		expect(await listedIds()).not.toContain(first);
		const completed = await new IndexClient(testEnv, testRegistry).list({ type: TYPE, status: ['completed'], limit: 1000 });
		expect(completed.items.map((i) => i.id)).not.toContain(first);

		// A rebalance pass collects the rest once they are old enough.
		advanceClock(DELETED_TOMBSTONE_GRACE_MS);
		const pass = await api('POST', `/admin/types/${TYPE}/rebalance`, { batchSize: 1000 });
		expect(pass.status).toBe(200);
		expect(pass.json.tombstonesRemoved.deleted).toBeGreaterThanOrEqual(2);
		expect(await shardRow(second)).toBeUndefined();
		expect(await shardRow(third)).toBeUndefined();

		// The id is free: a new incarnation is listed as itself.
		await instances.create(testEnv, { type: TYPE, id: first, payload: { n: 3 } });
		await settle(first);
		expect(await shardRow(first)).toMatchObject({ status: 'completed' });
		expect(await listedIds()).toContain(first);
	});
});

describe('retention', () => {
	// The table layout's instances expire themselves; a compact one's shard expires it (shard-retention.test.ts).
	it('deletes a finished instance of the table layout by its own alarm when its retention runs out, archived first when a bucket is bound', async () => {
		const id = await finished(uniqueId('layout-table-ret'), 4);
		const { updatedAt } = await instances.status(testEnv, { id });
		expect(await leftovers(id)).toMatchObject({ alarm: updatedAt + HOUR });
		await fireAlarm(id); // early: nothing happens
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'completed' });
		advanceClock(HOUR);
		await fireAlarm(id);
		expect(await leftovers(id)).toEqual({ tables: [], alarm: null });
		expect(await listedIds()).not.toContain(id);
		const archived = await api('GET', `/workflows/${id}`);
		expect(archived.status).toBe(200);
		expect(archived.json).toMatchObject({ id, status: 'completed', output: 8, archived: true });
	});

	it('keeps each status its own time: an errored instance of this type (table layout) stays 2 hours', async () => {
		const id = uniqueId('layout-table-ret-err');
		await instances.create(testEnv, { type: TYPE, id, payload: { n: 1, fail: true } });
		await settle(id);
		const { status, updatedAt } = await instances.status(testEnv, { id });
		expect(status).toBe('errored');
		expect((await leftovers(id)).alarm).toBe(updatedAt + 2 * HOUR);
	});
});

describe('archive', () => {
	it('DELETE ?archive=true writes the record to R2 under a key by type and date, and GET and /history fall back to it', async () => {
		const id = await finished(uniqueId('arch'), 5);
		const live = await api('GET', `/workflows/${id}/history`);
		expect((await api('DELETE', `/workflows/${id}?archive=true`)).status).toBe(200);
		expect(await leftovers(id)).toEqual({ tables: [], alarm: null });
		const keys = await archivedKeys(id);
		expect(keys).toHaveLength(1);
		expect(keys[0]).toMatch(new RegExp(`^shardflow/workflows/${TYPE}/\\d{4}-\\d\\d-\\d\\d/${id}/\\d+\\.json$`));

		const status = await api('GET', `/workflows/${id}`);
		expect(status.json).toMatchObject({ id, type: TYPE, status: 'completed', output: 10, archived: true });
		const history = await api('GET', `/workflows/${id}/history`);
		expect(history.status).toBe(200);
		expect(history.json).toEqual({ ...live.json, archived: true });
		const page = await api('GET', `/workflows/${id}/history?limit=2`);
		expect(page.json.events).toHaveLength(2);
		expect(page.json.nextCursor).toBe('2');
		expect((await api('GET', `/workflows/${id}/history?after=2`)).json.events.map((e: { seq: number }) => e.seq)).toEqual([3, 4]);
		expect((await api('GET', `/workflows/${id}/steps`)).status).toBe(404); // steps are in the history

		// Retrying the archiving delete (after a timeout, a crash, concurrently) keeps the archive.
		expect(await api('DELETE', `/workflows/${id}?archive=true`)).toMatchObject({ status: 404, json: { error: { code: 'NOT_FOUND' } } });
		expect(await archivedKeys(id)).toHaveLength(1);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ archived: true });

		// A plain DELETE of an archived id erases the archive (an erasure request).
		expect((await api('DELETE', `/workflows/${id}`)).status).toBe(200);
		expect(await archivedKeys(id)).toEqual([]);
		expect(await bucket.head(archivePointerKey(id))).toBeNull();
		expect((await api('GET', `/workflows/${id}`)).status).toBe(404);
	});

	it('a crash between the archive write and the deletion loses nothing and duplicates nothing', async () => {
		const id = await finished(uniqueId('arch-crash'), 6);
		indexFaults.failWrites = 1; // the archive is written, the index refuses the removal
		expect((await api('DELETE', `/workflows/${id}?archive=true`)).status).toBe(200);
		expect(await archivedKeys(id)).toHaveLength(1);
		expect((await leftovers(id)).tables).toContain('instance'); // nothing deleted yet
		await abortAllDurableObjects();
		advanceClock(HOUR / 2);
		await fireAlarm(id);
		expect(await leftovers(id)).toEqual({ tables: [], alarm: null });
		expect(await archivedKeys(id)).toHaveLength(1);
		const pointer = await (await bucket.get(archivePointerKey(id)))!.json<{ keys: string[] }>();
		expect(pointer.keys).toHaveLength(1);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ output: 12, archived: true });
	});

	it('writes a history of several chunks and reads it back byte for byte as the live instance answered it', async () => {
		// 12 steps of ~1 MB: a ~12 MB history, more than two chunks of 4 MiB.
		const id = uniqueId('arch-big');
		await instances.create(testEnv, { type: 'big-results', id, payload: { steps: 12, bytes: 1_000_000 } });
		await settle(id);
		const liveStatus = await api('GET', `/workflows/${id}`);
		expect(liveStatus.json).toMatchObject({ status: 'completed', output: 12 });
		const live = await allHistory(id);
		expect(live.length).toBe(1 + 12 * 2 + 1);

		expect((await api('DELETE', `/workflows/${id}?archive=true`)).status).toBe(200);
		expect(await leftovers(id)).toEqual({ tables: [], alarm: null });
		const manifests = (await bucket.list({ prefix: 'shardflow/workflows/big-results/' })).objects.filter((o) => o.key.includes(`/${id}/`));
		expect(manifests).toHaveLength(1);
		const chunks = (await bucket.list({ prefix: 'shardflow/history/big-results/' })).objects.filter((o) => o.key.includes(`/${id}/`));
		expect(chunks.length).toBeGreaterThanOrEqual(3);
		for (const chunk of chunks) expect(chunk.size).toBeLessThanOrEqual(ARCHIVE_CHUNK_BYTES);

		const status = await api('GET', `/workflows/${id}`);
		expect(status.json).toEqual({ ...liveStatus.json, archived: true });
		const archived = await allHistory(id);
		expect(JSON.stringify(archived)).toBe(JSON.stringify(live));
		// A page in the middle, from the chunks that hold it.
		const page = await api('GET', `/workflows/${id}/history?after=10&limit=2`);
		expect(page.json).toMatchObject({ archived: true, nextCursor: '12' });
		expect(page.json.events).toEqual(live.slice(10, 12));

		// Erasure takes the chunks too.
		expect((await api('DELETE', `/workflows/${id}`)).status).toBe(200);
		expect((await bucket.list({ prefix: 'shardflow/history/big-results/' })).objects.filter((o) => o.key.includes(`/${id}/`))).toEqual([]);
		expect((await api('GET', `/workflows/${id}`)).status).toBe(404);
	});

	it('keeps every incarnation of an id, and shows the latest', async () => {
		const id = await finished(uniqueId('arch-twice'), 1);
		await api('DELETE', `/workflows/${id}?archive=true`);
		await finished(id, 2);
		await api('DELETE', `/workflows/${id}?archive=true`);
		expect(await archivedKeys(id)).toHaveLength(2);
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ output: 4, archived: true });
		await api('DELETE', `/workflows/${id}`);
		expect(await archivedKeys(id)).toEqual([]);
	});
});
