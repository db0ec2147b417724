import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/client/index-client';
import { instances } from '../../src/client/instance-client';
import { encodeBase64UrlJson } from '../../src/engine/support/base64url-json';
import { ErrorCode } from '../../src/engine/support/errors';
import { advanceClock, resetClock, settle, testEnv } from '../helpers';
import { testRegistry } from '../worker/index';
import { testClock } from '../worker/test-clock';
import { api } from './helpers';

const TYPE = 'purgeable';
const bucket = (env as unknown as { ARCHIVE: R2Bucket }).ARCHIVE;

afterEach(resetClock);

async function create(ids: string[], payload: (i: number) => { n: number; fail?: boolean }) {
	for (const [i, id] of ids.entries()) await instances.create(testEnv, { type: TYPE, id, payload: payload(i) });
	await Promise.all(ids.map(settle));
}

async function listed(): Promise<Map<string, string>> {
	const page = await new IndexClient(testEnv, testRegistry).list({ type: TYPE, limit: 1000 });
	return new Map(page.items.map((i) => [i.id, i.status]));
}

/** A whole purge pass through the REST API, batch by batch; the summed counts and the number of calls. */
async function purgeFully(body: Record<string, unknown>) {
	const total = { calls: 0, scanned: 0, matched: 0, deleted: 0, skipped: 0, failed: 0 };
	let cursor: string | null = null;
	for (let i = 0; i < 100; i++) {
		const { status, json } = await api('POST', `/admin/types/${TYPE}/purge`, { ...body, cursor });
		expect(status, JSON.stringify(json)).toBe(200);
		total.calls++;
		for (const key of ['scanned', 'matched', 'deleted', 'skipped', 'failed'] as const) total[key] += json[key];
		if (json.done) return total;
		expect(json.cursor).toEqual(expect.any(String));
		cursor = json.cursor;
	}
	throw new Error('purge did not finish');
}

describe('POST /admin/types/:type/purge', () => {
	it('deletes the matching finished instances in resumable batches, reporting progress, and leaves the rest', async () => {
		const old = Array.from({ length: 12 }, (_, i) => `purge-old-${i}`);
		await create(old, (i) => ({ n: i, fail: i % 3 === 0 })); // 4 errored, 8 completed
		advanceClock(60_000);
		const cutoff = testClock.now();
		advanceClock(60_000);
		const recent = ['purge-new-0', 'purge-new-1'];
		await create(recent, (i) => ({ n: i }));

		const total = await purgeFully({ status: 'completed', createdBefore: cutoff, batchSize: 5 });
		expect(total).toMatchObject({ matched: 8, deleted: 8, skipped: 0, failed: 0 });
		expect(total.calls).toBeGreaterThan(2);
		const left = await listed();
		expect(old.filter((id) => left.has(id)).map((id) => left.get(id))).toEqual(Array(4).fill('errored'));
		for (const id of recent) expect(left.get(id)).toBe('completed');
		for (const [i, id] of old.entries()) {
			const { status } = await api('GET', `/workflows/${id}`);
			expect(status).toBe(i % 3 === 0 ? 200 : 404);
		}

		// Several statuses, by update time, archived first; a second pass finds nothing more.
		const archived = await purgeFully({ status: ['errored', 'completed'], updatedBefore: cutoff, archive: true });
		expect(archived).toMatchObject({ deleted: 4, failed: 0 });
		expect((await api('GET', `/workflows/${old[0]}`)).json).toMatchObject({ status: 'errored', archived: true });
		expect((await bucket.list({ prefix: `shardflow/workflows/${TYPE}/` })).objects).toHaveLength(4);
		expect(await purgeFully({ status: ['errored', 'completed'], updatedBefore: cutoff })).toMatchObject({ matched: 0, deleted: 0 });
		expect([...(await listed()).keys()].sort()).toEqual(recent);
	});

	it('does not claim a whole pass was deleted when it ends on a cursor it was handed', async () => {
		const shards = testRegistry.get(TYPE).shards;
		const madeUp = encodeBase64UrlJson(['purge', shards - 1, '~~~~']);
		const { status, json } = await api('POST', `/admin/types/${TYPE}/purge`, { status: 'completed', createdBefore: testClock.now(), cursor: madeUp });
		expect(status).toBe(200);
		expect(json).toMatchObject({ done: true, scanned: 0, deleted: 0 });
		expect(json.message).toContain('after the given cursor');
		const fresh = await api('POST', `/admin/types/${TYPE}/purge`, { status: 'completed', createdBefore: 1 });
		expect(fresh.json).toMatchObject({ done: true, message: `pass done: it deleted every listed ${TYPE} instance matching the filter` });
	});

	it('skips an instance the index shows as matching but which no longer matches (restarted since)', async () => {
		const [id] = ['purge-restarted'];
		await create([id!], () => ({ n: 1, fail: true }));
		advanceClock(1000);
		const cutoff = testClock.now();
		await instances.restart(testEnv, { id: id! });
		await settle(id!);
		// The instance is errored again, but changed after the cutoff: the index's copy is overwritten, and
		// even a stale copy would not delete it (the instance checks its own row).
		const total = await purgeFully({ status: 'errored', updatedBefore: cutoff });
		expect(total.deleted).toBe(0);
		expect((await api('GET', `/workflows/${id}`)).status).toBe(200);
	});

	it.for([
		[{ status: 'running', createdBefore: 1 }, 'status'],
		[{ status: 'completed' }, 'createdBefore or updatedBefore'],
		[{ status: [], updatedBefore: 1 }, 'status'],
		[{ status: 'completed', createdBefore: -1 }, 'createdBefore'],
		[{ status: 'completed', createdBefore: 1, cursor: 'forged' }, 'cursor'],
	] as const)('refuses %j with a 400 naming %s', async ([body, what]) => {
		const { status, json } = await api('POST', `/admin/types/${TYPE}/purge`, body);
		expect(status).toBe(400);
		expect(json.error.message).toContain(what);
	});

	it('refuses an unknown type', async () => {
		const { status, json } = await api('POST', '/admin/types/nope/purge', { status: 'completed', createdBefore: 1 });
		expect(status).toBe(400);
		expect(json.error.code).toBe(ErrorCode.UnknownType);
	});
});
