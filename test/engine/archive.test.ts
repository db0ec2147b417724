import { beforeAll, describe, expect, it } from 'vitest';
import { ARCHIVE_CHUNK_BYTES } from '../../src/engine/lifecycle/archive';
import { archivedHistoryPage } from '../../src/engine/lifecycle/archive-reader';
import type { HistoryEvent, HistoryQuery } from '../../src/engine/history/history';
import { defineRegistry } from '../../src/engine/definition/registry';
import type { Step } from '../../src/engine/definition/types';
import { r2Archive, readArchive } from '../../src/runtime/r2-archive';
import { Workflow } from '../../src/workflow';
import { VirtualHost } from '../../src/testing/virtual-host';
import { FakeR2Bucket } from './fake-r2-bucket';

const MiB = 1024 * 1024;
const STEPS = 64;

/** 64 steps of just under 1 MiB each: a history of ~64 MiB. */
class Hoard extends Workflow<{}, number> {
	static override readonly type = 'hoard';
	async run(step: Step) {
		for (let i = 0; i < STEPS; i++) await step.do(`s${i}`, () => `${i}:`.padEnd(MiB - 256, 'x'));
		return STEPS;
	}
}
const registry = defineRegistry({ hoard: { workflow: Hoard } });

/** Every record of one generation, page by page, through `page`. */
async function allRecords(page: (query: HistoryQuery) => Promise<{ events: HistoryEvent[]; nextCursor: string | null }>): Promise<HistoryEvent[]> {
	const events: HistoryEvent[] = [];
	for (let after: string | null = null; ; ) {
		const next = await page({ after, limit: 1000 });
		events.push(...next.events);
		if (next.nextCursor === null) return events;
		after = next.nextCursor;
	}
}

describe('archive of a ~64 MiB history', { timeout: 30_000 }, () => {
	const bucket = new FakeR2Bucket();
	const r2 = bucket as unknown as R2Bucket;
	let live: HistoryEvent[];

	beforeAll(async () => {
		const host = Object.assign(new VirtualHost({ registry }), { archive: r2Archive(r2) });
		const engine = host.engine();
		await engine.create('wf-1', 'hoard', {});
		await host.idle();
		expect(engine.status().status).toBe('completed');
		live = await allRecords(async (query) => engine.history(query));
		host.advance(1000);
		await engine.delete({ archive: true });
		expect(host.destroyed).toBe(1);
	}, 60_000);

	it('hands the bucket no single object over 16 MiB while writing it', () => {
		expect(bucket.bytesPut).toBeGreaterThan(STEPS * (MiB - 256));
		expect(bucket.largestPut).toBeLessThanOrEqual(16 * MiB);
		const chunks = [...bucket.objects].filter(([key]) => key.startsWith('shardflow/history/'));
		expect(chunks.length).toBeGreaterThanOrEqual(16);
		for (const [, body] of chunks) expect(body.byteLength).toBeLessThanOrEqual(ARCHIVE_CHUNK_BYTES);
	});

	it('reads the status of the archived instance without reading its history', async () => {
		bucket.reads = [];
		const archived = (await readArchive(r2, 'wf-1'))!;
		expect(archived.status).toMatchObject({ id: 'wf-1', status: 'completed', output: STEPS });
		// The status itself carries the latest step results within its 4 MiB budget; the history is ~64 MiB.
		expect(bucket.bytesRead()).toBeLessThan(8 * MiB);
	});

	it('reads a history page from its status part and only the chunks that hold the page', async () => {
		bucket.reads = [];
		const archived = (await readArchive(r2, 'wf-1'))!;
		const opened = bucket.reads.length;
		const page = await archivedHistoryPage(archived, { after: 100, limit: 3 });
		expect(page.events.map((e) => e.seq)).toEqual([101, 102, 103]);
		expect(page.nextCursor).toBe('103');
		// Records 101-103 lie in at most two neighbouring chunks of the ~16.
		expect(bucket.reads.length - opened).toBeLessThanOrEqual(2);
		expect(bucket.bytesRead()).toBeLessThan(16 * MiB);
	});

	it('pages back every record exactly as the live instance answered it', async () => {
		const archived = (await readArchive(r2, 'wf-1'))!;
		const events = await allRecords(async (query) => archivedHistoryPage(archived, query));
		expect(events.length).toBe(live.length);
		expect(JSON.stringify(events)).toBe(JSON.stringify(live));
	});
});

describe('a write that fails part way', () => {
	it('is retried from the alarm and leaves exactly the chunks its manifest lists', async () => {
		const bucket = new FakeR2Bucket();
		let failures = 1;
		// The third chunk's write fails once: two chunks are in the bucket, no manifest.
		bucket.failPut = (key) => key.endsWith('/000002.jsonl') && failures-- > 0;
		const host = Object.assign(new VirtualHost({ registry }), { archive: r2Archive(bucket as unknown as R2Bucket) });
		const engine = host.engine();
		await engine.create('wf-2', 'hoard', {});
		await host.idle();
		const live = await allRecords(async (query) => engine.history(query));
		host.advance(1000);
		await engine.delete({ archive: true });
		expect(host.destroyed).toBe(0);
		expect([...bucket.objects.keys()].filter((k) => k.startsWith('shardflow/workflows/'))).toEqual([]);

		await host.fireAlarm(engine);
		expect(host.destroyed).toBe(1);
		const [manifestKey, ...others] = [...bucket.objects.keys()].filter((k) => k.startsWith('shardflow/workflows/'));
		expect(others).toEqual([]);
		const manifest = JSON.parse(new TextDecoder().decode(bucket.objects.get(manifestKey!)));
		const chunkKeys = [...bucket.objects.keys()].filter((k) => k.startsWith('shardflow/history/'));
		expect(chunkKeys).toHaveLength(manifest.chunks.length);
		const archived = (await readArchive(bucket as unknown as R2Bucket, 'wf-2'))!;
		expect(JSON.stringify(await allRecords(async (query) => archivedHistoryPage(archived, query)))).toBe(JSON.stringify(live));
	}, 60_000);
});

describe('a version-1 record', () => {
	it('is still read: its status and its history pages', async () => {
		const bucket = new FakeR2Bucket();
		const r2 = bucket as unknown as R2Bucket;
		const key = 'shardflow/workflows/greet/2023-11-14/wf-old/1700000000000.json';
		const history = [
			{ seq: 1, at: 1, kind: 'workflow.created', generation: 0, payload: { name: 'Ada' } },
			{ seq: 2, at: 2, kind: 'workflow.completed', generation: 0, output: 'hi' },
			{ seq: 3, at: 3, kind: 'workflow.restarted', generation: 1, previousGeneration: 0 },
			{ seq: 4, at: 4, kind: 'workflow.completed', generation: 1, output: 'hi again' },
		];
		const status = { id: 'wf-old', type: 'greet', status: 'completed', output: 'hi again', createdAt: 1_700_000_000_000, generation: 1 };
		await bucket.put(key, JSON.stringify({ formatVersion: 1, historyFormatVersion: 1, id: 'wf-old', type: 'greet', generation: 1, status, history, deletedAt: 5, reason: 'delete' }));
		await bucket.put('shardflow/ids/wf-old.json', JSON.stringify({ keys: [key] }));

		const archived = (await readArchive(r2, 'wf-old'))!;
		expect(archived.status).toEqual(status);
		const last = await archivedHistoryPage(archived, {});
		expect(last).toMatchObject({ id: 'wf-old', type: 'greet', generation: 1, nextCursor: null, archived: true });
		expect(last.events).toEqual(history.slice(2));
		const first = await archivedHistoryPage(archived, { generation: 0, limit: 1 });
		expect(first.events).toEqual(history.slice(0, 1));
		expect(first.nextCursor).toBe('1');
	});
});
