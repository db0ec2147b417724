import { runInDurableObject } from 'cloudflare:test';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { migrate } from 'drizzle-orm/durable-sqlite/migrator';
import { describe, expect, it } from 'vitest';
import migrations from '../../drizzle/migrations';
import { durationBucket, type MetricsDelta } from '../../src/engine/index/run-metrics';
import { IndexMetricsStore } from '../../src/runtime/index-metrics-store';
import { stub, uniqueId } from '../helpers';

/** The rows SQLite reports written (what Cloudflare bills) by the statements `fn` runs. */
function rowsWritten(state: DurableObjectState, fn: () => void): number {
	const exec = state.storage.sql.exec.bind(state.storage.sql);
	const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
	const counting = (query: string, ...bindings: SqlStorageValue[]) => {
		const cursor = exec(query, ...bindings);
		cursors.push(cursor);
		return cursor;
	};
	Object.defineProperty(state.storage.sql, 'exec', { value: counting, configurable: true, writable: true });
	try {
		fn();
	} finally {
		Object.defineProperty(state.storage.sql, 'exec', { value: exec, configurable: true, writable: true });
	}
	return cursors.reduce((sum, cursor) => sum + cursor.rowsWritten, 0);
}

const MINUTE = 29_000_000;
const run = (durationMs: number, status: 'completed' | 'errored' | 'terminated' = 'completed', finishedMinute = MINUTE): MetricsDelta => ({
	startedMinute: MINUTE,
	finished: { minute: finishedMinute, status, durationMs },
});

describe('run metrics of an index shard', () => {
	it('cost one row written per finished run, its counters and its duration together, whatever the bucket (drizzle/0017)', () =>
		runInDurableObject(stub(uniqueId('metrics-rows')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			const metrics = new IndexMetricsStore(db);
			// The minute's first run, a run in a new bucket, a run in a bucket already there: 1 row each (were 3, 3 and 2).
			expect([run(1500), run(40), run(1500)].map((delta) => rowsWritten(state, () => metrics.record(delta)))).toEqual([1, 1, 1]);
			// A run that finished in the next minute: its start and its end, a row each (were 1 and 3).
			expect(rowsWritten(state, () => metrics.record(run(61_000, 'errored', MINUTE + 1)))).toBe(2);
			const read = metrics.read((MINUTE + 1) * 60_000);
			expect(read.durations.hour).toEqual({ [durationBucket(1500)]: 2, [durationBucket(40)]: 1, [durationBucket(61_000)]: 1 });
			expect(read.minutes).toEqual([
				{ minute: MINUTE, started: 4, completed: 3, errored: 0, terminated: 0 },
				{ minute: MINUTE + 1, started: 0, completed: 0, errored: 1, terminated: 0 },
			]);
		}));

	it('add in the durations an older build kept in index_metric_durations, in the same minute too (a deploy rolled back and forward)', () =>
		runInDurableObject(stub(uniqueId('metrics-old')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			// What a build before drizzle/0017 writes for a run of 1.5 s: its minute's counters and a histogram row.
			state.storage.sql.exec('INSERT INTO index_metric_minutes (minute, started, completed) VALUES (?, 1, 1)', MINUTE);
			state.storage.sql.exec('INSERT INTO index_metric_durations (minute, bucket, runs) VALUES (?, ?, 1)', MINUTE, durationBucket(1500));
			const metrics = new IndexMetricsStore(db);
			metrics.record(run(1500));
			metrics.record(run(5, 'terminated'));
			const read = metrics.read(MINUTE * 60_000);
			expect(read.durations.hour).toEqual({ [durationBucket(1500)]: 2 });
			expect(read.durations.day).toEqual({ [durationBucket(1500)]: 2 });
			expect(read.day).toEqual({ started: 3, completed: 2, errored: 0, terminated: 1 });
		}));
});
