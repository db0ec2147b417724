import { runInDurableObject } from 'cloudflare:test';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { migrate } from 'drizzle-orm/durable-sqlite/migrator';
import { describe, expect, it } from 'vitest';
import migrations from '../../drizzle/migrations';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { durationBucket, type MetricsDelta } from '../../src/engine/index/run-metrics';
import { DELETED, IndexShardStore, MOVED } from '../../src/runtime/index-shard-store';
import { IndexMetricsStore } from '../../src/runtime/index-metrics-store';
import { ShardMetricsExport } from '../../src/runtime/shard-metrics-export';
import { stub, uniqueId } from '../helpers';

const M = 29_600_000; // a minute number (2026)
const at = (minute: number, seconds: number) => minute * 60_000 + seconds * 1000;

/**
 * A shard store on a borrowed object, with the shard's clock in the test's hands, and a meter of
 * what it writes: SQL rows as SQLite reports them (what Cloudflare bills) and key-value puts.
 */
async function shardOn(state: DurableObjectState, clock: { now: number }) {
	const db = drizzle(state.storage);
	await migrate(db, migrations);
	let kvPuts = 0;
	const kv = { get: <T>(key: string) => state.storage.kv.get<T>(key), put: <T>(key: string, value: T) => (kvPuts++, state.storage.kv.put(key, value)) };
	const storage = { kv, transactionSync: <T>(fn: () => T) => state.storage.transactionSync(fn) } as unknown as DurableObjectStorage;
	const store = new IndexShardStore(db, storage, () => clock.now);
	/** SQL rows and key-value puts written by `fn`. */
	const written = (fn: () => void) => {
		const exec = state.storage.sql.exec.bind(state.storage.sql);
		const counting = (query: string, ...bindings: SqlStorageValue[]) => {
			const cursor = exec(query, ...bindings);
			cursors.push(cursor);
			return cursor;
		};
		const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
		const puts = kvPuts;
		Object.defineProperty(state.storage.sql, 'exec', { value: counting, configurable: true, writable: true });
		try {
			fn();
		} finally {
			Object.defineProperty(state.storage.sql, 'exec', { value: exec, configurable: true, writable: true });
		}
		return { rows: cursors.reduce((sum, cursor) => sum + cursor.rowsWritten, 0), kv: kvPuts - puts };
	};
	/** The minute rows as stored (the rolled-up part only). */
	const minuteRows = () =>
		state.storage.sql
			.exec<{ minute: number; started: number; completed: number; errored: number; terminated: number; durations: string | null }>(
				'SELECT minute, started, completed, errored, terminated, durations FROM index_metric_minutes ORDER BY minute',
			)
			.toArray()
			.map(({ durations, ...row }) => ({ ...row, durations: durations ? JSON.parse(durations) : null }));
	return { store, written, minuteRows, db };
}

const entry = (id: string, status: IndexEntry['status'], createdAt: number, updatedAt: number, version: number): IndexEntry => ({
	id, type: 'payment', status, createdAt, updatedAt, version,
});

/** The shard's counts as a read answers them at `now`: the last hour's minutes and the day's sums. */
const counts = (store: IndexShardStore, now: number) => {
	const read = store.metrics.read(now);
	return { minutes: read.minutes, day: read.day, hour: read.durations.hour };
};

describe('run metrics marked on the entries and rolled up once a minute (index shard)', () => {
	it('a delivery that starts and finishes a run writes its entry and no metrics row, and a read counts the run at once', () =>
		runInDurableObject(stub(uniqueId('rollup-rows')), async (_, state) => {
			const clock = { now: at(M, 20) };
			const { store, written, minuteRows } = await shardOn(state, clock);
			// The shard's first mark sets its watermark (a key-value row, once per shard).
			expect(written(() => store.write([entry('warm-up', 'running', at(M, 19), at(M, 19), 1)]))).toEqual({ rows: 2, kv: 1 });
			// A short run's one delivery (created, running and completed coalesced): the entry's row and its listing index.
			expect(written(() => store.write([entry('short-1', 'completed', at(M, 20), at(M, 21), 3)]))).toEqual({ rows: 2, kv: 0 });
			expect(minuteRows()).toEqual([]);
			expect(counts(store, at(M, 22))).toEqual({
				minutes: [{ minute: M, started: 2, completed: 1, errored: 0, terminated: 0 }],
				day: { started: 2, completed: 1, errored: 0, terminated: 0 },
				hour: { [durationBucket(1000)]: 1 },
			});
		}));

	it('rolls a minute up once it closed: one row per minute counted, which carries the watermark, whatever the number of runs, and reads stay the same', () =>
		runInDurableObject(stub(uniqueId('rollup-minute')), async (_, state) => {
			const clock = { now: at(M, 5) };
			const { store, written, minuteRows, db } = await shardOn(state, clock);
			for (let i = 0; i < 5; i++) store.write([entry(`run-${i}`, i === 4 ? 'errored' : 'completed', at(M, 5 + i), at(M, 6 + i), 3)]);
			const before = counts(store, at(M + 1, 30));
			// Not yet: the minute closed less than the margin ago (deliveries of it may still be in flight).
			clock.now = at(M + 1, 5);
			expect(written(() => expect(store.rollUpMetrics()).toBe(false))).toEqual({ rows: 0, kv: 0 });
			clock.now = at(M + 1, 30);
			expect(written(() => expect(store.rollUpMetrics()).toBe(true))).toEqual({ rows: 1, kv: 0 });
			expect(minuteRows()).toEqual([{ minute: M, started: 5, completed: 4, errored: 1, terminated: 0, durations: { [durationBucket(1000)]: 5 } }]);
			expect(counts(store, at(M + 1, 30))).toEqual(before);
			expect(before.day).toEqual({ started: 5, completed: 4, errored: 1, terminated: 0 });
			// Once per minute: nothing more to roll up in the same minute.
			expect(written(() => expect(store.rollUpMetrics()).toBe(false))).toEqual({ rows: 0, kv: 0 });
			// The watermark is on the minute row (no row of its own): a shard started again (evicted) reads it back,
			// and keeps that row when it prunes the minutes past the retention (a day later).
			expect(state.storage.sql.exec('SELECT rolled_to FROM index_metric_minutes').one().rolled_to).toBe(at(M + 1, 0));
			const restarted = new IndexShardStore(db, state.storage, () => clock.now);
			expect(restarted.rollup.watermark()).toBe(at(M + 1, 0));
			restarted.metrics.pruneIfDue(at(M + 26 * 60, 0));
			expect(new IndexShardStore(db, state.storage, () => clock.now).rollup.watermark()).toBe(at(M + 1, 0));
		}));

	it('keeps both finishes of a run that completes and is restarted before the rollup, and counts a rolled-up finish once when the run is written again', () =>
		runInDurableObject(stub(uniqueId('rollup-restart')), async (_, state) => {
			const clock = { now: at(M, 10) };
			const { store } = await shardOn(state, clock);
			const created = at(M, 1);
			store.write([entry('again', 'completed', created, at(M, 2), 3)]);
			store.write([entry('again', 'running', created, at(M, 3), 4)]); // restarted (restart-from)
			store.write([entry('again', 'errored', created, at(M, 4), 6)]);
			const sameMinute = { minute: M, started: 1, completed: 1, errored: 1, terminated: 0 };
			expect(counts(store, at(M, 30)).minutes).toEqual([sameMinute]);
			clock.now = at(M + 1, 15);
			store.rollUpMetrics();
			expect(counts(store, at(M + 1, 15)).minutes).toEqual([sameMinute]);
			// Written again after its finishes were rolled up: the old mark is not carried (it is in the minute row already).
			store.write([entry('again', 'running', created, at(M + 1, 16), 7)]);
			store.write([entry('again', 'completed', created, at(M + 1, 17), 8)]);
			expect(counts(store, at(M + 1, 20)).minutes).toEqual([sameMinute, { minute: M + 1, started: 0, completed: 1, errored: 0, terminated: 0 }]);
			clock.now = at(M + 2, 15);
			store.rollUpMetrics();
			expect(counts(store, at(M + 2, 15)).day).toEqual({ started: 1, completed: 2, errored: 1, terminated: 0 });
		}));

	it('writes the minute row at once for a delivery that arrives after the rollup passed its time (a backlog after an outage), and counts it once', () =>
		runInDurableObject(stub(uniqueId('rollup-late')), async (_, state) => {
			const clock = { now: at(M, 10) };
			const { store, written, minuteRows } = await shardOn(state, clock);
			store.write([entry('on-time', 'completed', at(M, 1), at(M, 2), 3)]);
			clock.now = at(M + 3, 15);
			store.rollUpMetrics();
			// Finished in minute M, delivered three minutes later: the rollup would never find it, so it counts now.
			expect(written(() => store.write([entry('late', 'completed', at(M, 3), at(M, 5), 3)]))).toEqual({ rows: 3, kv: 0 });
			expect(minuteRows()).toEqual([{ minute: M, started: 2, completed: 2, errored: 0, terminated: 0, durations: { [durationBucket(1000)]: 1, [durationBucket(2000)]: 1 } }]);
			clock.now = at(M + 5, 15);
			store.rollUpMetrics();
			expect(counts(store, clock.now).day).toEqual({ started: 2, completed: 2, errored: 0, terminated: 0 });
		}));

	it('adds the mark of an entry that is deleted or moved before the rollup to its minute first, and counts it once', () =>
		runInDurableObject(stub(uniqueId('rollup-leave')), async (_, state) => {
			const clock = { now: at(M, 10) };
			const { store, minuteRows } = await shardOn(state, clock);
			store.write([entry('deleted', 'completed', at(M, 1), at(M, 2), 3), entry('moved', 'errored', at(M, 1), at(M, 3), 3), entry('stays', 'running', at(M, 1), at(M, 4), 2)]);
			store.tombstone([{ id: 'deleted', version: 4, createdAt: at(M, 1) }], DELETED, at(M, 11));
			store.tombstone([{ id: 'moved', version: 3, createdAt: at(M, 1) }], MOVED, at(M, 12));
			expect(minuteRows()).toEqual([{ minute: M, started: 2, completed: 1, errored: 1, terminated: 0, durations: { [durationBucket(1000)]: 1, [durationBucket(2000)]: 1 } }]);
			const expected = { started: 3, completed: 1, errored: 1, terminated: 0 };
			expect(counts(store, at(M, 20)).day).toEqual(expected);
			clock.now = at(M + 1, 15);
			store.rollUpMetrics();
			expect(counts(store, clock.now).day).toEqual(expected);
			// The moved entry's copy lands on its new shard without counting (the old shard counted it): here, moving back.
			store.write([entry('moved', 'errored', at(M, 1), at(M, 3), 3)], { moved: true });
			clock.now = at(M + 2, 15);
			store.rollUpMetrics();
			expect(counts(store, clock.now).day).toEqual(expected);
		}));

	it('counts once the marks a build without the column left behind when it rewrote their rows (a rollback), and never again one a rollup counted before', () =>
		runInDurableObject(stub(uniqueId('rollup-rollback')), async (_, state) => {
			const clock = { now: at(M, 10) };
			const { store, db } = await shardOn(state, clock);
			store.write([entry('counted', 'completed', at(M - 1, 1), at(M - 1, 2), 3)]);
			clock.now = at(M, 15);
			store.rollUpMetrics(); // `counted` is in minute M - 1's row now
			store.write([entry('touched', 'completed', at(M, 1), at(M, 20), 3), entry('untouched', 'completed', at(M, 1), at(M, 21), 3)]);
			// The build before: its upsert does not name pending_metrics (the column keeps the mark), and it counts its
			// own write straight into the minute rows. Here a restart of `touched` and of `counted` that error, in minute M + 1.
			const old = new IndexMetricsStore(db);
			for (const [id, createdAt] of [['touched', at(M, 1)], ['counted', at(M - 1, 1)]] as const) {
				state.storage.sql.exec("UPDATE index_entries SET status = 'errored', updated_at = ?, version = 6 WHERE id = ?", at(M + 1, 5), id);
				const restart: MetricsDelta = { finished: { minute: M + 1, status: 'errored', durationMs: at(M + 1, 5) - createdAt } };
				old.record(restart);
			}
			// Rolled forward: `touched` and `untouched` count once each (no rollup had passed them); `counted` is not
			// counted again (the rollup that passed it moved the watermark past its mark).
			clock.now = at(M + 2, 15);
			const expected = [
				{ minute: M - 1, started: 1, completed: 1, errored: 0, terminated: 0 },
				{ minute: M, started: 2, completed: 2, errored: 0, terminated: 0 },
				{ minute: M + 1, started: 0, completed: 0, errored: 2, terminated: 0 },
			];
			expect(counts(store, clock.now).minutes).toEqual(expected);
			store.rollUpMetrics();
			expect(counts(store, clock.now).minutes).toEqual(expected);
			// The next write of the touched entry does not carry its counted mark.
			store.write([entry('touched', 'running', at(M, 1), at(M + 2, 16), 7)]);
			clock.now = at(M + 3, 15);
			store.rollUpMetrics();
			expect(counts(store, clock.now).minutes).toEqual(expected);
		}));

	it("exports a closed minute whose runs are still marks on the entries (the export's minutes include them)", () =>
		runInDurableObject(stub(uniqueId('rollup-export')), async (_, state) => {
			const clock = { now: at(M, 10) };
			const { store } = await shardOn(state, clock);
			store.write([entry('exported', 'completed', at(M, 1), at(M, 59), 3)]);
			const points: unknown[] = [];
			let alarm: number | null = null;
			const exporter = new ShardMetricsExport(
				{ writeDataPoint: (point) => void points.push(point) },
				{ getAlarm: async () => alarm, setAlarm: async (t: number) => void (alarm = t), kv: state.storage.kv },
				{ type: 'payment', n: 0, now: () => clock.now },
			);
			// 5 s after the minute closed: within the rollup's margin, so the run is still a mark.
			clock.now = at(M + 1, 6);
			expect(store.rollUpMetrics()).toBe(false);
			await exporter.alarm(store.metrics);
			expect(points).toHaveLength(1);
			// Its minute, 1 started, 1 completed.
			expect((points[0] as { doubles: number[] }).doubles.slice(0, 5)).toEqual([M * 60_000, 1, 1, 0, 0]);
		}));
});
