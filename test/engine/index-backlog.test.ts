import { describe, expect, it } from 'vitest';
import type { BacklogPort } from '../../src/engine/index/index-backlog';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { reconcileVerdict } from '../../src/engine/index/reconcile-verdict';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

class Waiting extends Workflow<{}, string> {
	static override readonly type = 'waiting';
	static override events = { go: {} as { ok: boolean } };
	async run(step: Step<typeof Waiting.events>) {
		await step.waitForEvent('go');
		return 'done';
	}
}

/** A backlog that records its calls and can be told to fail. */
class FakeBacklog implements BacklogPort {
	rows = new Map<string, number>();
	calls: string[] = [];
	failing = false;
	async add(entry: IndexEntry, since: number) {
		this.calls.push(`add:${entry.version}`);
		if (this.failing) throw new Error('backlog down');
		if (!this.rows.has(entry.id)) this.rows.set(entry.id, since);
	}
	async remove(entry: IndexEntry) {
		this.calls.push(`remove:${entry.version}`);
		if (this.failing) throw new Error('backlog down');
		this.rows.delete(entry.id);
	}
}

async function start() {
	const host = new VirtualHost({ registry: registryOf(Waiting) });
	const backlog = new FakeBacklog();
	(host as VirtualHost & { backlog: BacklogPort }).backlog = backlog;
	const engine = host.engine();
	return { host, backlog, engine };
}

describe('index delivery backlog', () => {
	it('registers an instance once when its deliveries fail and deregisters it when one succeeds', async () => {
		const { host, backlog, engine } = await start();
		host.failDeliveries = 3;
		await engine.create('wf-1', 'waiting', {});
		await host.idle();
		expect(backlog.rows.get('wf-1')).toBe(host.now());
		await host.fireAlarm(engine);
		await host.fireAlarm(engine);
		expect(backlog.calls.filter((c) => c.startsWith('add'))).toHaveLength(1);
		await host.fireAlarm(engine);
		expect(backlog.rows.size).toBe(0);
		expect(host.store.readOutbox()).toBeUndefined();
		expect(backlog.calls.at(-1)).toMatch(/^remove/);
	});

	it('deregisters after a newer transition is delivered, also on a fresh engine after eviction', async () => {
		const { host, backlog, engine } = await start();
		host.failDeliveries = 100;
		await engine.create('wf-1', 'waiting', {});
		await host.idle();
		expect(backlog.rows.has('wf-1')).toBe(true);
		const revived = host.engine(); // the outbox row, with its mark, is all that survives
		revived.pause();
		await host.idle();
		expect(backlog.rows.has('wf-1')).toBe(true);
		host.failDeliveries = 0;
		await host.fireAlarm(revived);
		expect(backlog.rows.has('wf-1')).toBe(false);
		expect(host.indexEntries.at(-1)).toMatchObject({ status: 'paused' });
	});

	it('never touches the backlog while deliveries succeed', async () => {
		const { host, backlog, engine } = await start();
		await engine.create('wf-1', 'waiting', {});
		await host.idle();
		await engine.sendEvent('go', { ok: true });
		await host.idle();
		expect(host.indexEntries.at(-1)).toMatchObject({ status: 'completed' });
		expect(backlog.calls).toEqual([]);
	});

	it('keeps retrying a delivery whose deregistration fails, and ignores a backlog that cannot register', async () => {
		const { host, backlog, engine } = await start();
		backlog.failing = true;
		host.failDeliveries = 100;
		await engine.create('wf-1', 'waiting', {});
		await host.idle();
		expect(host.store.readOutbox()?.backloggedSince ?? null).toBeNull();
		backlog.failing = false;
		await host.fireAlarm(engine); // fails again: now it registers
		expect(backlog.rows.has('wf-1')).toBe(true);
		host.failDeliveries = 0;
		backlog.failing = true;
		await host.fireAlarm(engine); // the entry lands, the deregistration does not: the row stays
		expect(host.store.readOutbox()).toBeDefined();
		backlog.failing = false;
		await host.fireAlarm(engine);
		expect(host.store.readOutbox()).toBeUndefined();
		expect(backlog.rows.size).toBe(0);
	});

	it('republishes the current entry on request', async () => {
		const { host, engine } = await start();
		await engine.create('wf-1', 'waiting', {});
		await host.idle();
		const before = host.indexEntries.length;
		const result = await engine.republishIndex();
		expect(result).toMatchObject({ delivered: true, entry: { id: 'wf-1', status: 'waiting', version: engine.currentIndexEntry()!.version } });
		expect(host.indexEntries.length).toBe(before + 1);
	});
});

describe('reconcile verdicts', () => {
	const truth: IndexEntry = { id: 'a', type: 't', status: 'completed', createdAt: 1, updatedAt: 9, version: 4 };
	it.for([
		['the same entry', truth, truth, 'unchanged'],
		['an older version', { ...truth, status: 'running', version: 3 }, truth, 'stale'],
		['the same version with another status', { ...truth, status: 'running' }, truth, 'stale'],
		['an instance of another type', truth, { ...truth, type: 'u' }, 'stale'],
		['no instance', truth, null, 'orphan'],
		['a newer version than the instance', { ...truth, version: 5 }, truth, 'ahead'],
	] as const)('judges %s', ([, listed, instance, verdict]) => {
		expect(reconcileVerdict(listed, instance, 't')).toBe(verdict);
	});
});
