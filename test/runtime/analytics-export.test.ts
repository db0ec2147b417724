import { runInDurableObject } from 'cloudflare:test';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { migrate } from 'drizzle-orm/durable-sqlite/migrator';
import { describe, expect, it } from 'vitest';
import migrations from '../../drizzle/migrations';
import { EXPORT_BATCH, EXPORT_LAYOUT, exportDueAt, type AnalyticsDataPoint } from '../../src/engine/index/metrics-export';
import { durationBucket, type MetricsDelta } from '../../src/engine/index/run-metrics';
import { shardName } from '../../src/engine/object-names';
import { IndexMetricsStore } from '../../src/runtime/index-metrics-store';
import { ShardMetricsExport } from '../../src/runtime/shard-metrics-export';
import { ShardAlarm } from '../../src/runtime/shard-alarm';
import { nextShardAlarm } from '../../src/engine/lifecycle/retention-sweep';
import { api } from '../api/helpers';
import { settle, stub, uniqueId } from '../helpers';

const M = 29_500_000; // a minute number (2026)
const finished = (minute: number, durationMs: number, status: 'completed' | 'errored' | 'terminated' = 'completed'): MetricsDelta => ({
	startedMinute: minute,
	finished: { minute, status, durationMs },
});

/**
 * The shard's key-value storage, with an alarm of its own: the object these tests borrow is an
 * instance's, whose runner may arm its own alarm.
 */
function exportStorage(state: DurableObjectState) {
	let alarm: number | null = null;
	return {
		getAlarm: async () => alarm,
		setAlarm: async (at: number) => void (alarm = at),
		kv: state.storage.kv,
		/** The alarm fires: it is no longer set while its handler runs. */
		fire: async (exporter: ShardMetricsExport, metrics: IndexMetricsStore) => {
			alarm = null;
			// As the shard's role does: the alarm is consumed, the duty runs and asks for its next time.
			exporter.shardAlarm.fired();
			const next = await exporter.alarm(metrics);
			if (next !== undefined) await exporter.shardAlarm.ensureBy(next);
		},
	};
}

/** A dataset that keeps what it is given, as a test's stand-in for the `SHARDFLOW_ANALYTICS` binding. */
function fakeDataset() {
	const points: AnalyticsDataPoint[] = [];
	return { points, writeDataPoint: (point: AnalyticsDataPoint) => void points.push(structuredClone(point)) };
}

describe('the Analytics Engine export of an index shard', () => {
	it('writes one data point per minute that counted runs, once, after the minute closed, with its counters and run times in the documented columns', () =>
		runInDurableObject(stub(uniqueId('ae-export')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			const metrics = new IndexMetricsStore(db);
			const dataset = fakeDataset();
			const storage = exportStorage(state);
			let now = M * 60_000 + 10_000;
			const exporter = new ShardMetricsExport(dataset, storage, { type: 'payment', n: 3, now: () => now });

			metrics.record(finished(M, 1500));
			metrics.record(finished(M, 0.5));
			metrics.record(finished(M, 3 * 3_600_000, 'errored'));
			metrics.record(finished(M, 200, 'terminated'));
			await exporter.counted();
			await exporter.counted(); // one alarm, not one per write
			expect(await storage.getAlarm()).toBe(exportDueAt(M));
			expect(dataset.points).toEqual([]);

			now = exportDueAt(M);
			await storage.fire(exporter, metrics);
			expect(dataset.points).toHaveLength(1);
			const [point] = dataset.points;
			expect(point!.indexes).toEqual(['payment']);
			expect(point!.blobs).toEqual(['payment', '3', EXPORT_LAYOUT]);
			const runTimes = new Array(15).fill(0);
			runTimes[0] = 1; // 0.5 ms: under 1 ms
			runTimes[6] = 1; // 1500 ms: [4^5, 4^6) = [1024, 4096) ms
			runTimes[12] = 1; // 3 hours: [4^11, 4^12) = [70 min, 4.7 h)
			expect(point!.doubles).toEqual([M * 60_000, 4, 2, 1, 1, ...runTimes]);
			expect(durationBucket(1500)).toBeGreaterThan(16 * 5); // the fine bucket is inside that column's bounds
			expect(await storage.getAlarm()).toBeNull(); // nothing newer to write

			// A later minute: written at its own alarm, and the first minute is not written again.
			now = (M + 2) * 60_000 + 1000;
			metrics.record(finished(M + 2, 40));
			await exporter.counted();
			now = exportDueAt(M + 2);
			// An eviction: a new export in a new isolate resumes from the stored watermark.
			const next = new ShardMetricsExport(dataset, storage, { type: 'payment', n: 3, now: () => now });
			await storage.fire(next, metrics);
			expect(dataset.points.map((p) => p.doubles[0])).toEqual([M * 60_000, (M + 2) * 60_000]);
			await storage.fire(next, metrics);
			expect(dataset.points).toHaveLength(2);
		}));

	it('arms the alarm again for a minute that counted runs while the alarm was pending, and writes a long backlog of minutes in batches', () =>
		runInDurableObject(stub(uniqueId('ae-batches')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			const metrics = new IndexMetricsStore(db);
			const dataset = fakeDataset();
			const storage = exportStorage(state);
			let now = M * 60_000;
			const exporter = new ShardMetricsExport(dataset, storage, { type: 't', n: 0, now: () => now });
			metrics.record(finished(M, 10));
			await exporter.counted();
			now = exportDueAt(M) - 1; // the current minute (M + 1) counts a run before the alarm
			metrics.record(finished(M + 1, 10));
			await exporter.counted();
			now = exportDueAt(M);
			await storage.fire(exporter, metrics);
			expect(dataset.points.map((p) => p.doubles[0])).toEqual([M * 60_000]);
			expect(await storage.getAlarm()).toBe(exportDueAt(M + 1));

			// 70 busy minutes while the alarm could not run: written 60 (EXPORT_BATCH) at a time, the rest at once after.
			for (let k = 2; k < 72; k++) metrics.record(finished(M + k, 10));
			now = exportDueAt(M + 71);
			await storage.fire(exporter, metrics);
			expect(dataset.points).toHaveLength(1 + EXPORT_BATCH);
			expect(await storage.getAlarm()).toBe(now);
			await storage.fire(exporter, metrics);
			expect(dataset.points.map((p) => p.doubles[0]! / 60_000)).toEqual(Array.from({ length: 72 }, (_, k) => M + k));
		}));

	it("shares the shard's one alarm with the retention sweep: neither duty's request moves the other's alarm later", () =>
		runInDurableObject(stub(uniqueId('ae-shared')), async (_, state) => {
			const db = drizzle(state.storage);
			await migrate(db, migrations);
			const metrics = new IndexMetricsStore(db);
			const storage = exportStorage(state);
			let now = M * 60_000 + 10_000;
			const alarm = new ShardAlarm(storage);
			const exporter = new ShardMetricsExport(fakeDataset(), storage, { type: 'payment', n: 0, now: () => now }, alarm);
			const retentionDue = now + 7 * 86_400_000;
			// The retention asks first (a run finished), then a run is counted: the minute's export comes first.
			await alarm.ensureBy(retentionDue);
			metrics.record(finished(M, 10));
			await exporter.counted();
			expect(await storage.getAlarm()).toBe(exportDueAt(M));
			// The retention asks again: the export's earlier alarm stays.
			await alarm.ensureBy(retentionDue);
			expect(await storage.getAlarm()).toBe(exportDueAt(M));
			// The alarm fires: the export writes its minute and has nothing newer; the sweep's time is asked for again.
			now = exportDueAt(M);
			alarm.fired();
			const next = nextShardAlarm(now, [await exporter.alarm(metrics), retentionDue]);
			if (next !== undefined) await alarm.ensureBy(next);
			expect(await storage.getAlarm()).toBe(retentionDue);
		}));

	it('writes nothing and arms no alarm when SHARDFLOW_ANALYTICS is not bound', async () => {
		const id = uniqueId('ae-unbound');
		await api('POST', '/workflows', { type: 'test', id, payload: { name: 'x' } });
		await settle(id);
		await runInDurableObject(stub(shardName('test', 0)), async (_, state) => {
			expect(await state.storage.getAlarm()).toBeNull();
			expect(state.storage.kv.get('analytics:exportedThrough')).toBeUndefined();
		});
	});
});
