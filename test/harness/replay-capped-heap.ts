/// <reference types="node" />
// Runs on plain Node with a capped heap (see test/tooling/production-limits-harness.test.ts):
// the real engine, the real Drizzle store and the real schema over node:sqlite. An instance
// writes `results` step results of `bytes` characters, sleeps, and the process "crashes"
// (a new store and engine over the same database); the wake-up's pass replays every result.
// Node dies with "JavaScript heap out of memory" if the replay holds the history in memory.
// Then the instance is archived (to a bucket that only counts bytes) and deleted, as retention
// does: the archive must go out in bounded parts too. Prints one JSON line: the outcomes and
// the peak heap seen by each phase.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InstanceEngine } from '../../src/engine/instance/instance-engine';
import type { EngineHost } from '../../src/engine/instance/engine-host';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import type { ArchiveBucket } from '../../src/engine/lifecycle/archive';
import { defineRegistry } from '../../src/engine/definition/registry';
import { DrizzleInstanceStore } from '../../src/runtime/drizzle-instance-store';
import { ObjectStorage } from '../../src/runtime/object-storage';
import { nodeDurableStorage } from './node-durable-storage';
import { BigHistoryWorkflow } from '../../bench/workflows';

const [results, bytes] = [Number(process.argv[2] ?? 1000), Number(process.argv[3] ?? 100 * 1024)];

const registry = defineRegistry({ 'big-history': { workflow: BigHistoryWorkflow, limits: { historyBytes: 1024 * 1024 * 1024, stepsPerInvocation: 10_000 } } });

let peakHeap = 0;
const sample = () => (peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed));
const sampler = setInterval(sample, 5);

const dir = mkdtempSync(join(tmpdir(), 'shardflow-harness-'));
const clock = { now: 1_700_000_000_000 };
let alarmAt: number | undefined;

/** An R2 stand-in that keeps nothing: it records how many bytes each object had (the archive's bounded parts). */
const written = { objects: 0, bytes: 0, largest: 0 };
const countingBucket: ArchiveBucket = {
	put: async (_key, body) => {
		const bytes = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
		written.objects++;
		written.bytes += bytes;
		written.largest = Math.max(written.largest, bytes);
	},
	getText: async () => undefined,
	listKeys: async () => [],
	delete: async () => {},
};

async function open() {
	const storage = nodeDurableStorage(join(dir, 'instance.sqlite'));
	const objectStorage = new ObjectStorage(storage);
	await objectStorage.ensureSchema();
	const work = new Set<Promise<unknown>>();
	const host: EngineHost = {
		store: new DrizzleInstanceStore(objectStorage.db, storage),
		registry,
		env: {},
		now: () => clock.now,
		setAlarm: (at) => void (alarmAt = at),
		ensureAlarmBy: (at) => void (alarmAt === undefined || alarmAt > at ? (alarmAt = at) : undefined),
		background: (promise) => {
			work.add(promise);
			void promise.finally(() => work.delete(promise));
		},
		sendIndexEntry: async (_entry: IndexEntry) => {},
		yieldToEventLoop: () => new Promise((resolve) => setImmediate(() => resolve(undefined))),
		defer: (fn, ms = 0) => void setTimeout(fn, ms),
		archive: countingBucket,
		destroy: async () => {},
	};
	const idle = async () => {
		while (work.size) await Promise.allSettled([...work]);
	};
	return { engine: new InstanceEngine(host), idle, close: () => (storage as unknown as { close(): void }).close() };
}

try {
	const first = await open();
	await first.engine.create('big-1', 'big-history', { results, bytes, sleepMs: 60_000 });
	await first.idle();
	const writtenStatus = first.engine.status().status;
	first.close();
	(globalThis as { gc?: () => void }).gc?.();
	const heapBeforeReplay = process.memoryUsage().heapUsed;
	peakHeap = heapBeforeReplay;

	// A new process over the same storage: the sleep is due, the alarm replays everything.
	const second = await open();
	clock.now += 61_000;
	second.engine.alarm();
	await second.idle();
	while (alarmAt !== undefined && alarmAt <= clock.now && second.engine.status().status !== 'completed') {
		alarmAt = undefined;
		second.engine.alarm();
		await second.idle();
	}
	sample();
	const status = second.engine.status();
	const replayPeak = peakHeap;

	// Archive it and delete it: the whole history goes to the (counting) bucket in bounded parts.
	(globalThis as { gc?: () => void }).gc?.();
	peakHeap = process.memoryUsage().heapUsed;
	const deleted = await second.engine.delete({ archive: true });
	await second.idle();
	sample();
	second.close();
	console.log(
		JSON.stringify({
			written: writtenStatus,
			status: status.status,
			output: status.output,
			heapBeforeReplayMiB: heapBeforeReplay / 2 ** 20,
			peakHeapMiB: replayPeak / 2 ** 20,
			archive: { deleted: deleted.deleted, objects: written.objects, bytes: written.bytes, largestObjectBytes: written.largest, peakHeapMiB: peakHeap / 2 ** 20 },
		}),
	);
} finally {
	clearInterval(sampler);
	rmSync(dir, { recursive: true, force: true });
}
