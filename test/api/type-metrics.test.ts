import { afterEach, describe, expect, it } from 'vitest';
import { advanceClock, fireAlarm, resetClock, settle, stub, uniqueId } from '../helpers';
import { api } from './helpers';
import { shardIndex } from '../../src/engine/index/shard';
import { shardName } from '../../src/engine/object-names';
import type { IndexEntry } from '../../src/engine/index/index-entry';

afterEach(resetClock);

const metrics = async (type: string) => {
	const res = await api('GET', `/types/${type}/metrics`);
	expect(res.status).toBe(200);
	return res.json;
};
/** The home shard of an id of type `test` (one shard). */
const home = (id: string) => stub(shardName('test', shardIndex(id, 1)));
const write = async (entries: IndexEntry[], options?: { moved?: boolean }) => expect(await home(entries[0]!.id).indexWrite(entries, options)).toEqual({ ok: true, value: null });

describe('GET /types/:type/metrics', () => {
	it('counts a run that completes once, with its duration, however often or late its entries arrive', async () => {
		const before = await metrics('test');
		const id = uniqueId('met');
		const createdAt = Date.now() - 5 * 60_000;
		const entry = (status: IndexEntry['status'], version: number, updatedAt: number): IndexEntry => ({ id, type: 'test', status, createdAt, updatedAt, version });
		await write([entry('running', 1, createdAt)]);
		await write([entry('completed', 3, createdAt + 1500)]);
		await write([entry('completed', 3, createdAt + 1500)]); // a retried delivery
		await write([entry('running', 2, createdAt + 700)]); // a late, older one: the shard ignores it
		const after = await metrics('test');
		expect(after.hour.started - before.hour.started).toBe(1);
		expect(after.hour.completed - before.hour.completed).toBe(1);
		expect(after.day.completed - before.day.completed).toBe(1);
		expect(after.hour.durationMs.runs - before.hour.durationMs.runs).toBe(1);
		const minute = Math.floor(createdAt / 60_000);
		const at = (m: any) => m.perMinute.find((x: { minute: number }) => x.minute === minute);
		expect(at(after).started - at(before).started).toBe(1);
	});

	it('counts a run whose only delivery is its final status as started in its first minute and finished in its last, whether or not they are the same minute', async () => {
		const before = await metrics('test');
		const base = (Math.floor(Date.now() / 60_000) - 10) * 60_000;
		const short = uniqueId('met-short');
		const long = uniqueId('met-long');
		await write([{ id: short, type: 'test', status: 'completed', createdAt: base + 1000, updatedAt: base + 3000, version: 3 }]);
		await write([{ id: long, type: 'test', status: 'errored', createdAt: base + 2000, updatedAt: base + 61_000, version: 3 }]);
		const after = await metrics('test');
		const at = (m: any, minute: number) => m.perMinute.find((x: { minute: number }) => x.minute === minute);
		const [first, second] = [base / 60_000, base / 60_000 + 1];
		expect(at(after, first).started - at(before, first).started).toBe(2);
		expect(at(after, first).completed - at(before, first).completed).toBe(1);
		expect(at(after, first).errored - at(before, first).errored).toBe(0);
		expect(at(after, second).errored - at(before, second).errored).toBe(1);
		expect(at(after, second).started - at(before, second).started).toBe(0);
		expect(after.hour.durationMs.runs - before.hour.durationMs.runs).toBe(2);
	});

	it('does not count again an entry a rebalance copies into another shard', async () => {
		const before = await metrics('test');
		const id = uniqueId('met-moved');
		const now = Date.now();
		await write([{ id, type: 'test', status: 'completed', createdAt: now - 1000, updatedAt: now, version: 3 }], { moved: true });
		const after = await metrics('test');
		expect(after.hour.started).toBe(before.hour.started);
		expect(after.hour.completed).toBe(before.hour.completed);
	});

	it('counts runs of real instances as their entries land: started, completed, terminated, over the 60 minutes of the last hour', async () => {
		const before = await metrics('test');
		const [ok, stopped] = [uniqueId('met-ok'), uniqueId('met-stop')];
		await api('POST', '/workflows', { type: 'test', id: ok, payload: { name: 'fine' } });
		await api('POST', '/workflows', { type: 'test', id: stopped, payload: { name: 'stopped' } });
		await Promise.all([settle(ok), settle(stopped)]);
		await api('POST', `/workflows/${stopped}/terminate`);
		advanceClock(1500);
		await fireAlarm(ok);
		await settle(stopped);
		expect((await api('GET', `/workflows/${ok}`)).json.status).toBe('completed');
		const after = await metrics('test');
		expect(after.perMinute).toHaveLength(60);
		expect(after.hour.started - before.hour.started).toBe(2);
		expect(after.hour.completed - before.hour.completed).toBe(1);
		expect(after.hour.terminated - before.hour.terminated).toBe(1);
		expect(after.backlog).toEqual({ pending: 0, oldestAgeMs: null });
	});

	it('counts a second finish for a run restarted after it finished, when the new run finishes at once (its restart and finish reach the shard as one delivery)', async () => {
		const [ok, failing] = [uniqueId('met-again'), uniqueId('met-again-err')];
		await api('POST', '/workflows', { type: 'purgeable', id: ok, payload: { n: 2 } });
		await api('POST', '/workflows', { type: 'purgeable', id: failing, payload: { n: 2, fail: true } });
		await Promise.all([settle(ok), settle(failing)]);
		expect((await api('GET', `/workflows/${ok}`)).json.status).toBe('completed');
		expect((await api('GET', `/workflows/${failing}`)).json.status).toBe('errored');
		const before = await metrics('purgeable');
		expect((await api('POST', `/workflows/${ok}/restart`, {})).status).toBe(200);
		expect((await api('POST', `/workflows/${failing}/restart`, {})).status).toBe(200);
		await Promise.all([settle(ok), settle(failing)]);
		expect((await api('GET', `/workflows/${ok}`)).json.status).toBe('completed');
		expect((await api('GET', `/workflows/${failing}`)).json.status).toBe('errored');
		const after = await metrics('purgeable');
		expect(after.hour.started - before.hour.started).toBe(0);
		expect(after.hour.completed - before.hour.completed).toBe(1);
		expect(after.hour.errored - before.hour.errored).toBe(1);
		expect(after.hour.durationMs.runs - before.hour.durationMs.runs).toBe(2);
	});

	it('refuses an unknown type with 400 UNKNOWN_TYPE', async () => {
		expect(await api('GET', '/types/nope/metrics')).toMatchObject({ status: 400, json: { error: { code: 'UNKNOWN_TYPE' } } });
	});
});
