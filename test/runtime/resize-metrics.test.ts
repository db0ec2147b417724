import { describe, expect, it } from 'vitest';
import { IndexClient, routeIndexEntry } from '../../src/client/index-client';
import { rebalance } from '../../src/client/rebalance';
import { defineRegistry } from '../../src/engine/definition/registry';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import type { TypeMetrics } from '../../src/engine/index/run-metrics';
import { shardIndex } from '../../src/engine/index/shard';
import { Workflow } from '../../src/workflow';
import { testEnv, uniqueId } from '../helpers';
import { testClock } from '../worker/test-clock';

class Resized extends Workflow<{}, void> {
	static override readonly type = 'resized-metrics';
	async run() {}
}
const layout = (shards: number, previousShards?: number) =>
	defineRegistry({ 'resized-metrics': { workflow: Resized, shards, ...(previousShards ? { previousShards } : {}) } });

/** The counts of a type's last hour that a resize must not change, read through `layout` (both layouts' shards while resizing). */
async function hour(registry: ReturnType<typeof layout>): Promise<TypeMetrics['hour']> {
	return (await new IndexClient(testEnv, registry).metrics('resized-metrics', testClock.now())).hour;
}
const counted = (h: TypeMetrics['hour']) => ({ started: h.started, completed: h.completed, errored: h.errored, terminated: h.terminated, runs: h.durationMs.runs });
const minus = (a: ReturnType<typeof counted>, b: ReturnType<typeof counted>) =>
	Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v - b[k as keyof typeof b]]));

async function rebalanceFully(registry: ReturnType<typeof layout>) {
	let cursor: string | null = null;
	for (let i = 0; i < 100; i++) {
		const progress = await rebalance(testEnv, registry, 'resized-metrics', { cursor, batchSize: 7 });
		if (progress.done) return progress;
		cursor = progress.cursor;
	}
	throw new Error('rebalance did not finish');
}

describe('run metrics across a resize (shards 2 -> 4)', () => {
	it('does not count again the runs that finished before the deploy when their entries are delivered again to their new home shards, before and after the rebalance', async () => {
		const prefix = uniqueId('resized');
		const before = layout(2);
		const during = layout(4, 2);
		const now = testClock.now();
		const start = counted(await hour(during));
		// 16 runs finish under 2 shards (9 completed, 7 errored), each counted once where it landed.
		const runs: IndexEntry[] = Array.from({ length: 16 }, (_, i) => ({
			id: `${prefix}-${i}`, type: 'resized-metrics', status: i < 9 ? 'completed' : 'errored', createdAt: now - 3000, updatedAt: now - 3000 + 14, version: 3,
		}));
		await Promise.all(runs.map((e) => routeIndexEntry(testEnv, before, e)));
		const finished = minus(counted(await hour(during)), start);
		expect(finished).toEqual({ started: 16, completed: 9, errored: 7, terminated: 0, runs: 16 });
		// Some of them move: the check below is only worth something if their home shard changed.
		expect(runs.filter((e) => shardIndex(e.id, 2) !== shardIndex(e.id, 4)).length).toBeGreaterThan(0);

		// The deploy with shards: 4, previousShards: 2; each entry is delivered once more (a compact run's backstop
		// delivers again, since it keeps no acknowledgement), this time to its home under the new layout.
		await Promise.all(runs.map((e) => routeIndexEntry(testEnv, during, e)));
		expect(minus(counted(await hour(during)), start)).toEqual(finished);
		await rebalanceFully(during);
		expect(minus(counted(await hour(during)), start)).toEqual(finished);
		expect(minus(counted(await hour(layout(4))), start)).toEqual(finished);
	});

	it('counts a waiting run terminated after the deploy as one finish and no second start', async () => {
		const prefix = uniqueId('resized-waiting');
		const during = layout(4, 2);
		const now = testClock.now();
		const start = counted(await hour(during));
		const waiting: IndexEntry[] = Array.from({ length: 12 }, (_, i) => ({
			id: `${prefix}-${i}`, type: 'resized-metrics', status: 'waiting', createdAt: now - 5000, updatedAt: now - 4000, version: 2,
		}));
		await Promise.all(waiting.map((e) => routeIndexEntry(testEnv, layout(2), e)));
		await Promise.all(waiting.map((e) => routeIndexEntry(testEnv, during, { ...e, status: 'terminated', updatedAt: now - 1000, version: 4 })));
		expect(minus(counted(await hour(during)), start)).toEqual({ started: 12, completed: 0, errored: 0, terminated: 12, runs: 0 });
	});
});
