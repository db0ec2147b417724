import { describe, expect, it } from 'vitest';
import { Workflow, type Step } from '../../src/authoring';
import { concurrencyOf } from '../../src/engine/limiter/concurrency';
import { limiterName, limiterOf } from '../../src/engine/object-names';
import { ErrorCode, NotFoundError } from '../../src/engine/support/errors';
import { LimiterEngine, type LimiterHost } from '../../src/engine/limiter/limiter';
import { MemoryLimiterStore, MemorySlotStore } from '../../src/engine/limiter/memory-concurrency-stores';
import type { InstanceEngine } from '../../src/engine/instance/instance-engine';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

/** The ids whose first step ran, once per run of it: a terminated instance must never add itself. */
const entered: string[] = [];

class Limited extends Workflow<{ tenant: string }, string> {
	static override readonly type = 'limited';
	static override concurrency = { limit: 1, key: (p: { tenant: string }) => p.tenant };
	static override events = { finish: {} };
	async run(step: Step<{ finish: {} }>) {
		await step.do('enter', () => void entered.push(this.ctx.id));
		await step.waitForEvent('finish');
		return this.ctx.id;
	}
}

/**
 * Instances of `Limited` on virtual hosts, wired to one in-memory limiter the way
 * the runtime wires them over RPC (a limiter call can be made to fail).
 */
function world(limit = 1) {
	const registry = registryOf(Limited);
	const engines = new Map<string, InstanceEngine>();
	const hosts = new Map<string, VirtualHost>();
	const faults = { acquire: 0, release: 0, grant: 0 };
	const limiterWork = new Set<Promise<unknown>>();
	let alarm: number | undefined;
	const idleCalls = { n: 0 };
	const clock = { now: 1_700_000_000_000 };
	const limiterHost: LimiterHost = {
		store: new MemoryLimiterStore(),
		now: () => clock.now,
		limit: () => limit,
		setAlarm: (at) => void (alarm = at),
		background: (work) => void limiterWork.add(work),
		idle: () => void idleCalls.n++,
		grant: async (id) => {
			if (faults.grant > 0 && faults.grant--) throw new Error('instance unreachable');
			const engine = engines.get(id);
			if (!engine?.exists) throw new NotFoundError('no such workflow instance');
			return engine.slotGranted();
		},
	};
	const limiter = new LimiterEngine(limiterHost);
	/** Slot requests that time out at the instance although the limiter takes them later (after anything the instance sends next). */
	const lateAcquires = new Set<string>();
	const landLate = new Map<string, () => unknown>();
	const create = async (id: string, tenant = 't1') => {
		const host = new VirtualHost({ registry });
		host.slots = new MemorySlotStore();
		host.limiter = {
			acquire: async () => {
				if (faults.acquire > 0 && faults.acquire--) throw new Error('limiter unreachable');
				if (lateAcquires.delete(id)) {
					// The request reaches the limiter when the test says so, after the instance gave up on it.
					landLate.set(id, () => limiter.acquire(id));
					throw new Error('the slot request timed out');
				}
				return limiter.acquire(id);
			},
			release: async () => {
				if (faults.release > 0 && faults.release--) throw new Error('limiter unreachable');
				limiter.release(id);
			},
		};
		const engine = host.engine();
		hosts.set(id, host);
		engines.set(id, engine);
		await engine.create(id, 'limited', { tenant });
		await settle();
		return engine;
	};
	const settle = async () => {
		for (let i = 0; i < 20; i++) {
			await Promise.allSettled([...limiterWork]);
			limiterWork.clear();
			for (const host of hosts.values()) await host.idle();
		}
	};
	const status = (id: string) => engines.get(id)!.status().status;
	return { create, settle, status, limiter, faults, lateAcquires, landLate, hosts, engines, clock, alarm: () => alarm, idleCalls };
}

describe('concurrency keys (pure engine)', () => {
	it('names one limiter per type and key', () => {
		expect(limiterName('sync', 'tenant:7')).toBe('__limit:sync:tenant:7');
		expect(limiterOf('__limit:sync:tenant:7')).toEqual({ type: 'sync', key: 'tenant:7' });
	});

	it('starts the first instance and queues the next ones in arrival order', async () => {
		const w = world(1);
		for (const id of ['a', 'b', 'c']) await w.create(id);
		expect(['a', 'b', 'c'].map(w.status)).toEqual(['waiting', 'queued', 'queued']);
		expect(w.limiter.info()).toEqual({ limit: 1, holders: ['a'], waiting: ['b', 'c'] });
		await w.engines.get('a')!.sendEvent('finish', {});
		await w.settle();
		expect(['a', 'b', 'c'].map(w.status)).toEqual(['completed', 'waiting', 'queued']);
	});

	it('tells its host it is idle once the last holder releases and nobody waits, and not before', async () => {
		const w = world(1);
		for (const id of ['a', 'b']) await w.create(id);
		await w.engines.get('a')!.sendEvent('finish', {});
		await w.settle();
		expect(w.idleCalls.n).toBe(0); // b holds the slot now
		await w.engines.get('b')!.sendEvent('finish', {});
		await w.settle();
		expect(w.limiter.info()).toEqual({ limit: 1, holders: [], waiting: [] });
		expect(w.idleCalls.n).toBeGreaterThan(0);
	});

	it('retries a slot request the limiter did not answer, from the alarm', async () => {
		const w = world(1);
		w.faults.acquire = 1;
		const a = await w.create('a');
		expect(w.status('a')).toBe('queued');
		await w.hosts.get('a')!.fireAlarm(a);
		await w.settle();
		expect(w.status('a')).toBe('waiting');
	});

	it('asks again after the process died while its slot request was in flight', async () => {
		const w = world(1);
		const hang = { on: true };
		let host = new VirtualHost({ registry: registryOf(Limited) });
		host.slots = new MemorySlotStore();
		host.limiter = {
			acquire: () => (hang.on ? new Promise(() => {}) : Promise.resolve(w.limiter.acquire('a'))),
			release: async () => w.limiter.release('a'),
		};
		const engine = host.engine();
		await engine.create('a', 'limited', { tenant: 't1' });
		await new Promise((r) => setTimeout(r, 20)); // the index delivery ends; the request hangs
		await engine.sendEvent('finish', {}); // buffered for later; its pass re-arms the alarm while the request hangs
		await new Promise((r) => setTimeout(r, 20));
		host.crash();
		host = host.nextIsolate();
		expect(host.alarmAt).toBeDefined();
		hang.on = false;
		const after = host.engine();
		await host.fireAlarm(after);
		expect(after.status().status).toBe('completed');
	});

	it('retries a release the limiter did not take, and keeps the slot held until it does', async () => {
		const w = world(1);
		await w.create('a');
		await w.create('b');
		w.faults.release = 1;
		await w.engines.get('a')!.sendEvent('finish', {});
		await w.settle();
		expect([w.status('a'), w.status('b')]).toEqual(['completed', 'queued']);
		// A new engine over the same storage: what the process left after a crash.
		const host = w.hosts.get('a')!;
		const restarted = host.engine();
		w.engines.set('a', restarted);
		await host.fireAlarm(restarted);
		await w.settle();
		expect(w.status('b')).toBe('waiting');
		expect(restarted.history().events.at(-1)).toMatchObject({ kind: 'slot.released', key: 't1' });
	});

	it('delivers a grant again after it failed, and gives the slot of a vanished instance to the next one', async () => {
		const w = world(1);
		for (const id of ['a', 'b', 'c']) await w.create(id);
		w.faults.grant = 1;
		await w.engines.get('a')!.sendEvent('finish', {});
		await w.settle();
		expect(w.status('b')).toBe('queued');
		expect(w.alarm()).toBe(w.clock.now + 1000);
		w.engines.delete('b'); // b is gone before the retry: NOT_FOUND
		w.clock.now = w.alarm()!;
		w.limiter.alarm();
		await w.settle();
		expect(w.status('c')).toBe('waiting');
		expect(w.limiter.info()).toMatchObject({ holders: ['c'], waiting: [] });
	});

	it('queues a restarted instance again', async () => {
		const w = world(1);
		const a = await w.create('a');
		await a.sendEvent('finish', {});
		await w.settle();
		await w.create('b');
		expect(a.restart()).toBe('queued');
		await w.settle();
		expect(w.limiter.info()).toEqual({ limit: 1, holders: ['b'], waiting: ['a'] });
	});

	it('refuses a payload whose key function throws, with INVALID_PAYLOAD', async () => {
		const host = new VirtualHost({ registry: registryOf(Limited) });
		host.slots = new MemorySlotStore();
		await expect(host.engine().create('y', 'limited', null)).rejects.toMatchObject({ code: ErrorCode.InvalidPayload });
	});
});

describe('concurrency declarations', () => {
	it.for([
		['a limit of 0', { limit: 0 }],
		['a fractional limit', { limit: 1.5 }],
		['a key that is not a function', { limit: 1, key: 'tenant' }],
	])('refuses %s at start-up, naming the type', ([, concurrency]) => {
		class Bad extends Workflow {
			static override readonly type = 'bad';
			static override concurrency = concurrency as never;
			async run() {
				return null;
			}
		}
		expect(() => concurrencyOf(registryOf(Bad), 'bad')).toThrow(/^bad: static concurrency/);
	});
});

describe('a terminate racing the limiter (issue 49)', () => {
	const stepsOf = (engine: InstanceEngine) => engine.history().events.filter((e) => e.kind === 'step.started');

	it('a grant that reaches a terminated queued instance goes to the next in line, although its release never reached the limiter', async () => {
		const w = world(1);
		for (const id of ['a', 'b', 'c']) await w.create(id);
		w.faults.release = 1_000; // b's release is refused for as long as this test runs
		expect(w.engines.get('b')!.terminate()).toBe('terminated');
		await w.settle();
		expect(w.limiter.info().waiting).toEqual(['b', 'c']);
		await w.engines.get('a')!.sendEvent('finish', {});
		w.faults.release = 0; // a's release lands; b is granted the slot first
		await w.settle();
		expect(w.status('b')).toBe('terminated');
		expect(stepsOf(w.engines.get('b')!)).toEqual([]);
		expect(w.status('c')).toBe('waiting');
		expect(w.limiter.info()).toMatchObject({ holders: ['c'], waiting: [] });
	});

	it('a slot request the limiter takes after the release of a terminated instance does not keep the slot from the next in line', async () => {
		const w = world(1);
		await w.create('a');
		w.lateAcquires.add('b');
		await w.create('b'); // its request times out here but is still on its way
		expect(w.engines.get('b')!.terminate()).toBe('terminated');
		await w.settle(); // b's release reaches the limiter, which does not know b yet
		w.landLate.get('b')!(); // then b's old request does: b waits
		await w.create('c');
		expect(w.limiter.info().waiting).toEqual(['b', 'c']);
		await w.engines.get('a')!.sendEvent('finish', {});
		await w.settle();
		expect(stepsOf(w.engines.get('b')!)).toEqual([]);
		expect(w.status('c')).toBe('waiting');
		expect(w.limiter.info()).toMatchObject({ holders: ['c'], waiting: [] });
	});

	it('a queued instance terminated just before its process died declines the grant in its next isolate, and the slot passes on', async () => {
		const w = world(1);
		for (const id of ['a', 'b', 'c']) await w.create(id);
		w.faults.release = 1; // b's release does not reach the limiter before the crash
		const host = w.hosts.get('b')!;
		expect(w.engines.get('b')!.terminate()).toBe('terminated');
		host.crash();
		const next = host.nextIsolate();
		const after = next.engine();
		w.hosts.set('b', next);
		w.engines.set('b', after);
		await w.engines.get('a')!.sendEvent('finish', {});
		await w.settle(); // the grant reaches b's next isolate before its alarm retried the release
		expect(after.status().status).toBe('terminated');
		expect(stepsOf(after)).toEqual([]);
		expect(w.status('c')).toBe('waiting');
		expect(w.limiter.info()).toMatchObject({ holders: ['c'], waiting: [] });
		// b's release, retried from its alarm, changes nothing at the limiter any more.
		await next.fireAlarm(after);
		await w.settle();
		expect(w.limiter.info()).toMatchObject({ holders: ['c'], waiting: [] });
		expect(after.history().events.at(-1)).toMatchObject({ kind: 'slot.released' });
	});

	it('a grant delivered twice (its first answer lost) is accepted again by the instance that holds the slot', async () => {
		const w = world(1);
		await w.create('once');
		expect(w.engines.get('once')!.slotGranted()).toBe('accepted');
		await w.settle();
		expect(w.status('once')).toBe('waiting');
		expect(entered.filter((id) => id === 'once')).toHaveLength(1);
	});
});
