import { describe, expect, it } from 'vitest';
import { ARCHIVE_FORMAT_VERSION, type ArchiveBucket, type ArchiveManifest } from '../../src/engine/lifecycle/archive';
import { archivedHistoryPage, readLatestArchive } from '../../src/engine/lifecycle/archive-reader';
import { parseDuration } from '../../src/engine/support/duration';
import { ErrorCode } from '../../src/engine/support/errors';
import { compareEntries, type IndexEntry } from '../../src/engine/index/index-entry';
import { reconcileVerdict } from '../../src/engine/index/reconcile-verdict';
import { defineRegistry, DEFAULT_RETENTION } from '../../src/engine/definition/registry';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { VirtualHost } from '../../src/testing/virtual-host';

const DAY = 86_400_000;

class Greet extends Workflow<{ name: string }, string> {
	static override readonly type = 'greet';
	async run(step: Step, { name }: { name: string }) {
		return step.do('greet', () => `hello ${name}`);
	}
}
class Waits extends Workflow<{}, string> {
	static override readonly type = 'waits';
	static override events = { go: {} as { n: number } };
	async run(step: Step<typeof Waits.events>) {
		const { n } = await step.waitForEvent('go');
		return `got ${n}`;
	}
}
class Kept extends Workflow<{}, string> {
	static override readonly type = 'kept';
	async run() {
		return 'kept';
	}
}
const registry = defineRegistry({
	greet: { workflow: Greet },
	waits: { workflow: Waits, retention: { terminated: '1 hour' } },
	kept: { workflow: Kept, retention: { completed: 'forever' } },
});

/** An archive bucket in memory that can be told to fail. */
class MemoryArchive implements ArchiveBucket {
	objects = new Map<string, string>();
	/** Manifests written (one per archive write that got to its end). */
	puts = 0;
	/** The next this many writes fail. */
	fail = 0;
	async put(key: string, body: string | Uint8Array) {
		if (this.fail > 0) {
			this.fail--;
			throw new Error('archive bucket unavailable');
		}
		if (key.startsWith('shardflow/workflows/')) this.puts++;
		this.objects.set(key, typeof body === 'string' ? body : new TextDecoder().decode(body));
	}
	async getText(key: string) {
		return this.objects.get(key);
	}
	async listKeys(prefix: string) {
		return [...this.objects.keys()].filter((k) => k.startsWith(prefix)).sort();
	}
	async delete(keys: string[]) {
		for (const key of keys) this.objects.delete(key);
	}
	/** Every manifest, by key. */
	manifests(): [string, ArchiveManifest][] {
		return [...this.objects].filter(([key]) => key.startsWith('shardflow/workflows/')).map(([key, text]) => [key, JSON.parse(text) as ArchiveManifest]);
	}
}

/** A finished `greet` instance, its clock moved past its creation. */
async function finished(host = new VirtualHost({ registry })) {
	const engine = host.engine();
	await engine.create('wf-1', 'greet', { name: 'Ada' });
	await host.idle();
	host.advance(1000);
	return { host, engine };
}

describe('delete', () => {
	it('frees the storage and removes the index entry with a removal one version past the last entry', async () => {
		const { host, engine } = await finished();
		const last = engine.currentIndexEntry()!;
		await expect(engine.delete()).resolves.toEqual({ id: 'wf-1', deleted: true });
		expect(host.destroyed).toBe(1);
		expect(host.store.instance).toBeUndefined();
		expect(host.alarmAt).toBeUndefined();
		expect(host.indexEntries.at(-1)).toEqual({ ...last, version: last.version + 1, removed: true });
	});

	it('lets the id be created again as a new instance', async () => {
		const { host, engine } = await finished();
		const old = engine.currentIndexEntry()!;
		await engine.delete();
		host.advance(1);
		const again = host.engine();
		await expect(again.create('wf-1', 'greet', { name: 'Bob' })).resolves.toMatchObject({ created: true });
		await host.idle();
		expect(again.status()).toMatchObject({ status: 'completed', output: 'hello Bob' });
		const fresh = again.currentIndexEntry()!;
		expect(fresh.createdAt).toBeGreaterThan(old.createdAt);
		expect(fresh.version).toBeLessThan(old.version + 1); // versions restart; the incarnation orders them
	});

	it('answers NOT_FOUND for an unknown id and for a repeated delete, and changes nothing', async () => {
		const { host, engine } = await finished();
		await engine.delete();
		await expect(engine.delete()).rejects.toMatchObject({ code: ErrorCode.NotFound });
		await expect(host.engine().delete()).rejects.toMatchObject({ code: ErrorCode.NotFound });
		expect(host.destroyed).toBe(1);
	});

	it('refuses an instance that has not finished unless told to terminate it', async () => {
		const host = new VirtualHost({ registry });
		const engine = host.engine();
		await engine.create('wf-1', 'waits', {});
		await host.idle();
		host.advance(1000);
		await expect(engine.delete()).rejects.toMatchObject({ code: ErrorCode.InvalidState });
		expect(engine.status().status).toBe('waiting');
		await expect(engine.delete({ terminate: true })).resolves.toEqual({ id: 'wf-1', deleted: true });
		expect(host.store.instance).toBeUndefined();
	});

	it('refuses archive without an archive bucket, before changing anything', async () => {
		const { host, engine } = await finished();
		await expect(engine.delete({ archive: true })).rejects.toMatchObject({ code: ErrorCode.ArchiveNotConfigured });
		expect(engine.status().status).toBe('completed');
		expect(host.destroyed).toBe(0);
	});

	it('with a filter, deletes only a matching instance (the instance checks its own row)', async () => {
		const { engine, host } = await finished();
		const { createdAt } = engine.status();
		await expect(engine.delete({ only: { status: ['errored'], createdBefore: createdAt + 1 } })).resolves.toEqual({ id: 'wf-1', deleted: false });
		await expect(engine.delete({ only: { status: ['completed'], createdBefore: createdAt } })).resolves.toEqual({ id: 'wf-1', deleted: false });
		expect(host.destroyed).toBe(0);
		await expect(engine.delete({ only: { status: ['completed'], createdBefore: createdAt + 1 } })).resolves.toEqual({ id: 'wf-1', deleted: true });
	});

	it('keeps the deletion until the index acknowledges the removal: the instance reads as gone and its id cannot be created meanwhile', async () => {
		const { host, engine } = await finished();
		host.failDeliveries = 1;
		await expect(engine.delete()).resolves.toEqual({ id: 'wf-1', deleted: true });
		expect(host.destroyed).toBe(0); // the shard refused: storage stays, the alarm retries
		expect(host.store.deletion).toBeDefined();
		expect(() => engine.status()).toThrow(expect.objectContaining({ code: ErrorCode.NotFound }));
		expect(engine.currentIndexEntry()).toBeNull();
		await expect(engine.create('wf-1', 'greet', { name: 'Ada' })).rejects.toMatchObject({ code: ErrorCode.InvalidState });
		expect(host.alarmAt).toBeDefined();
		await host.fireAlarm(engine);
		expect(host.destroyed).toBe(1);
		expect(host.indexEntries.at(-1)).toMatchObject({ id: 'wf-1', removed: true });
	});

	it('survives a crash at every step: a new engine (an evicted or crashed object) finishes the deletion from the alarm', async () => {
		let { host, engine } = await finished();
		host.failDeliveries = 1;
		await engine.delete();
		host.crash();
		host = host.nextIsolate();
		const revived = host.engine();
		expect(revived.exists).toBe(false);
		await host.fireAlarm(revived);
		expect(host.destroyed).toBe(1);
		expect(host.store.instance).toBeUndefined();
	});

	it('frees nothing before the clock has passed the instance creation, so a later incarnation is always newer', async () => {
		const host = new VirtualHost({ registry });
		const engine = host.engine();
		await engine.create('wf-1', 'greet', { name: 'Ada' });
		await host.idle();
		await engine.delete(); // same millisecond as the create
		expect(host.destroyed).toBe(0);
		expect(host.alarmAt).toBe(host.now() + 1);
		await host.fireAlarm(engine);
		expect(host.destroyed).toBe(1);
	});
});

describe('retention', () => {
	it.for([
		['completed', 'greet', DEFAULT_RETENTION.completed],
		['terminated', 'waits', '1 hour'],
	] as const)('deletes a %s instance by its own alarm once its retention has run out', async ([status, type, keep]) => {
		const host = new VirtualHost({ registry });
		const engine = host.engine();
		await engine.create('wf-1', type, type === 'greet' ? { name: 'Ada' } : {});
		await host.idle();
		if (status === 'terminated') engine.terminate();
		await host.idle();
		const { updatedAt } = engine.status();
		expect(engine.status().status).toBe(status);
		expect(host.alarmAt).toBe(updatedAt + parseDuration(keep));
		await host.fireAlarm(engine);
		expect(host.destroyed).toBe(1);
		expect(host.indexEntries.at(-1)).toMatchObject({ id: 'wf-1', removed: true });
	});

	it("keeps a completed instance 7 days by default, as Cloudflare Workflows' paid plan does, and an errored one 90 days", async () => {
		const host = new VirtualHost({ registry });
		const engine = host.engine();
		await engine.create('wf-1', 'greet', { name: 'Ada' });
		await host.idle();
		const { status, updatedAt } = engine.status();
		expect(status).toBe('completed');
		expect(host.alarmAt).toBe(updatedAt + 7 * DAY);
		expect(DEFAULT_RETENTION).toEqual({ completed: '7 days', errored: '90 days', terminated: '7 days' });
	});

	it('does nothing on an early alarm', async () => {
		const { host, engine } = await finished();
		const expiry = host.alarmAt!;
		host.clock.moveTo(expiry - 1);
		engine.alarm();
		await host.idle();
		expect(host.destroyed).toBe(0);
		expect(host.alarmAt).toBe(expiry);
	});

	it("keeps an instance whose status is kept 'forever', with no alarm", async () => {
		const host = new VirtualHost({ registry });
		const engine = host.engine();
		await engine.create('wf-1', 'kept', {});
		await host.idle();
		expect(engine.status().status).toBe('completed');
		expect(host.alarmAt).toBeUndefined();
	});

	it('starts again when the instance is restarted: a running instance does not expire', async () => {
		const { host, engine } = await finished();
		host.advance(6 * DAY);
		engine.restart();
		await host.idle();
		const { updatedAt } = engine.status();
		expect(host.alarmAt).toBe(updatedAt + parseDuration(DEFAULT_RETENTION.completed));
	});

	it('archives before deleting when an archive is configured', async () => {
		const { host, engine } = await finished(Object.assign(new VirtualHost({ registry }), { archive: new MemoryArchive() }));
		await host.fireAlarm(engine);
		const archive = (host as VirtualHost & { archive: MemoryArchive }).archive;
		expect(host.destroyed).toBe(1);
		expect(archive.manifests().map(([, manifest]) => manifest)).toMatchObject([{ id: 'wf-1', reason: 'retention', status: { status: 'completed' } }]);
	});
});

describe('archive', () => {
	it('writes the status and the whole history (every generation) before the storage goes', async () => {
		const archive = new MemoryArchive();
		const { host, engine } = await finished(Object.assign(new VirtualHost({ registry }), { archive }));
		engine.restart();
		await host.idle();
		host.advance(1000);
		await engine.delete({ archive: true });
		expect(host.destroyed).toBe(1);
		const [[key, manifest]] = archive.manifests() as [[string, ArchiveManifest]];
		expect(key).toMatch(/^shardflow\/workflows\/greet\/\d{4}-\d\d-\d\d\/wf-1\/\d+\.json$/);
		expect(manifest).toMatchObject({ formatVersion: ARCHIVE_FORMAT_VERSION, id: 'wf-1', type: 'greet', generation: 1, reason: 'delete' });
		expect(manifest.status).toMatchObject({ status: 'completed', output: 'hello Ada' });
		// One chunk per generation here (a chunk never spans two), beside the manifest under shardflow/history/.
		expect(manifest.chunks).toEqual([
			{ generation: 0, firstSeq: 1, lastSeq: 4, records: 4, bytes: expect.any(Number) },
			{ generation: 1, firstSeq: 5, lastSeq: 8, records: 4, bytes: expect.any(Number) },
		]);
		expect(await archive.listKeys('shardflow/history/')).toEqual([0, 1].map((i) => `${key.replace('shardflow/workflows/', 'shardflow/history/').replace(/\.json$/, '')}/00000${i}.jsonl`));
		const archived = (await readLatestArchive(archive, 'wf-1'))!;
		const history = [...(await archivedHistoryPage(archived, { generation: 0 })).events, ...(await archivedHistoryPage(archived, { generation: 1 })).events];
		expect(history.map((e) => e.kind)).toEqual([
			'workflow.created', 'step.started', 'step.completed', 'workflow.completed',
			'workflow.restarted', 'step.started', 'step.completed', 'workflow.completed',
		]);
		expect(history.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
	});

	it('keeps the storage while the archive fails and retries it with backoff from the alarm', async () => {
		const archive = Object.assign(new MemoryArchive(), { fail: 2 });
		const { host, engine } = await finished(Object.assign(new VirtualHost({ registry }), { archive }));
		await engine.delete({ archive: true });
		expect(host.destroyed).toBe(0);
		expect(host.store.deletion).toMatchObject({ attempts: 1, archivedKey: null });
		await host.fireAlarm(engine);
		expect(host.store.deletion).toMatchObject({ attempts: 2 });
		await host.fireAlarm(engine);
		expect(host.destroyed).toBe(1);
		expect(archive.manifests()).toHaveLength(1);
	});

	it('a crash between the archive write and the deletion loses nothing and duplicates nothing', async () => {
		const archive = new MemoryArchive();
		let { host, engine } = await finished(Object.assign(new VirtualHost({ registry }), { archive }));
		host.failDeliveries = 1; // the archive is written, the removal not acknowledged
		await engine.delete({ archive: true });
		expect(archive.puts).toBe(1);
		host.crash();
		host = host.nextIsolate();
		const revived = host.engine();
		await host.fireAlarm(revived);
		expect(host.destroyed).toBe(1);
		expect(archive.manifests()).toHaveLength(1);
		expect(archive.puts).toBe(1); // the key was recorded with the deletion: not written again
	});
});

describe('incarnations in the index', () => {
	const old: IndexEntry = { id: 'wf-1', type: 'greet', status: 'completed', createdAt: 1000, updatedAt: 5000, version: 9 };
	const fresh: IndexEntry = { id: 'wf-1', type: 'greet', status: 'running', createdAt: 6000, updatedAt: 6000, version: 2 };

	it('orders a later incarnation after an earlier one whatever their versions', () => {
		expect(compareEntries(fresh, old)).toBe(1);
		expect(compareEntries(old, fresh)).toBe(-1);
		expect(compareEntries(old, { ...old, version: 10 })).toBe(-1);
		expect(compareEntries(old, { ...old })).toBe(0);
	});

	it('lets reconcile replace an entry of a deleted incarnation and keep one of a newer incarnation', () => {
		expect(reconcileVerdict(old, fresh, 'greet')).toBe('stale');
		expect(reconcileVerdict(fresh, old, 'greet')).toBe('ahead');
	});
});
