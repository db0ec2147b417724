import type { SigningKey } from '../engine/support/signing-key';
import type { IndexEntry } from '../engine/index/index-entry';
import { InstanceEngine } from '../engine/instance/instance-engine';
import type { EngineHost } from '../engine/instance/engine-host';
import type { Registry } from '../engine/definition/registry';
import type { StepFunctionWrapper } from '../engine/steps/step-function-wrapper';
import type { YieldReport } from '../engine/steps/yield-pacer';
import { MemoryInstanceStore } from '../engine/storage/memory-store';
import type { ArchiveBucket } from '../engine/lifecycle/archive';
import type { ChildPort } from '../engine/children/child-workflows';
import type { EngineLogger } from '../engine/support/engine-log';
import type { Tracer } from '../engine/support/tracer';
import type { FailingPassesPort } from '../engine/instance/failing-passes';
import type { InvocationBudget } from '../engine/steps/invocation-budget';
import type { LimiterPort, SlotStore } from '../engine/limiter/concurrency-slot';
import { encodeWebhookToken, importWebhookKey, webhookUrl, type WebhookTarget } from '../engine/webhooks/webhook';
import { DEFAULT_START_TIME, VirtualClock } from './virtual-clock';
import { gatedStore, type WriteGate } from './write-gate';

/** What survives an isolate's death: the instance's storage and its alarm (Durable Object alarms are durable). */
export interface DurableInstance {
	store: MemoryInstanceStore;
	alarmAt: number | undefined;
}

export interface VirtualHostOptions {
	registry: Registry;
	/** The instance's durable state; a fresh, empty one when absent. */
	durable?: DurableInstance;
	env?: unknown;
	/** The time the instance sees; a clock of its own starting at `DEFAULT_START_TIME` when absent. */
	clock?: VirtualClock;
	wrapStepFunction?: StepFunctionWrapper | undefined;
	/** Decides which writes reach `durable.store` (crash exploration); all of them when absent. */
	gate?: WriteGate;
	/** A woken pass holds its `running` in memory (EngineHost.holdsWokenRunning: the compact layout's format 2). */
	holdsWokenRunning?: boolean;
	/** An idle wait keeps its alarm (EngineHost.leavesIdleAlarm: storage format 5). */
	leavesIdleAlarm?: boolean;
}

const never = new Promise<never>(() => {});

let webhookKey: Promise<SigningKey> | undefined;
/** The key the kit signs webhook tokens with (a fixed one: nothing here is secret). */
export function testKitWebhookKey(): Promise<SigningKey> {
	return (webhookKey ??= importWebhookKey('shardflow-test-kit-webhooks'));
}

/**
 * One simulated isolate running one instance on the pure engine: a virtual
 * clock, an alarm kept with the durable state, background work it can wait
 * for, and an index that accepts every entry (or refuses the next
 * `failDeliveries`). `crash()` kills the isolate: its background work is
 * abandoned, its timers never fire, its writes are discarded and no step
 * function starts in it again, while the durable state stays for the next
 * isolate (`nextIsolate()`: a new host over the same `DurableInstance`).
 * The test kit's Node driver and the engine's own tests both run on it.
 */
export class VirtualHost implements EngineHost {
	store: MemoryInstanceStore;
	readonly registry: Registry;
	readonly env: unknown;
	readonly wrapStepFunction: StepFunctionWrapper | undefined;
	/** Index entries the engine delivered (the kit has no shards; nothing reads them but tests). */
	indexEntries: IndexEntry[] = [];
	/** Index deliveries to refuse next, as an unavailable shard would (each refusal counts one down). */
	failDeliveries = 0;
	/** Times `destroy` freed the storage. */
	destroyed = 0;
	// What the kit does not lend by default; a test sets the ones it exercises.
	log?: EngineLogger;
	logStepCompletions?: boolean;
	/** Spans of passes and step attempts (engine/support/tracer.ts); unset, nothing is traced. */
	tracer?: Tracer;
	invocationBudget?: InvocationBudget;
	children?: ChildPort;
	inlineChildren?: boolean;
	holdsWokenRunning?: boolean;
	leavesIdleAlarm?: boolean;
	inlineOneRow?: boolean;
	archive?: ArchiveBucket;
	slots?: SlotStore;
	limiter?: LimiterPort;
	/** Where runs of failed or cut passes are reported (engine/instance/failing-passes.ts); unset, nowhere. */
	failingPasses?: FailingPassesPort;
	readonly durable: DurableInstance;
	readonly clock: VirtualClock;
	private readonly options: VirtualHostOptions;
	private readonly work = new Set<Promise<unknown>>();
	private dead = false;
	private died!: () => void;
	private readonly death = new Promise<void>((resolve) => (this.died = resolve));

	constructor(options: VirtualHostOptions) {
		this.options = options;
		this.durable = options.durable ?? { store: new MemoryInstanceStore(), alarmAt: undefined };
		this.clock = options.clock ?? new VirtualClock(DEFAULT_START_TIME);
		this.registry = options.registry;
		this.env = options.env ?? {};
		if (options.holdsWokenRunning) this.holdsWokenRunning = true;
		if (options.leavesIdleAlarm) this.leavesIdleAlarm = true;
		this.store = this.gated();
		const wrap = options.wrapStepFunction;
		// A dead isolate starts no step function: an attempt that would begin in it hangs, abandoned.
		this.wrapStepFunction = (step, fn) => {
			const inner = wrap ? wrap(step, fn) : fn;
			return (attempt) => (this.dead ? never : inner(attempt));
		};
	}

	/** Webhook URLs are paths (`/webhooks/<token>`), as in a deployment without PUBLIC_URL. */
	readonly webhooks = {
		issue: async (target: WebhookTarget) => webhookUrl(await encodeWebhookToken(await testKitWebhookKey(), target), undefined),
	};

	get crashed(): boolean {
		return this.dead;
	}

	now = (): number => this.clock.now();

	/** Moves the clock `ms` ahead. */
	advance(ms: number): void {
		this.clock.moveTo(this.clock.now() + ms);
	}

	/** The instance's alarm (durable: it outlives the isolate). */
	get alarmAt(): number | undefined {
		return this.durable.alarmAt;
	}

	/** Sets the alarm as the instance's last isolate left it (a test reproducing what a crash leaves). */
	set alarmAt(at: number | undefined) {
		this.durable.alarmAt = at;
	}

	setAlarm(at: number | undefined): void {
		if (!this.dead) this.durable.alarmAt = at;
	}

	ensureAlarmBy(at: number): void {
		if (this.dead) return;
		if (this.durable.alarmAt === undefined || this.durable.alarmAt > at) this.durable.alarmAt = at;
	}

	background(work: Promise<unknown>): void {
		if (this.dead) return;
		this.work.add(work);
		void work.then(
			() => this.work.delete(work),
			(error) => {
				this.work.delete(work);
				if (!this.dead) throw error;
			},
		);
	}

	async sendIndexEntry(entry: IndexEntry): Promise<void> {
		if (this.dead) return never;
		if (this.failDeliveries > 0) {
			this.failDeliveries--;
			throw new Error('index shard unavailable');
		}
		this.indexEntries.push(entry);
	}

	/** What `deleteAll` does: the storage and the alarm go. */
	async destroy(): Promise<void> {
		if (this.dead) return never;
		this.durable.store = new MemoryInstanceStore();
		this.durable.alarmAt = undefined;
		this.store = this.gated();
		this.destroyed++;
	}

	/** Deferred work runs on the next macrotask: the virtual clock does not move for it (index coalescing, the first pass). */
	defer(fn: () => void): void {
		if (this.dead) return;
		this.background(new Promise<void>((resolve) => setTimeout(() => resolve(this.dead ? undefined : fn()), 0)));
	}

	/** Yields a macrotask; cannot tell whether other work ran, so passes keep the short pace. */
	yieldToEventLoop(): Promise<YieldReport> {
		return this.dead ? never : new Promise<void>((resolve) => setTimeout(resolve, 0));
	}

	/** Resolves once no background work is left, or as soon as the isolate dies. */
	async idle(): Promise<void> {
		while (this.work.size && !this.dead) await Promise.race([Promise.allSettled([...this.work]), this.death]);
	}

	/** Kills the isolate (see the class comment). */
	crash(): void {
		this.dead = true;
		this.work.clear();
		this.died();
	}

	/**
	 * The next isolate of the same object (after a crash or an eviction): a new host over the same
	 * durable state and clock, lent the same ports, delivering to the same index.
	 */
	nextIsolate(): VirtualHost {
		const next = new VirtualHost({ ...this.options, durable: this.durable, clock: this.clock });
		next.indexEntries = this.indexEntries;
		next.failDeliveries = this.failDeliveries;
		const { log, logStepCompletions, tracer, invocationBudget, children, inlineChildren, inlineOneRow, archive, slots, limiter, failingPasses } = this;
		const lent = { log, logStepCompletions, tracer, invocationBudget, children, inlineChildren, inlineOneRow, archive, slots, limiter, failingPasses };
		return Object.assign(next, Object.fromEntries(Object.entries(lent).filter(([, port]) => port !== undefined)));
	}

	/** A new engine in this isolate, over the durable state (what an eviction leaves behind). */
	engine(): InstanceEngine {
		return new InstanceEngine(this);
	}

	/** Moves the clock to the alarm's time, fires it on `engine` and waits for the work it started; false when no alarm is set. */
	async fireAlarm(engine: InstanceEngine): Promise<boolean> {
		const at = this.durable.alarmAt;
		if (at === undefined) return false;
		this.clock.moveTo(at);
		this.durable.alarmAt = undefined;
		engine.alarm();
		await this.idle();
		return true;
	}

	/** The store with this isolate's writes admitted while it lives (and the gate's say). */
	private gated(): MemoryInstanceStore {
		const gate = this.options.gate;
		return gatedStore(this.durable.store, {
			admit: (method, args) => !this.dead && (gate === undefined || gate.admit(method, args)),
		}) as unknown as MemoryInstanceStore;
	}
}
