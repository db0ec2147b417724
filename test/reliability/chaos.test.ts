import { abortAllDurableObjects, evictDurableObject, runDurableObjectAlarm } from 'cloudflare:test';
import { afterAll, describe, expect, it } from 'vitest';
import { IndexClient } from '../../src/client/index-client';
import { instances } from '../../src/client/instance-client';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { shardName } from '../../src/engine/object-names';
import { advanceClock, resetClock, settle, stub, testEnv, uniqueId } from '../helpers';
import { testRegistry } from '../worker/index';
import { executions, indexFaults } from '../worker/probes';
import { printReport, prng, report } from './report';

const WORKFLOWS = 50;
const SIGNALS = 3; // ChaosWorkflow waits for three "signal" events
const SEED = Number(process.env.CHAOS_SEED ?? 20261125);

afterAll(() => {
	resetClock();
	indexFaults.failWrites = 0;
	printReport('chaos');
});

async function listAll(type: string, prefix: string): Promise<IndexEntry[]> {
	const client = new IndexClient(testEnv, testRegistry);
	const out: IndexEntry[] = [];
	let cursor: string | null = null;
	do {
		const page = await client.list({ type, limit: 1000, cursor });
		out.push(...page.items.filter((e) => e.id.startsWith(prefix)));
		cursor = page.nextCursor;
	} while (cursor);
	return out;
}

describe('eviction chaos', () => {
	it(`runs ${WORKFLOWS} workflows of 30 checkpoints to the right end through evictions, crashes, early and double alarms, out-of-order events and failing shards`, async () => {
		const random = prng(SEED);
		const prefix = uniqueId('chaos');
		const ids = Array.from({ length: WORKFLOWS }, (_, i) => `${prefix}-${i}`);
		const seeds = new Map(ids.map((id, i) => [id, i]));
		// Each workflow gets its three signals in a shuffled order.
		const pending = new Map(ids.map((id) => [id, [10, 20, 30].sort(() => random() - 0.5)]));
		const sent = new Map(ids.map((id) => [id, [] as number[]]));

		await Promise.all(ids.map((id) => instances.create(testEnv, { type: 'chaos', id, payload: { seed: seeds.get(id)! } })));
		report.workflows += WORKFLOWS;
		indexFaults.failWrites = 25; // the shards refuse some deliveries along the way

		const finished = new Set<string>();
		for (let round = 0; round < 400 && finished.size < WORKFLOWS; round++) {
			if (round % 5 === 4) {
				await abortAllDurableObjects(); // a hard crash of every object at once
				report.crashes++;
			}
			await Promise.all(
				ids
					.filter((id) => !finished.has(id))
					.map(async (id) => {
						const dice = random();
						if (dice < 0.2) {
							await evictDurableObject(stub(id)).catch(() => undefined); // not running: nothing to evict
							report.evictions++;
						} else if (dice < 0.25) {
							// An index shard goes away while deliveries are in flight.
							await evictDurableObject(stub(shardName('chaos', Math.floor(random() * 8)))).catch(() => undefined);
							report.evictions++;
						} else if (dice < 0.45 && pending.get(id)!.length) {
							const seq = pending.get(id)!.shift()!;
							sent.get(id)!.push(seq);
							await instances.sendEvent(testEnv, { id, event: 'signal', payload: { seq } });
							report.eventsSent++;
						} else {
							// Alarms fire early (before the clock moves), late, and twice.
							const times = dice < 0.6 ? 2 : 1;
							for (let k = 0; k < times; k++) if (await runDurableObjectAlarm(stub(id))) report.alarmsFired++;
						}
						const { status } = await instances.status(testEnv, { id });
						if (status === 'completed' || status === 'errored') finished.add(id);
					}),
			);
			advanceClock(1500);
		}

		for (const id of ids) {
			await settle(id);
			const status = await instances.status(testEnv, { id });
			const seed = seeds.get(id)!;
			const doSteps = Array.from({ length: 30 }, (_, i) => i).filter((i) => i % 10 !== 4 && i % 10 !== 8);
			expect(status.status, id).toBe('completed');
			expect(status.output).toEqual({ sum: doSteps.reduce((acc, i) => acc + seed + i, 0), signals: sent.get(id) });
			for (const step of status.steps.filter((s) => s.kind === 'do')) {
				// A checkpointed step never runs again; a step runs exactly once per counted attempt.
				expect(executions.get(`${id}:${step.name}`), `${id} ${step.name}`).toBe(step.attempts);
			}
		}

		// The outbox drains: the index agrees with every instance.
		for (let i = 0; i < 20; i++) {
			const entries = await listAll('chaos', prefix);
			if (entries.length === WORKFLOWS && entries.every((e) => e.status === 'completed')) break;
			advanceClock(10 * 60_000);
			await Promise.all(ids.map((id) => runDurableObjectAlarm(stub(id)).then(() => settle(id))));
		}
		const entries = new Map((await listAll('chaos', prefix)).map((e) => [e.id, e]));
		for (const id of ids) {
			const status = await instances.status(testEnv, { id });
			const entry = entries.get(id);
			if (!entry) report.lost++;
			expect(entry, id).toMatchObject({ type: 'chaos', status: status.status, version: status.version });
		}
	});
});

describe('index under concurrent load', () => {
	it('lists and counts exactly 1000 instances created concurrently across 16 shards once the outbox drains', async () => {
		const prefix = uniqueId('bulk');
		const client = new IndexClient(testEnv, testRegistry);
		const before = await client.counts('many');
		const ids = Array.from({ length: 1000 }, (_, i) => `${prefix}-${i}`);
		for (let i = 0; i < ids.length; i += 200) {
			await Promise.all(ids.slice(i, i + 200).map((id) => instances.create(testEnv, { type: 'many', id, payload: { steps: 2 } })));
		}
		report.workflows += ids.length;
		await Promise.all(ids.map((id) => settle(id)));
		const listed = await listAll('many', prefix);
		expect(listed).toHaveLength(1000);
		expect(new Set(listed.map((e) => e.id)).size).toBe(1000);
		expect(listed.every((e) => e.status === 'completed')).toBe(true);
		const after = await client.counts('many');
		expect(after.completed - before.completed).toBe(1000);
	}, 180_000); // ~20 s on an idle 2-core machine; minutes when the machine is shared
});
