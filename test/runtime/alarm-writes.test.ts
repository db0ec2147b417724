import { runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { WATCHDOG_MS } from '../../src/engine/support/timing';
import { resetClock, settle, stub, testEnv, uniqueId } from '../helpers';

afterEach(resetClock);

/**
 * Each `setAlarm()` is billed as a row written (Durable Objects pricing, footnote 3; docs/cost.md), so the alarm
 * writes of a run are part of its cost. The calls are counted on the object's `ctx.storage` (the engine reads it anew
 * at each call), installed before the instance is created.
 */
async function countAlarmWrites(id: string): Promise<void> {
	await runInDurableObject(stub(id), (_, state) => {
		const storage = state.storage as DurableObjectStorage & { __alarmWrites?: Array<string> };
		const writes: string[] = [];
		storage.__alarmWrites = writes;
		const set = storage.setAlarm.bind(storage);
		const del = storage.deleteAlarm.bind(storage);
		storage.setAlarm = (at, options) => {
			writes.push(`set ${Number(at) - Date.now()}`);
			return set(at, options);
		};
		storage.deleteAlarm = (options) => {
			writes.push('delete');
			return del(options);
		};
	});
}

async function alarmWrites(id: string): Promise<string[]> {
	return runInDurableObject(stub(id), (_, state) => (state.storage as DurableObjectStorage & { __alarmWrites?: string[] }).__alarmWrites ?? []);
}

describe('alarm writes per run', () => {
	// The floor: the backstop set with the created row (a crash before the first delivery or during the pass is
	// retried from it). The retention's expiry is the index shard's (one shard alarm for every run finishing in its
	// slot: docs/decisions.md "Retention owned by the index shard"), and the backstop is left to fire once.
	it('a run of ten trivial steps writes its alarm once: the backstop at create; its retention is its index shard\'s', async () => {
		const id = uniqueId('alarms');
		await countAlarmWrites(id);
		await instances.create(testEnv, { type: 'many', id, payload: { steps: 10 } });
		await settle(id);
		expect((await instances.status(testEnv, { id })).status).toBe('completed');
		const writes = await alarmWrites(id);
		expect(writes.map((w) => w.split(' ')[0])).toEqual(['set']);
		expect(Number(writes[0]!.split(' ')[1])).toBeLessThanOrEqual(WATCHDOG_MS);
	});

	it('a run of the table layout still writes its retention itself: the backstop at create and the retention when it finishes', async () => {
		const id = uniqueId('layout-table-alarms');
		await countAlarmWrites(id);
		await instances.create(testEnv, { type: 'many', id, payload: { steps: 10 } });
		await settle(id);
		expect((await instances.status(testEnv, { id })).status).toBe('completed');
		const writes = await alarmWrites(id);
		expect(writes.map((w) => w.split(' ')[0])).toEqual(['set', 'set']);
		expect(Number(writes[1]!.split(' ')[1])).toBeGreaterThan(6 * 86_400_000);
	});

	it('a run whose created entry is delivered while a step awaits I/O does not move the watchdog later', async () => {
		const id = uniqueId('alarms-io');
		await countAlarmWrites(id);
		// Each step awaits a 100 ms timer: the created entry is delivered (after its 20 ms coalescing) mid-run.
		await instances.create(testEnv, { type: 'slow-child', id, payload: { ms: 100 } });
		await settle(id);
		expect((await instances.status(testEnv, { id })).status).toBe('completed');
		const writes = await alarmWrites(id);
		expect(writes.map((w) => w.split(' ')[0])).toEqual(['set']);
	});
});
