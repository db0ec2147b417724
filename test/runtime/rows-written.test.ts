import { evictDurableObject, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { migrate } from 'drizzle-orm/durable-sqlite/migrator';
import migrations from '../../drizzle/migrations';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { shardIndex } from '../../src/engine/index/shard';
import { shardName } from '../../src/engine/object-names';
import { IndexShardStore } from '../../src/runtime/index-shard-store';
import { api } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId } from '../helpers';
import { indexDeliveries, indexFaults } from '../worker/probes';
import { OUTBOX_GRACE_MS } from '../../src/engine/support/timing';
import { storageSettingsOf } from '../../src/runtime/storage-format';

/** Storage format 5 (wrangler.jsonc); `SHARDFLOW_STORAGE_FORMAT=4 npx vitest` runs the suite as level 4 writes. */
const format5 = storageSettingsOf(testEnv as Parameters<typeof storageSettingsOf>[0]).foldSleeps;

/**
 * Rows written by a run's instance object, as Cloudflare bills them (docs/cost.md "What counts as a row written"):
 * SQL rows (schema statements included), key-value rows and alarm writes, counted by the bench's meter
 * (bench/sql-meter.ts) from before the object's storage is first used. Ids "layout-compact-…" / "layout-table-…"
 * take that layout whatever the Worker's setting (test/worker/index.ts).
 */
async function trivialRun(layout: 'compact' | 'table' | 'tablerow') {
	const id = uniqueId(`layout-${layout}`);
	await instances.create(testEnv, { type: 'many', id, payload: { steps: 10 } });
	await settle(id);
	expect((await instances.status(testEnv, { id })).status).toBe('completed');
	return runInDurableObject(stub(id), (runner, state) => ({
		...(runner as unknown as { rowsWritten(): { rows: number; alarms: number } }).rowsWritten(),
		tables: [...state.storage.sql.exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%'`)].map((t) => t.name),
	}));
}

describe('rows written by a run of ten trivial steps, per storage layout', () => {
	it('compact: no schema at all; the record at create, 1 row per step, the record at completion', async () => {
		const { rows, alarms, tables } = await trivialRun('compact');
		expect(tables).toEqual([]);
		// create (the record: row, pending entry, created record) 1 + 10 steps + completed (with its record and entry) 1; the
		// run ends before its index entry is delivered, so its `running` is never written (kernel.ts `startRunning`); the
		// delivery's acknowledgement rides with the record's next put, of which a finished run has none. Storage format 5: a
		// step completed in the same turn as the one before it carries it, and the last pair rides in the outcome (below), 6.
		expect(rows).toBe(format5 ? 6 : 12);
		// The backstop only: the retention is the index shard's (one alarm per slot for many runs).
		expect(alarms).toBe(1);
	});

	it('table: the schema (12 rows), 10 steps and the instance, outbox and history rows', async () => {
		const { rows, alarms, tables } = await trivialRun('table');
		expect(tables).toContain('__drizzle_migrations');
		// Its `running` not written either: the instance's update and the outbox's, 2 rows fewer.
		expect(rows).toBe(30);
		expect(alarms).toBe(2);
	});

	it('table at storage format 2 and up: each written status change keeps its index entry in the instance row, no outbox row', async () => {
		const { rows, alarms, tables } = await trivialRun('tablerow');
		expect(tables).toContain('__drizzle_migrations');
		// The same run as above, each of its 2 written transitions' entry in the row's own upsert: 2 rows fewer.
		expect(rows).toBe(28);
		expect(alarms).toBe(2);
	});
});

/** Rows a compact run's instance object wrote, and the history record keys it holds (`h:`: a record nothing else stands for). */
async function compactRun(type: string, payload: unknown, drive: (id: string) => Promise<void> = async () => {}) {
	const id = uniqueId('layout-compact');
	await instances.create(testEnv, { type: type as never, id, payload: payload as never });
	await settle(id);
	await drive(id);
	expect((await instances.status(testEnv, { id })).status).toBe('completed');
	return runInDurableObject(stub(id), (runner, state) => ({
		...(runner as unknown as { rowsWritten(): { rows: number; alarms: number; byKey: Record<string, number> } }).rowsWritten(),
		recordKeys: [...state.storage.kv.list({ prefix: 'h:' })].length,
		id,
	}));
}

describe("a step's records ride in the step's own key (compact layout)", () => {
	it('steps that await I/O: their start, then their completion with its record, 2 rows a step and no record key', async () => {
		const { rows, recordKeys } = await compactRun('steps-child', { n: 10, ms: 1 });
		expect(recordKeys).toBe(0);
		// create 1 + 10 steps x (start, completion carrying step.completed) 2 + completed 1 (the run ends within the second a
		// delivery waits for it, so its `running` is never written: kernel.ts `beforeDelivery`). Before: each step.completed
		// took a key of its own, 10 more, and the running 1 (33). Storage format 5: a step's completion rides in the next
		// step's start when that step carries no other (every other step: s0 in s1's, s2 in s3's...): 5 rows fewer, 17. In the
		// compact encoding (compact-record-codec.ts) the last completion rides in the outcome's put too: 16.
		expect(rows).toBe(format5 ? 16 : 22);
	});

	it('a sleep: the step and its sleep.started, then the step and its sleep.finished, one put each', async () => {
		const { rows, alarms, recordKeys } = await compactRun('test', { name: 'rows' }, async (id) => {
			advanceClock(1_000);
			await fireAlarm(id);
		});
		expect(recordKeys).toBe(0);
		// create 1 + greet 1 + nap sleeping (carrying sleep.started and its wake-up) 1 + sleeping 1 (the first pass's
		// `running` not written: kernel.ts `startRunning`); the alarm's pass: nap completed (carrying sleep.finished, its
		// wake-up gone with it) 1 + completed 1 (its `running` held too: the compact layout's format 2). Before: each sleep
		// record was a put of the instance record of its own, 2 more, and the first pass's running 1 (12); the wake-up a
		// key of its own, put and deleted, and the woken pass's running (9). Storage format 5 folds the nap's two puts
		// into the status writes around them (below): 4; and greet, completed in the turn the nap is set, rides with it: 3.
		expect(rows).toBe(storageSettingsOf(testEnv as Parameters<typeof storageSettingsOf>[0]).foldSleeps ? 3 : 6);
		// Set: the backstop at create and the wake-up; the pass the alarm woke arms no watchdog and its outcome's entry no
		// retry alarm, since its alarm's handler awaits them and the runtime runs an alarm whose handler died again (format 2:
		// InstanceEngine.alarmAwaitingPass). Deleted: the test pool's, running the alarm. Before: the watchdog too (4).
		expect(alarms).toBe(3);
	});
});

// Storage format 5 only (wrangler.jsonc sets it; `SHARDFLOW_STORAGE_FORMAT=4 npx vitest` runs the suite as level 4 writes).
describe.runIf(storageSettingsOf(testEnv as Parameters<typeof storageSettingsOf>[0]).foldSleeps)('a sleep folded into the writes around it (storage format 5, wrangler.jsonc)', () => {
	it('a sleep then the outcome: the sleep rides in the sleeping status, its completion in the outcome', async () => {
		const { rows, byKey, recordKeys } = await compactRun('test', { name: 'rows' }, async (id) => {
			advanceClock(1_000);
			await fireAlarm(id);
		});
		expect(recordKeys).toBe(0);
		// create 1 + sleeping (carrying greet, completed in the same turn, and the nap with its sleep.started and its wake-up) 1;
		// the alarm's pass: completed (carrying the nap's completion and its sleep.finished) 1. Format 4: greet's own key and
		// the nap's put twice (6); format 5 before the compact encoding: greet in its own key (4).
		expect({ rows, byKey }).toEqual({ rows: 3, byKey: { 'put i': 3 } });
	});

	it("a step, a sleep, a step: the sleep's completion rides in the next step's put", async () => {
		const { rows, byKey, recordKeys } = await compactRun('step-nap-step', {}, async (id) => {
			advanceClock(1_000);
			await fireAlarm(id);
		});
		expect(recordKeys).toBe(0);
		// create 1 + sleeping (carrying before, held for its turn, and the nap) 1; the alarm's pass: completed (carrying after,
		// which carries the completed nap) 1: the record in the compact encoding (compact-record-codec.ts) keeps its page
		// with them (compact-folded-steps.ts `RECORD_PAGE_BYTES`). Format 4: 7; format 5 before the compact encoding: 5
		// (before and after in keys of their own: the record in the object form would have left its page).
		expect({ rows, byKey }).toEqual({ rows: 3, byKey: { 'put i': 3 } });
	});

	it("a retried step: the failed attempt (its start and outcome) rides in the sleeping status's put, the next attempt in the outcome's", async () => {
		const { rows, byKey } = await compactRun('slow-retry', {}, async (id) => {
			const waiting = (await api('GET', `/workflows/${id}/steps`)).json.items as { name: string; status: string; attempts: number }[];
			expect(waiting.map((s) => [s.name, s.status, s.attempts])).toEqual([['call', 'retrying', 1]]);
			advanceClock(10 * 60_000);
			await fireAlarm(id);
		});
		// create 1 + sleeping (carrying call retrying, its step.started, step.attempt_failed and its wake-up) 1; the alarm's
		// pass: completed, carrying call completed (its second attempt settled at once: its start with it, and it is held for
		// the next write of its turn like any completed step, compact-folded-steps.ts `foldable`) 1. Format 4: 7 (5 since a
		// retry's start is written with its outcome); format 5 before the retried step's completion was held: its own put (4).
		expect({ rows, byKey }).toEqual({ rows: 3, byKey: { 'put i': 3 } });
	});

	it('an event wait: the wait rides in the waiting status, the event in the record from its arrival to its consumption', async () => {
		const { rows, byKey } = await compactRun('inbox', { expect: 1 }, async (id) => {
			await instances.sendEvent(testEnv, { id, event: 'msg', payload: { n: 7 } });
			await settle(id);
		});
		// create 1 + waiting (carrying msg-0 and its wait.started) 1; the event: the record (carrying it and its
		// event.received) 1; its pass: completed, carrying msg-0 completed with event.consumed and the event gone: the
		// consumption's put waits for the next write of its turn (compact-held-writes.ts) 1. Format 4: the wait's own key,
		// the event's key put and deleted (8); format 5 before the held consumption: its own put (5).
		expect({ rows, byKey }).toEqual({ rows: 4, byKey: { 'put i': 4 } });
	});

	it('a wait with nothing due keeps its alarm, which fires once and writes nothing; its event then needs no alarm write', async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'inbox', id, payload: { expect: 2 } });
		await settle(id);
		// The backstop set at create is left (format 4 deleted it: 1 row, and the event's pass then set its watchdog, 1 more).
		expect((await written(id)).alarms).toBe(1);
		await instances.sendEvent(testEnv, { id, event: 'msg', payload: { n: 1 } });
		await settle(id);
		const before = await written(id);
		expect(before.alarms).toBe(1);
		// It fires waiting for the second event: no pass, no row, no alarm write (the one counted is the test pool's delete,
		// which runs the alarm: the runtime's own firing writes nothing).
		advanceClock(60_000);
		await fireAlarm(id);
		expect(await written(id)).toEqual({ ...before, alarms: before.alarms + 1 });
		await instances.sendEvent(testEnv, { id, event: 'msg', payload: { n: 2 } });
		await settle(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: [1, 2] });
	});

	it('an event for a later wait, or above 4 KiB, keeps its own key; every event is taken once, in order', async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'doorbell', id, payload: {} });
		await settle(id);
		// `ring` while the instance waits for `knock`: early, its own key. `knock` above 4 KiB: its own key too.
		await instances.sendEvent(testEnv, { id, event: 'ring', payload: undefined });
		await instances.sendEvent(testEnv, { id, event: 'knock', payload: { by: 'x'.repeat(5_000) } });
		await settle(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 'x'.repeat(5_000) });
		const { byKey } = await runInDurableObject(stub(id), (runner) => (runner as unknown as { rowsWritten(): { byKey: Record<string, number> } }).rowsWritten());
		expect([byKey['put e:'], byKey['delete e:']]).toEqual([2, 2]);
		const { json } = await api('GET', `/workflows/${id}/history`);
		const kinds = (json.events as { kind: string }[]).map((e) => e.kind).filter((kind) => kind.startsWith('event.'));
		expect(kinds).toEqual(['event.received', 'event.received', 'event.consumed', 'event.consumed']);
	});

	it("a step retried twice: each failed attempt rides in its sleeping status's put, the one already in the record too", async () => {
		const { rows, byKey } = await compactRun('twice-retry', {}, async (id) => {
			for (let retry = 0; retry < 2; retry++) {
				expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
				advanceClock(10 * 60_000);
				await fireAlarm(id);
			}
		});
		// create 1 + sleeping (carrying the first failed attempt) 1 + sleeping (carrying the second) 1 + completed, carrying
		// call completed 1 (its own put before the retried step's completion was held for its turn: 5).
		expect({ rows, byKey }).toEqual({ rows: 4, byKey: { 'put i': 4 } });
	});

	it('a retried step whose result is too large to ride takes its own key; the step after it still rides in the outcome', async () => {
		const { rows, byKey } = await compactRun('retry-awaits', { failures: 1, limit: 2, bytes: 5_000, pad: 800 }, async (id) => {
			advanceClock(1_000);
			await fireAlarm(id);
		});
		// create 1 + sleeping (carrying flaky's failed attempt, its 800 more characters of message taking the record past its
		// page) 1 + before, spilled to its own key 1; the alarm's pass: flaky completed, its 5,000 characters in its own key 1 +
		// completed, carrying after 1. Before: after took a key of its own too (6), the record measured with flaky's large
		// `retrying` copy, which its put drops (compact-folded-steps.ts `withStep`).
		expect({ rows, byKey }).toEqual({ rows: 5, byKey: { 'put i': 3, 'put s:': 2 } });
	});

	it("the bench's retried step (a step, a step failing twice, retried 1 s apart, a step): 4 puts of the record, every attempt in the history", async () => {
		const { rows, byKey, id } = await compactRun('costed-retry', { delayMs: 1_000 }, async (id) => {
			for (let retry = 0; retry < 2; retry++) {
				expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
				advanceClock(1_000);
				await fireAlarm(id);
			}
		});
		// create 1; sleeping, carrying before (held for its turn) and flaky's first failed attempt 1; sleeping, carrying its
		// second 1; completed, carrying after, which carries flaky completed 1. Before: 7 (before spilled to its own key when
		// the second failure took the record past its page, flaky's success and after in keys of their own): each failed
		// attempt's error stored as JSON, its stack whole, where it is now its frames, named once a step
		// (compact-error-detail.ts), and a retried step's last attempt not held for its turn.
		expect({ rows, byKey }).toEqual({ rows: 4, byKey: { 'put i': 4 } });
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 5 });
		const steps = (await api('GET', `/workflows/${id}/steps`)).json.items as { name: string; status: string; attempts: number; error: unknown }[];
		expect(steps.map((s) => [s.name, s.status, s.attempts])).toEqual([['before', 'completed', 1], ['flaky', 'completed', 3], ['after', 'completed', 1]]);
		const { json } = await api('GET', `/workflows/${id}/history`);
		const failed = (json.events as { kind: string; attempt?: number; error?: { name: string; message: string; stack?: string }; retryAt?: number; at: number }[]).filter((e) => e.kind === 'step.attempt_failed');
		expect(failed.map((e) => [e.attempt, e.error?.name, e.error?.message])).toEqual([[1, 'Error', 'attempt 1 fails, as an outside API may'], [2, 'Error', 'attempt 2 fails, as an outside API may']]);
		for (const e of failed) {
			expect(e.error?.stack).toMatch(new RegExp(`^Error: attempt ${e.attempt} fails, as an outside API may\n    at `));
			// A second after the failure (the record's time is read just after the retry's).
			expect(e.retryAt! - e.at).toBeGreaterThan(990);
			expect(e.retryAt! - e.at).toBeLessThanOrEqual(1_000);
		}
	});

	it('status, steps and history show the sleep with its times, while it sleeps and once it is done', async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'step-nap-step', id, payload: {} });
		await settle(id);
		const asleep = (await api('GET', `/workflows/${id}/steps`)).json.items as { name: string; status: string; startedAt: string | null; finishedAt: string | null }[];
		expect(asleep.map((s) => [s.name, s.status, s.startedAt !== null, s.finishedAt !== null])).toEqual([['before', 'completed', true, true], ['nap', 'sleeping', true, false]]);
		advanceClock(1_000);
		await fireAlarm(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 2 });
		const steps = (await api('GET', `/workflows/${id}/steps`)).json.items as { name: string; status: string; startedAt: string | null; finishedAt: string | null }[];
		expect(steps.map((s) => [s.name, s.status, s.startedAt !== null, s.finishedAt !== null])).toEqual([['before', 'completed', true, true], ['nap', 'completed', true, true], ['after', 'completed', true, true]]);
		// Where a step is kept is the store's business: no field of it reaches the API.
		for (const item of steps) for (const field of ['v', 'prior', 'wk', 'rec', 'more']) expect(item).not.toHaveProperty(field);
		const { json } = await api('GET', `/workflows/${id}/history`);
		const events = (json.events as { seq: number; kind: string; step?: string }[]).filter((e) => e.step !== undefined);
		expect(events.map((e) => `${e.kind} ${e.step}`)).toEqual(['step.started before', 'step.completed before', 'sleep.started nap', 'sleep.finished nap', 'step.started after', 'step.completed after']);
		const seqs = (json.events as { seq: number }[]).map((e) => e.seq);
		expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
	});
});

describe.runIf(format5)('the last step rides in the outcome (storage format 5, wrangler.jsonc)', () => {
	it('10 trivial steps, all in one turn: each odd step carries the step before it, and the last pair rides in the outcome, 6 rows; 9 steps: the last one rides in the outcome', async () => {
		const { rows, byKey, recordKeys } = await compactRun('many', { steps: 10 });
		expect(recordKeys).toBe(0);
		// create 1 + s1 (carrying s0), s3 (s2), s5 (s4), s7 (s6) 4 + completed 1, s9 (carrying s8) riding in it: the record
		// is stored lean (since then in the compact encoding, compact-record-codec.ts), so s9 with s8 keeps it within its page
		// (compact-folded-steps.ts `RECORD_PAGE_BYTES`; it took a key of its own while the record stored its null fields). Format 4: a put per step (12).
		expect({ rows, byKey }).toEqual({ rows: 6, byKey: { 'put i': 2, 'put s:': 4 } });
		const nine = await compactRun('many', { steps: 9 });
		// s1, s3, s5, s7 (each carrying the one before) 4; s8 alone, in the completed record.
		expect({ rows: nine.rows, byKey: nine.byKey }).toEqual({ rows: 6, byKey: { 'put i': 2, 'put s:': 4 } });
		// An odd number: s1 carrying s0 put, s2 held and taken by the completed record's put.
		const three = await compactRun('many', { steps: 3 });
		expect({ rows: three.rows, byKey: three.byKey }).toEqual({ rows: 3, byKey: { 'put i': 2, 'put s:': 1 } });
	});

	it('a finished run reads the same from a fresh object: its output, its steps with their results, its history in order', async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'many', id, payload: { steps: 3 } });
		await settle(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 3 });
		const steps = (await api('GET', `/workflows/${id}/steps`)).json.items as { name: string; status: string; attempts: number; finishedAt: string | null }[];
		expect(steps.map((s) => [s.name, s.status, s.attempts, s.finishedAt !== null])).toEqual([['s0', 'completed', 1, true], ['s1', 'completed', 1, true], ['s2', 'completed', 1, true]]);
		for (const item of steps) for (const field of ['v', 'prior', 'rec', 'more']) expect(item).not.toHaveProperty(field);
		const { json } = await api('GET', `/workflows/${id}/history`);
		const events = (json.events as { seq: number; kind: string; step?: string }[]).filter((e) => e.step !== undefined);
		expect(events.map((e) => `${e.kind} ${e.step}`)).toEqual(['step.started s0', 'step.completed s0', 'step.started s1', 'step.completed s1', 'step.started s2', 'step.completed s2']);
		const seqs = (json.events as { seq: number }[]).map((e) => e.seq);
		expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
		// s0 in s1's key, s2 in the instance record: one step key.
		expect(await keysOf(id, 's:')).toBe(1);
	});

	it('restart from the last step runs it again and only it, once', async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'many', id, payload: { steps: 3 } });
		await settle(id);
		const restarted = await api('POST', `/workflows/${id}/restart`, { from: 's2' });
		expect(restarted.status).toBe(200);
		await settle(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 3 });
		const { json } = await api('GET', `/workflows/${id}/history`);
		const started = (json.events as { kind: string; step?: string }[]).filter((e) => e.kind === 'step.started').map((e) => e.step);
		// The restarted generation's history: s0 and s1 kept (not run again), s2 run once more.
		expect(started).toEqual(['s2']);
		const steps = (await api('GET', `/workflows/${id}/steps`)).json.items as { name: string; status: string }[];
		expect(steps.map((s) => [s.name, s.status])).toEqual([['s0', 'completed'], ['s1', 'completed'], ['s2', 'completed']]);
	});
});

/** The keys a compact run's instance object holds under `prefix` at the end. */
async function keysOf(id: string, prefix: string) {
	return runInDurableObject(stub(id), (_, state) => [...state.storage.kv.list({ prefix })].length);
}

describe("a step's wake-up rides in the step's own key (the compact layout's format 2, wrangler.jsonc)", () => {
	it('a sleep sets its wake-up with its step and clears it with its completion: no wake-up key, put or deleted', async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'test', id, payload: { name: 'rows' } });
		await settle(id);
		expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
		expect(await keysOf(id, 'w:')).toBe(0);
		// The alarm is the wake-up's: the step's key is the only place it is kept.
		advanceClock(1_000);
		await fireAlarm(id);
		expect((await instances.status(testEnv, { id })).status).toBe('completed');
	});

	it('a retried step keeps its retry time in its key: no wake-up key put or deleted', async () => {
		const { rows, alarms, byKey } = await compactRun('slow-retry', {}, async (id) => {
			expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
			advanceClock(10 * 60_000);
			await fireAlarm(id);
		});
		// create 1 + call's start 1 + call retrying (carrying step.attempt_failed and its wake-up) 1 + sleeping 1; the
		// alarm's pass: call's start 1 + call completed (its wake-up gone with it) 1 + completed 1. Before: the wake-up's
		// put and its delete at the end of the pass it woke, and that pass's running (10).
		// Since a retry's attempt that settles at once writes its start with its outcome (PassJournal.transact): each
		// attempt one put, 5. Storage format 5: the failed attempt rides in the sleeping status's put too (below), 4.
		// And its second attempt, settled at once, rides in the outcome's put: 3.
		const folded = storageSettingsOf(testEnv as Parameters<typeof storageSettingsOf>[0]).foldSleeps;
		expect({ rows, byKey }).toEqual(folded ? { rows: 3, byKey: { 'put i': 3 } } : { rows: 5, byKey: { 'put i': 3, 'put s:': 2 } });
		// The backstop and the retry's wake-up, and the test pool's delete; not the woken pass's watchdog (its alarm's handler
		// awaits it). Before: 4.
		expect(alarms).toBe(3);
	});
});

describe('a pass woken by an alarm or an event holds its running in memory (the compact layout\'s format 2)', () => {
	it('an event wait: the pass the event wakes writes no running of its own', async () => {
		const { rows, byKey } = await compactRun('inbox', { expect: 1 }, async (id) => {
			expect((await instances.status(testEnv, { id })).status).toBe('waiting');
			await instances.sendEvent(testEnv, { id, event: 'msg', payload: { n: 7 } });
			await settle(id);
		});
		// create 1 + msg-0 waiting (carrying wait.started) 1 + waiting 1; the event: buffered 1 + the record (carrying
		// event.received) 1; its pass: msg-0 completed (carrying event.consumed) 1 + the event deleted 1 + completed 1.
		// Before: that pass's running 1 (9).
		// Storage format 5 folds the wait into the waiting status's put and the event into the record's puts, and its
		// consumption into the outcome's put (below): 4.
		const folded = storageSettingsOf(testEnv as Parameters<typeof storageSettingsOf>[0]).foldSleeps;
		expect({ rows, byKey }).toEqual(folded ? { rows: 4, byKey: { 'put i': 4 } } : { rows: 8, byKey: { 'put i': 4, 'put s:': 2, 'put e:': 1, 'delete e:': 1 } });
	});
});

type Written = { rows: number; alarms: number; byKey: Record<string, number> };
const written = (name: string) => runInDurableObject(stub(name), (runner) => (runner as unknown as { rowsWritten(): Written }).rowsWritten());
const listedChildren = async (parent: string) => (await api('GET', `/workflows?type=async-step&parent=${encodeURIComponent(parent)}`)).json.items as { id: string; status: string }[];

/** A parent of `n` one-step children invoked one after another (the bench's children scenario: they run inline), settled with every child. */
async function childrenRun(n: number) {
	const id = uniqueId('layout-compact');
	await instances.create(testEnv, { type: 'many-children', id, payload: { n } });
	await settle(id);
	expect((await instances.status(testEnv, { id })).status).toBe('completed');
	const children = [];
	for (let i = 0; i < n; i++) {
		await settle(`${id}::child-${i}`);
		children.push(await written(`${id}::child-${i}`));
	}
	return { id, parent: await written(id), children };
}

describe('rows written by one-step children run inside their parent (compact layout)', () => {
	afterEach(() => {
		indexFaults.failWrites = 0;
		resetClock();
	});

	it("a published child's object sets no alarm: its parent waits for its index entry's delivery, and it is listed with its parent", async () => {
		const { id, children } = await childrenRun(10);
		// Its record and its step; no alarm (before: the backstop for its index entry, 1 a child). Storage format 5: its step
		// rides in its completed record, stored lean (now in the compact encoding), within its page (compact-folded-steps.ts
		// `RECORD_PAGE_BYTES`): 1 row (2 while the record stored its null fields and the entry's copy of the row's).
		expect(children.map((c) => [c.rows, c.alarms])).toEqual(Array.from({ length: 10 }, () => [format5 ? 1 : 2, 0]));
		const listed = await listedChildren(id);
		expect(listed.map((c) => [c.id, c.status]).sort()).toEqual(Array.from({ length: 10 }, (_, i) => [`${id}::child-${i}`, 'completed']).sort());
	});

	it('a parent keeps each one-step child that finished inside it in one row until it is published (SHARDFLOW_INLINE_ONE_ROW, on in wrangler.jsonc)', async () => {
		const { parent } = await childrenRun(10);
		// Per child: its invoke's completion (s:) 1, the child's header carrying its step 1 and its delete once published 1;
		// the parent's record at create and completion 2. Before: the child's step in a row of its own too, put and deleted,
		// and the invoke's start (62 rows). Storage format 5: each odd invoke's step carries the one before it (all in the
		// pass's turn), 27; in the compact encoding (compact-record-codec.ts) the last pair rides in the outcome's put, 26.
		expect(parent.byKey).toEqual({ 'put i': 2, 'put s:': format5 ? 4 : 10, 'put n:': 10, 'delete n:': 10 });
		expect(parent.rows).toBe(format5 ? 26 : 32);
	});

	it("an invoke whose child finished inside it before writing anything there writes its step once, with the child's start and outcome records", async () => {
		const { id, parent } = await childrenRun(2);
		// Storage format 5: the second carries the first, and both ride in the outcome's put (in the compact encoding the
		// record keeps its page with them; a key of their own before).
		expect(parent.byKey['put s:']).toBe(format5 ? undefined : 2);
		const { json } = await api('GET', `/workflows/${id}/history`);
		const kinds = (json.events as { kind: string; step?: string }[]).filter((e) => e.step === 'child-0').map((e) => e.kind);
		expect(kinds).toEqual(['child.started', 'child.completed']);
		const steps = (await api('GET', `/workflows/${id}/steps`)).json.items as { name: string; status: string; startedAt: string | null }[];
		expect(steps.map((s) => [s.name, s.status, s.startedAt !== null])).toEqual([['child-0', 'completed', true], ['child-1', 'completed', true]]);
	});

	it("a published child whose index delivery fails arms its own alarm, which delivers it", async () => {
		indexFaults.failWrites = 1_000;
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'many-children', id, payload: { n: 1 } });
		await settle(id);
		const child = `${id}::child-0`;
		await settle(child);
		expect((await written(child)).alarms).toBe(1);
		indexFaults.failWrites = 0;
		advanceClock(10 * 60_000);
		await fireAlarm(child);
		expect(await listedChildren(id)).toMatchObject([{ id: child, status: 'completed' }]);
	});
});

describe("rows written by a run's index delivery (its index shard)", () => {
	it('a finished trivial run: its entry and its one listing index, and no metrics row (the run is a mark on the entry, rolled up once a minute)', async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'many', id, payload: { steps: 10 } });
		await settle(id);
		// The entry as the run's delivery left it on its shard (one delivery: the run's transitions coalesced).
		const delivered = await runInDurableObject(stub(shardName('many', shardIndex(id, 16))), (_, state) =>
			state.storage.sql.exec<Record<string, SqlStorageValue>>('SELECT id, type, status, created_at, updated_at, version FROM index_entries WHERE id = ?', id).one(),
		);
		expect(delivered.status).toBe('completed');
		const entry: IndexEntry = {
			id, type: 'many', status: 'completed', createdAt: Number(delivered.created_at), updatedAt: Number(delivered.updated_at), version: Number(delivered.version),
		};
		// The same delivery into a shard whose rows are counted (a borrowed object, the shard's clock just after the run).
		const written = await runInDurableObject(stub(uniqueId('shard-rows')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			const shard = new IndexShardStore(db, state.storage, () => entry.updatedAt + 1_000);
			// A shard's first mark writes its rollup watermark (a key-value row, once in the shard's life): not this run's.
			shard.write([{ ...entry, id: `${id}-earlier` }]);
			return sqlRowsWrittenBy(state.storage, () => shard.write([entry]));
		});
		// Before the marks: 4 (the minute's metrics row upserted by every delivery that starts or finishes a run);
		// 3 before drizzle/0023 (the `(status, updated_at, id)` index too).
		expect(written).toBe(2);
	});

	it('a run that sleeps: its first delivery writes the entry and its (status, created_at, id) index (2 rows), its status change the same 2, and a delivery that only moves updated_at 1', async () => {
		const written = await runInDurableObject(stub(uniqueId('shard-rows')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			const at = 1_796_000_000_000;
			const shard = new IndexShardStore(db, state.storage, () => at + 1_000);
			// A shard's first mark writes its rollup watermark (a key-value row, once in the shard's life): not this run's.
			shard.write([{ id: 'earlier', type: 'many', status: 'completed', createdAt: at - 10, updatedAt: at - 5, version: 3 }]);
			const rows = (entry: IndexEntry) => sqlRowsWrittenBy(state.storage, () => shard.write([entry]));
			const run = { id: 'sleeper', type: 'many', createdAt: at };
			return {
				sleeping: rows({ ...run, status: 'sleeping', updatedAt: at + 1, version: 2 }),
				sleepingAgain: rows({ ...run, status: 'sleeping', updatedAt: at + 2, version: 3 }),
				completed: rows({ ...run, status: 'completed', updatedAt: at + 3, version: 4 }),
			};
		});
		// Before drizzle/0023: 3, 2 and 3 (the `(status, updated_at, id)` index moved by every delivery).
		expect(written).toEqual({ sleeping: 2, sleepingAgain: 1, completed: 2 });
	});
});

/** Rows each of `entries` writes when delivered in turn to a fresh index shard whose rows are counted (a borrowed object). */
async function shardRowsOf(entries: IndexEntry[]): Promise<number[]> {
	return runInDurableObject(stub(uniqueId('shard-rows')), async (_, state) => {
		const db = drizzle(state.storage);
		await migrate(db, migrations);
		const shard = new IndexShardStore(db, state.storage, () => Math.max(...entries.map((e) => e.updatedAt)) + 1_000);
		// A shard's first mark writes its rollup watermark (a key-value row, once in the shard's life): not this run's.
		shard.write([{ ...entries[0]!, id: `${entries[0]!.id}-earlier` }]);
		const written: number[] = [];
		for (const entry of entries) written.push(sqlRowsWrittenBy(state.storage, () => shard.write([entry])));
		return written;
	});
}

/** SQL rows `write` writes, summed over the cursors of every statement it runs (each cursor's `rowsWritten`). */
function sqlRowsWrittenBy(storage: DurableObjectStorage, write: () => void): number {
	const exec = storage.sql.exec.bind(storage.sql);
	const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
	Object.defineProperty(storage.sql, 'exec', { value: (q: string, ...b: SqlStorageValue[]) => (cursors.push(exec(q, ...b)), cursors.at(-1)!), configurable: true, writable: true });
	try {
		write();
	} finally {
		Object.defineProperty(storage.sql, 'exec', { value: exec, configurable: true, writable: true });
	}
	return cursors.reduce((sum, cursor) => sum + cursor.rowsWritten, 0);
}

/** The statuses an instance delivered to its shard, in order (test/worker/index.ts records each entry a shard accepted). */
function deliveredStatuses(id: string): string[] {
	return (indexDeliveries.get(id) ?? []).map((entry) => entry.status);
}

describe('a sleeping status whose wake-up comes before its delivery is due is not delivered alone (its index shard)', () => {
	afterEach(() => resetClock());

	it("the bench's retry scenario (a step failing twice, retried 1 s apart): one delivery, a new entry at its completion, 2 index rows", async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'costed-retry', id, payload: { delayMs: 1_000 } });
		await settle(id);
		for (let retry = 0; retry < 2; retry++) {
			expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
			advanceClock(1_000);
			await fireAlarm(id);
		}
		expect((await instances.status(testEnv, { id })).status).toBe('completed');
		// The instance's alarm writes are what they were (5): the backstop, the two wake-ups and the test pool's delete of each
		// alarm it runs; no alarm write for the deadline (the wake-ups come first). Its own rows are asserted above ("the bench's
		// retried step": 4 at storage format 5, 9 at 4), where only the index's are this test's subject.
		const { alarms } = await runInDurableObject(stub(id), (runner) => (runner as unknown as { rowsWritten(): { alarms: number } }).rowsWritten());
		expect(alarms).toBe(5);
		// Before: sleeping (a new entry, 2 rows), sleeping again (1) and completed (a status change, 2): 5 index rows.
		const delivered = indexDeliveries.get(id) ?? [];
		expect(delivered.map((entry) => entry.status)).toEqual(['completed']);
		expect(await shardRowsOf(delivered)).toEqual([2]);
	});

	it('the same on the table layout: no sleeping delivered, the completion is', async () => {
		const id = uniqueId('layout-table');
		await instances.create(testEnv, { type: 'costed-retry', id, payload: { delayMs: 1_000 } });
		await settle(id);
		for (let retry = 0; retry < 2; retry++) {
			advanceClock(1_000);
			await fireAlarm(id);
		}
		expect((await instances.status(testEnv, { id })).status).toBe('completed');
		// A table instance's woken pass writes its running, delivered unless the pass ends within the 20 ms coalescing: the
		// machine's speed decides whether it shows. Its sleeping statuses never do (main: 2 of them).
		expect(deliveredStatuses(id).filter((status) => status !== 'running')).toEqual(['completed']);
	});

	it('a 7-day sleep is listed as sleeping at once, and its completion after it', async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'costed-sleep', id, payload: { sleepMs: 7 * 86_400_000 } });
		await settle(id);
		expect(deliveredStatuses(id)).toEqual(['sleeping']);
		const { json } = await api('GET', `/workflows?type=costed-sleep&status=sleeping&limit=1000`);
		expect((json.items as { id: string }[]).map((item) => item.id)).toContain(id);
		advanceClock(7 * 86_400_000);
		await fireAlarm(id);
		expect(deliveredStatuses(id)).toEqual(['sleeping', 'completed']);
	});

	it('a 1 s sleep is not delivered alone: the run is listed once, completed', async () => {
		const id = uniqueId('layout-compact');
		await instances.create(testEnv, { type: 'costed-sleep', id, payload: { sleepMs: 1_000 } });
		await settle(id);
		expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
		expect(deliveredStatuses(id)).toEqual([]);
		advanceClock(1_000);
		await fireAlarm(id);
		expect(deliveredStatuses(id)).toEqual(['completed']);
		const { json } = await api('GET', `/workflows?type=costed-sleep&status=completed&limit=1000`);
		expect((json.items as { id: string }[]).map((item) => item.id)).toContain(id);
	});

	it('an object evicted while its sleeping status waits: the alarm due by the deadline wakes a new object, which delivers the newest entry', async () => {
		const id = uniqueId('layout-compact');
		// A retry 9 s after the first failure: its wake-up comes before the deadline (create + OUTBOX_GRACE_MS), so the status waits.
		await instances.create(testEnv, { type: 'costed-retry', id, payload: { delayMs: 9_000 } });
		await settle(id);
		expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
		expect(deliveredStatuses(id)).toEqual([]);
		await evictDurableObject(stub(id));
		// The alarm, at the retry (before the deadline), fires in a new object: the retry's pass fails again and sleeps 9 s more,
		// past the deadline: that status is delivered at once, superseding the one that waited.
		advanceClock(9_000);
		await fireAlarm(id);
		const statuses = deliveredStatuses(id);
		expect(statuses.length).toBeGreaterThan(0);
		const status = await instances.status(testEnv, { id });
		expect(indexDeliveries.get(id)!.at(-1)).toMatchObject({ status: status.status, version: status.version });
	});
});
