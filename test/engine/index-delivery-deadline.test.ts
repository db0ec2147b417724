import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/engine/definition/types';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { metricsDelta } from '../../src/engine/index/run-metrics';
import { OUTBOX_GRACE_MS } from '../../src/engine/support/timing';
import { VirtualHost } from '../../src/testing/virtual-host';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';

/** A step, a step that fails its first `failures` attempts (retried `delayMs` apart), a step: the bench's retry scenario. */
class Retries extends Workflow<{ failures: number; delayMs: number }, number> {
	static override readonly type = 'retries';
	async run(step: Step, { failures, delayMs }: { failures: number; delayMs: number }) {
		const a = await step.do('before', async () => 1);
		const b = await step.do(
			'flaky',
			async ({ attempt }) => {
				if (attempt <= failures) throw new Error(`attempt ${attempt} fails`);
				return attempt;
			},
			{ retries: { limit: failures, delay: delayMs, backoff: 'constant' } },
		);
		return a + b + (await step.do('after', async () => 1));
	}
}
class Naps extends Workflow<{ ms: number }, string> {
	static override readonly type = 'naps';
	async run(step: Step, { ms }: { ms: number }) {
		await step.sleep('nap', ms);
		return step.do('after', async () => 'done');
	}
}
class Quick extends Workflow<{}, string> {
	static override readonly type = 'quick';
	async run(step: Step) {
		return step.do('only', () => 'ok');
	}
}
const registry = registryOf(Retries, Naps, Quick);

/** A host that records when each entry reached the index, and counts the alarm writes (each a billed row). */
function recordingHost(options: { holdsWokenRunning?: boolean } = {}) {
	const host = new VirtualHost({ registry, ...options });
	return instrument(host);
}

function instrument(host: VirtualHost) {
	const delivered: { entry: IndexEntry; at: number }[] = [];
	const send = host.sendIndexEntry.bind(host);
	host.sendIndexEntry = async (entry) => {
		await send(entry);
		delivered.push({ entry, at: host.now() });
	};
	const counted = { alarmWrites: 0 };
	const set = host.setAlarm.bind(host);
	const ensure = host.ensureAlarmBy.bind(host);
	host.setAlarm = (at) => {
		if (host.alarmAt !== at) counted.alarmWrites++;
		set(at);
	};
	host.ensureAlarmBy = (at) => {
		if (host.alarmAt === undefined || host.alarmAt > at) counted.alarmWrites++;
		ensure(at);
	};
	return { host, delivered, counted };
}

/**
 * The statuses delivered after the first pass began. On this host the create's delivery runs on the next macrotask, before a
 * first pass that yields has ended (under workerd the 20 ms coalescing lets it end first): `created` or `running` may come first.
 */
function statusesAfterStart(delivered: { entry: IndexEntry }[]): string[] {
	const statuses = delivered.map((d) => d.entry.status);
	while (statuses[0] === 'created' || statuses[0] === 'running') statuses.shift();
	return statuses;
}

/** Fires every alarm due until `until` (or until none is set); how many fired. */
async function fireAlarmsUntil(host: VirtualHost, engine: ReturnType<VirtualHost['engine']>, until: number): Promise<number> {
	let fired = 0;
	while (host.alarmAt !== undefined && host.alarmAt <= until && fired < 100_000) {
		await host.fireAlarm(engine);
		fired++;
	}
	return fired;
}

const layouts = [
	{ name: 'a woken pass writes its running (table layout)', holdsWokenRunning: false },
	{ name: "a woken pass holds its running (the compact layout's format 2)", holdsWokenRunning: true },
];

describe('a sleeping status whose wake-up comes before its delivery is due is not delivered alone', () => {
	it.for(layouts)('a step retried twice, 1 s apart, reaches the index once, at its completion ($name)', async ({ holdsWokenRunning }) => {
		const { host, delivered, counted } = recordingHost({ holdsWokenRunning });
		const engine = host.engine();
		const createdAt = host.now();
		await engine.create('wf-1', 'retries', { failures: 2, delayMs: 1_000 });
		await host.idle();
		// Sleeping until its retry 1 s later: not delivered (main delivered `sleeping` here, a new entry: 2 rows).
		expect(engine.status().status).toBe('sleeping');
		expect(statusesAfterStart(delivered)).toEqual([]);
		await fireAlarmsUntil(host, engine, createdAt + 60_000);
		expect(engine.status().status).toBe('completed');
		// One delivery, the completed entry (main: sleeping, sleeping again, completed: 3 deliveries, 5 index rows).
		expect(statusesAfterStart(delivered)).toEqual(['completed']);
		expect(delivered.at(-1)!.entry.version).toBe(engine.status().version);
		expect(delivered.at(-1)!.at).toBeLessThanOrEqual(createdAt + OUTBOX_GRACE_MS);
		expect(host.store.outbox).toBeUndefined();
		// As many alarm writes as on main (6): the backstop, each retry's wake-up and the watchdog of the pass it wakes (this
		// host's alarm handler awaits no pass), and the retention's expiry. None for the deadline: while the entry waits, the
		// alarm comes by its wake-up, which the pass's end sets anyway (ensuring it by the deadline instead took 7: the deadline
		// falls before a woken pass's watchdog).
		expect(counted.alarmWrites).toBe(6);
	});

	it.for(layouts)(
		'a run retrying every second is listed by its first deadline and again within every one after, never pushed back by its next retry ($name)',
		async ({ holdsWokenRunning }) => {
			const { host, delivered } = recordingHost({ holdsWokenRunning });
			const engine = host.engine();
			const createdAt = host.now();
			await engine.create('wf-1', 'retries', { failures: 1_000, delayMs: 1_000 });
			await host.idle();
			await fireAlarmsUntil(host, engine, createdAt + 120_000);
			expect(engine.status().status).toBe('sleeping');
			// Listed by create + 10 s, and each later status by 10 s after the first change since the delivery before it.
			expect(delivered[0]!.at).toBeLessThanOrEqual(createdAt + OUTBOX_GRACE_MS);
			for (let i = 1; i < delivered.length; i++) expect(delivered[i]!.at - delivered[i - 1]!.at).toBeLessThanOrEqual(OUTBOX_GRACE_MS + 1_000);
			expect(delivered.at(-1)!.at).toBeGreaterThan(createdAt + 120_000 - OUTBOX_GRACE_MS - 1_000);
			// About one delivery per 10 s, not one per retry (main: 121 in these two minutes).
			expect(delivered.length).toBeLessThanOrEqual(Math.ceil(120_000 / OUTBOX_GRACE_MS) + 1);
			// Versions only grow: the shard never takes an older status for a newer one.
			for (let i = 1; i < delivered.length; i++) expect(delivered[i]!.entry.version).toBeGreaterThan(delivered[i - 1]!.entry.version);
		},
	);

	it('a sleep that ends before the deadline is superseded by its next status; a sleep past it is listed as sleeping at once', async () => {
		const short = recordingHost({ holdsWokenRunning: true });
		const shortEngine = short.host.engine();
		await shortEngine.create('wf-1', 'naps', { ms: 5_000 });
		await short.host.idle();
		expect(shortEngine.status().status).toBe('sleeping');
		expect(statusesAfterStart(short.delivered)).toEqual([]);
		await fireAlarmsUntil(short.host, shortEngine, short.host.now() + 60_000);
		expect(statusesAfterStart(short.delivered)).toEqual(['completed']);

		const long = recordingHost({ holdsWokenRunning: true });
		const longEngine = long.host.engine();
		await longEngine.create('wf-1', 'naps', { ms: 7 * 86_400_000 });
		await long.host.idle();
		expect(statusesAfterStart(long.delivered)).toEqual(['sleeping']);
		expect(long.delivered.at(-1)!.at).toBe(long.host.now());
		await fireAlarmsUntil(long.host, longEngine, long.host.now() + 8 * 86_400_000);
		expect(statusesAfterStart(long.delivered)).toEqual(['sleeping', 'completed']);
	});

	it('a finished run is delivered at once, once', async () => {
		const { host, delivered } = recordingHost();
		const engine = host.engine();
		await engine.create('wf-1', 'quick', {});
		await host.idle();
		expect(statusesAfterStart(delivered)).toEqual(['completed']);
		expect(delivered.at(-1)!.at).toBe(host.now());
	});

	it.for(layouts)('an isolate that dies while its sleeping status is left pending: the next one delivers the newest entry by the deadline ($name)', async ({ holdsWokenRunning }) => {
		const { host, delivered } = recordingHost({ holdsWokenRunning });
		const engine = host.engine();
		const createdAt = host.now();
		await engine.create('wf-1', 'retries', { failures: 2, delayMs: 1_000 });
		await host.idle();
		expect(statusesAfterStart(delivered)).toEqual([]);
		host.crash();
		// What survives: the pending entry in storage with its deadline, and an alarm due by then.
		expect(host.durable.store.outbox).toMatchObject({ entry: { status: 'sleeping' }, nextAttemptAt: createdAt + OUTBOX_GRACE_MS });
		expect(host.alarmAt).toBeLessThanOrEqual(createdAt + OUTBOX_GRACE_MS);
		const next = instrument(host.nextIsolate());
		const again = next.host.engine();
		await fireAlarmsUntil(next.host, again, createdAt + 60_000);
		expect(again.status().status).toBe('completed');
		expect(next.delivered.map((d) => d.entry.status)).toEqual(['completed']);
		expect(next.delivered[0]!.at).toBeLessThanOrEqual(createdAt + OUTBOX_GRACE_MS);
	});

	it('an isolate that dies while its sleeping status is left pending, whose run sleeps again past the deadline: the alarm at the deadline delivers it', async () => {
		const { host } = recordingHost({ holdsWokenRunning: true });
		const engine = host.engine();
		const createdAt = host.now();
		// Retries 10 s apart: the first retry falls at the deadline itself (create + 10 s), so the status is left pending.
		await engine.create('wf-1', 'retries', { failures: 2, delayMs: OUTBOX_GRACE_MS });
		await host.idle();
		expect(host.durable.store.outbox).toMatchObject({ entry: { status: 'sleeping' }, nextAttemptAt: createdAt + OUTBOX_GRACE_MS });
		host.crash();
		const next = instrument(host.nextIsolate());
		const again = next.host.engine();
		// The alarm at create + 10 s is both the retry and the deadline: the entry goes, and the retry's next sleeping with it.
		expect(next.host.alarmAt).toBe(createdAt + OUTBOX_GRACE_MS);
		await next.host.fireAlarm(again);
		expect(next.delivered.length).toBeGreaterThan(0);
		expect(next.delivered.at(-1)!.entry).toMatchObject({ status: 'sleeping', version: again.status().version });
		expect(next.delivered.every((d) => d.at <= createdAt + OUTBOX_GRACE_MS)).toBe(true);
	});

	it('the run metrics count a run retried every second for 30 s once: one start, one finish with its whole duration', async () => {
		const { host, delivered } = recordingHost({ holdsWokenRunning: true });
		const engine = host.engine();
		const createdAt = host.now();
		await engine.create('wf-1', 'retries', { failures: 30, delayMs: 1_000 });
		await host.idle();
		await fireAlarmsUntil(host, engine, createdAt + 120_000);
		expect(engine.status().status).toBe('completed');
		// What a shard counts, delivery by delivery, against the row it holds (engine/index/run-metrics.ts).
		let prior: { status: string; createdAt: number; generation?: number } | null = null;
		let started = 0;
		const finished: number[] = [];
		for (const { entry } of delivered) {
			const delta = metricsDelta(prior, entry);
			if (delta.startedMinute !== undefined) started++;
			if (delta.finished) finished.push(delta.finished.durationMs);
			prior = entry;
		}
		expect(started).toBe(1);
		expect(finished).toEqual([host.now() - createdAt]);
		// Every 10 s or so, not every second (main: 32 deliveries).
		expect(delivered.length).toBeLessThanOrEqual(5);
	});

	it('republish sends an entry left pending for its status to end', async () => {
		const { host, delivered } = recordingHost({ holdsWokenRunning: true });
		const engine = host.engine();
		await engine.create('wf-1', 'retries', { failures: 2, delayMs: 1_000 });
		await host.idle();
		expect(statusesAfterStart(delivered)).toEqual([]);
		const { entry, delivered: sent } = await engine.republishIndex();
		expect(sent).toBe(true);
		expect(entry.status).toBe('sleeping');
		expect(statusesAfterStart(delivered)).toEqual(['sleeping']);
	});

	it('pause and terminate of a run left pending are delivered at once', async () => {
		const { host, delivered } = recordingHost({ holdsWokenRunning: true });
		const engine = host.engine();
		await engine.create('wf-1', 'retries', { failures: 2, delayMs: 1_000 });
		await host.idle();
		expect(statusesAfterStart(delivered)).toEqual([]);
		engine.pause();
		await host.idle();
		expect(statusesAfterStart(delivered)).toEqual(['paused']);
		engine.terminate();
		await host.idle();
		expect(statusesAfterStart(delivered)).toEqual(['paused', 'terminated']);
	});
});
