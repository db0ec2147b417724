import type { InvocationBudget } from '../../src/engine/instance/invocation-budget';
import type { ChildPort } from '../../src/engine/children/child-workflows';
import type { EngineLogRecord } from '../../src/engine/support/engine-log';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { InstanceEngine, type EngineHost } from '../../src/engine/instance/instance-engine';
import { MemoryInstanceStore } from '../../src/engine/storage/memory-store';
import type { LimiterPort, SlotStore } from '../../src/engine/limiter/concurrency-slot';
import { defineRegistry, type Registry } from '../../src/engine/definition/registry';

/**
 * An `EngineHost` for the pure engine: an in-memory store, a clock the test
 * moves, an alarm it fires by hand and an index it can make fail.
 */
export class FakeHost implements EngineHost {
	store = new MemoryInstanceStore();
	env = {};
	clock = 1_700_000_000_000;
	alarmAt: number | undefined;
	delivered: IndexEntry[] = [];
	failDeliveries = 0;
	/** Every structured log record the engine wrote. */
	logs: EngineLogRecord[] = [];
	log = (record: EngineLogRecord) => void this.logs.push(record);
	logStepCompletions = true;
	invocationBudget?: InvocationBudget;
	/** Child workflows reach other instances through this (a test wires a world of hosts). */
	children: ChildPort | undefined;
	private work = new Set<Promise<unknown>>();
	/** Set by concurrency tests: the instance's slot row and its limiter. */
	slots?: SlotStore;
	limiter?: LimiterPort;

	constructor(readonly registry: Registry) {}

	now = () => this.clock;
	setAlarm(at: number | undefined) {
		this.alarmAt = at;
	}
	ensureAlarmBy(at: number) {
		if (this.alarmAt === undefined || this.alarmAt > at) this.alarmAt = at;
	}
	background(work: Promise<unknown>) {
		this.work.add(work);
		void work.finally(() => this.work.delete(work));
	}
	/** Times `destroy` freed the storage. */
	destroyed = 0;
	/** What `deleteAll` does: the storage and the alarm go. */
	async destroy() {
		this.store = new MemoryInstanceStore();
		this.alarmAt = undefined;
		this.destroyed++;
	}
	async sendIndexEntry(entry: IndexEntry) {
		if (this.failDeliveries > 0) {
			this.failDeliveries--;
			throw new Error('index shard unavailable');
		}
		this.delivered.push(entry);
	}
	/** Deferred work runs on the next macrotask: delays are not simulated (the clock is the test's). */
	defer(fn: () => void) {
		this.background(new Promise<void>((resolve) => setTimeout(() => resolve(fn()), 0)));
	}
	/** Yields a macrotask; cannot tell whether other work ran, so passes keep the short pace. */
	yieldToEventLoop(): Promise<boolean | undefined> {
		return new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 0));
	}

	/** A fresh engine over the same store: what an eviction or a crash leaves behind. */
	engine(): InstanceEngine {
		return new InstanceEngine(this);
	}

	/** Abandons all background work, as a crashed isolate does. */
	crash(): void {
		this.work.clear();
	}

	async idle(): Promise<void> {
		while (this.work.size) await Promise.allSettled([...this.work]);
	}

	/** Moves the clock to the alarm time and fires it. */
	async fireAlarm(engine: InstanceEngine): Promise<boolean> {
		if (this.alarmAt === undefined) return false;
		this.clock = Math.max(this.clock, this.alarmAt);
		this.alarmAt = undefined;
		engine.alarm();
		await this.idle();
		return true;
	}
}

/** A registry holding one workflow class under its own type. */
export function registryOf(...classes: { type: string }[]): Registry {
	const defs = Object.fromEntries(classes.map((workflow) => [workflow.type, { workflow }]));
	return defineRegistry(defs as never);
}

/** Creates instance `wf-1` of `type` on a fresh fake host; with `settle`, waits until the engine is idle. */
export async function startInstance(registry: Registry, type: string, payload: unknown = {}, settle = true) {
	const host = new FakeHost(registry);
	const engine = host.engine();
	await engine.create('wf-1', type, payload);
	if (settle) await host.idle();
	return { host, engine };
}
