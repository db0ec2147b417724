import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/client/index-client';
import { instances } from '../../src/client/instance-client';
import { unwrap } from '../../src/client/rpc';
import { rebalance } from '../../src/client/rebalance';
import { defineRegistry } from '../../src/engine/definition/registry';
import { ShortLivedWorkflow } from '../worker/workflows';
import { retentionSlotMs, slotEnd } from '../../src/engine/lifecycle/retention-sweep';
import { shardIndex } from '../../src/engine/index/shard';
import { WATCHDOG_MS } from '../../src/engine/support/timing';
import { shardName } from '../../src/engine/object-names';
import { api } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId } from '../helpers';
import { storedParts } from '../stored-parts';
import { testRegistry } from '../worker/index';
import { indexFaults } from '../worker/probes';

// A compact instance's retention is run by its index shard (docs/decisions.md "Retention owned by the
// index shard"): the type 'short-lived' keeps completed runs 1 hour (a 6-minute slot), errored 2 hours.
const TYPE = 'short-lived';
const SHARDS = 2;
const HOUR = 3_600_000;

afterEach(() => {
	resetClock();
	indexFaults.failWrites = 0;
});

/** `n` new ids that land in shard 0 of the type. */
function idsInShardZero(n: number, prefix: string): string[] {
	const ids: string[] = [];
	while (ids.length < n) {
		const id = uniqueId(prefix);
		if (shardIndex(id, SHARDS) === 0) ids.push(id);
	}
	return ids;
}

const shard0 = () => stub(shardName(TYPE, 0));

/** Counts the shard's `setAlarm` calls from now on (its object reads `ctx.storage` anew at each call). */
async function countShardAlarmWrites(): Promise<void> {
	await runInDurableObject(shard0(), (_, state) => {
		const storage = state.storage as DurableObjectStorage & { __alarmWrites?: number[] };
		const writes: number[] = [];
		storage.__alarmWrites = writes;
		const set = storage.setAlarm.bind(storage);
		storage.setAlarm = (at, options) => {
			writes.push(Number(at));
			return set(at, options);
		};
	});
}

const shardAlarmWrites = () => runInDurableObject(shard0(), (_, state) => (state.storage as DurableObjectStorage & { __alarmWrites?: number[] }).__alarmWrites ?? []);
const shardAlarm = () => runInDurableObject(shard0(), (_, state) => state.storage.getAlarm());

async function finished(id: string, payload: Record<string, unknown> = { n: 2 }) {
	await instances.create(testEnv, { type: TYPE, id, payload });
	await settle(id);
	return instances.status(testEnv, { id });
}

async function leftovers(id: string) {
	return runInDurableObject(stub(id), async (_, state) => ({ tables: storedParts(state.storage), alarm: await state.storage.getAlarm() }));
}

async function listedIds(): Promise<string[]> {
	const page = await new IndexClient(testEnv, testRegistry).list({ type: TYPE, limit: 1000 });
	return page.items.map((i) => i.id);
}

describe('retention run by the index shard', () => {
	it('a finished instance sets no retention alarm; one shard alarm per slot expires every run in it, archived first, when the retention runs out', async () => {
		const ids = idsInShardZero(3, 'shard-ret');
		await countShardAlarmWrites();
		const statuses = [];
		for (const id of ids) statuses.push(await finished(id));
		for (const s of statuses) {
			expect(s.status).toBe('completed');
			// The instance keeps at most its backstop, which fires once and finds nothing.
			const { alarm } = await leftovers(s.id);
			if (alarm !== null) expect(alarm).toBeLessThanOrEqual(s.updatedAt + WATCHDOG_MS);
		}
		// One alarm write for the three runs: the first run's slot; a later run's slot is no earlier, so its alarm stands.
		const first = slotEnd(statuses[0]!.updatedAt + HOUR, HOUR);
		expect(retentionSlotMs(HOUR)).toBe(HOUR / 10);
		expect(await shardAlarmWrites()).toEqual([first]);
		expect(await shardAlarm()).toBe(first);

		// Early (the retention has not run out): the alarm deletes nothing.
		await runDurableObjectAlarm(shard0());
		for (const id of ids) expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'completed' });
		expect(await listedIds()).toEqual(expect.arrayContaining(ids));

		advanceClock(HOUR + retentionSlotMs(HOUR));
		expect(await runDurableObjectAlarm(shard0())).toBe(true);
		for (const id of ids) {
			expect(await leftovers(id)).toEqual({ tables: [], alarm: null });
			const archived = await api('GET', `/workflows/${id}`);
			expect(archived.status).toBe(200);
			expect(archived.json).toMatchObject({ id, status: 'completed', output: 4, archived: true });
		}
		const listed = await listedIds();
		for (const id of ids) expect(listed).not.toContain(id);
		// Nothing finished is left in the shard: no alarm for it.
		expect(await shardAlarm()).toBeNull();
	});

	it('keeps each status its own time (errored: 2 hours) and expires only what ran out', async () => {
		const [done, failed] = idsInShardZero(2, 'shard-ret-mix');
		const completed = await finished(done!);
		const errored = await finished(failed!, { n: 1, fail: true });
		expect(errored.status).toBe('errored');
		expect(await shardAlarm()).toBe(slotEnd(completed.updatedAt + HOUR, HOUR));
		advanceClock(HOUR + retentionSlotMs(HOUR));
		await runDurableObjectAlarm(shard0());
		expect((await api('GET', `/workflows/${done}`)).json).toMatchObject({ archived: true });
		expect((await api('GET', `/workflows/${failed}`)).json).toMatchObject({ status: 'errored' });
		expect(await listedIds()).toContain(failed);
		// Re-armed for the errored run's slot.
		expect(await shardAlarm()).toBe(slotEnd(errored.updatedAt + 2 * HOUR, 2 * HOUR));
	});

	it('a kill -9 between the instance starting its deletion and the entry leaving the shard loses nothing and deletes nothing early', async () => {
		const [id] = idsInShardZero(1, 'shard-ret-crash');
		const status = await finished(id!);
		advanceClock(HOUR + retentionSlotMs(HOUR));
		// The instance begins its deletion (durable) and writes its archive; the shard refuses the removal.
		indexFaults.failWrites = 1;
		await runDurableObjectAlarm(shard0());
		expect((await leftovers(id!)).tables).toContain('deletion');
		await abortAllDurableObjects(); // every object dies here

		// Nothing lost: the run is readable (from its archive) and still listed until the removal lands.
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ id, status: 'completed', output: 4, archived: true });
		expect(await listedIds()).toContain(id);
		// The instance's own alarm resumes the deletion; the entry leaves once the instance removed it.
		await fireAlarm(id!);
		expect(await leftovers(id!)).toEqual({ tables: [], alarm: null });
		expect(await listedIds()).not.toContain(id);
		expect(status.status).toBe('completed');
	});

	it('a shard asked about an instance that is already gone (or still deleting) makes its entry a deletion tombstone, never touching a newer entry', async () => {
		const [id] = idsInShardZero(1, 'shard-ret-orphan');
		const status = await finished(id!);
		const entry = (await instances.currentIndexEntry(testEnv, { id: id! }))!;
		expect((await api('DELETE', `/workflows/${id}`)).status).toBe(200);
		// A stale copy of the finished entry comes back (a late rebalance copy, say) and is refused by the tombstone;
		// an orphan written where none was (another id) is what the sweep meets.
		const orphan = { ...entry, id: idsInShardZero(1, 'shard-ret-ghost')[0]! };
		await unwrap(shard0().indexWrite([orphan]));
		advanceClock(HOUR + retentionSlotMs(HOUR));
		await runDurableObjectAlarm(shard0());
		const listed = await listedIds();
		expect(listed).not.toContain(orphan.id);
		expect(listed).not.toContain(id);
		expect(status.status).toBe('completed');
	});

	it('a rebalance moves the duty with the entry: the shard it lands in arms its alarm and expires the run', async () => {
		const id = (() => {
			for (;;) {
				const candidate = uniqueId('shard-ret-moved');
				if (shardIndex(candidate, SHARDS) === 1) return candidate;
			}
		})();
		await finished(id);
		const entry = (await instances.currentIndexEntry(testEnv, { id }))!;
		// As if the entry had been delivered under a one-shard layout: in shard 0, not yet in its owner, shard 1.
		await runInDurableObject(stub(shardName(TYPE, 1)), async (_, state) => {
			state.storage.sql.exec('DELETE FROM index_entries WHERE id = ?', id);
			await state.storage.deleteAlarm();
		});
		await unwrap(shard0().indexWrite([entry]));
		await abortAllDurableObjects(); // the shards forget the alarm times they remembered
		const owner = stub(shardName(TYPE, 1));
		expect(await runInDurableObject(owner, (_, state) => state.storage.getAlarm())).toBeNull();

		const resized = defineRegistry({ [TYPE]: { workflow: ShortLivedWorkflow, shards: SHARDS, previousShards: 1, retention: { completed: '1 hour' } } });
		for (let cursor: string | null = null, i = 0; i < 10; i++) {
			const progress = await rebalance(testEnv, resized, TYPE, { cursor });
			if (progress.done) break;
			cursor = progress.cursor;
		}
		expect(await runInDurableObject(owner, (_, state) => state.storage.getAlarm())).toBe(slotEnd(entry.updatedAt + HOUR, HOUR));
		advanceClock(HOUR + retentionSlotMs(HOUR));
		await runDurableObjectAlarm(owner);
		expect(await leftovers(id)).toEqual({ tables: [], alarm: null });
		expect(await listedIds()).not.toContain(id);
	});

	it('after a rollback consumed the shard\'s alarm (a build without the sweep), the next finished run re-arms it for the oldest run too', async () => {
		const [older, newer] = idsInShardZero(2, 'shard-ret-rollback');
		const first = await finished(older!);
		// The build rolled back to fires the shard's alarm and does nothing with it: no alarm is left.
		await runInDurableObject(shard0(), (_, state) => state.storage.deleteAlarm());
		await abortAllDurableObjects();
		advanceClock(HOUR / 2); // the next run finishes in a later slot
		await finished(newer!);
		expect(await shardAlarm()).toBe(slotEnd(first.updatedAt + HOUR, HOUR));
		advanceClock(HOUR / 2 + retentionSlotMs(HOUR));
		await runDurableObjectAlarm(shard0());
		expect(await leftovers(older!)).toEqual({ tables: [], alarm: null });
		expect((await api('GET', `/workflows/${newer}`)).json).toMatchObject({ status: 'completed' });
	});

	it('an instance refuses a retention delete that does not name it, or before its retention ran out, and changes nothing', async () => {
		const [id] = idsInShardZero(1, 'shard-ret-refuse');
		const status = await finished(id!);
		const only = { status: ['completed'], createdBefore: status.createdAt + 1 };
		const rpc = stub(id!) as unknown as { deleteInstance(input: unknown): Promise<{ ok: boolean; value?: unknown; error?: { code: string } }> };
		expect(await rpc.deleteInstance({ id, reason: 'retention' })).toMatchObject({ ok: false, error: { code: 'INVALID_QUERY' } });
		expect(await rpc.deleteInstance({ id, reason: 'retention', only })).toMatchObject({ ok: true, value: { id, deleted: false } });
		// Another incarnation's entry (created later) does not name this one.
		advanceClock(HOUR + 1);
		expect(await rpc.deleteInstance({ id, reason: 'retention', only: { status: ['completed'], createdBefore: status.createdAt } })).toMatchObject({ ok: true, value: { deleted: false } });
		expect((await api('GET', `/workflows/${id}`)).json).toMatchObject({ status: 'completed' });
		expect(await rpc.deleteInstance({ id, reason: 'retention', only })).toMatchObject({ ok: true, value: { id, deleted: true } });
		expect(await leftovers(id!)).toEqual({ tables: [], alarm: null });
	});
});
