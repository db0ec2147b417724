import type { SigningKey } from '../engine/webhooks/signing-key';
import type { IndexEntry } from '../engine/index/index-entry';
import type { EngineHost } from '../engine/instance/instance-engine';
import type { Registry } from '../engine/definition/registry';
import type { StepFunctionWrapper } from '../engine/steps/step-function-wrapper';
import type { InstanceStore } from '../engine/storage/store';
import { encodeWebhookToken, importWebhookKey, webhookUrl, type WebhookTarget } from '../engine/webhooks/webhook';
import type { VirtualClock } from './virtual-clock';
import { gatedStore, type WriteGate } from './write-gate';

/** What survives an isolate's death: the instance's storage and its alarm (Durable Object alarms are durable). */
export interface DurableInstance {
	store: InstanceStore;
	alarmAt: number | undefined;
}

export interface VirtualHostOptions {
	durable: DurableInstance;
	registry: Registry;
	env: unknown;
	clock: VirtualClock;
	wrapStepFunction?: StepFunctionWrapper | undefined;
	/** Decides which writes reach `durable.store` (crash exploration); all of them when absent. */
	gate?: WriteGate;
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
 * for, and an index that accepts every entry. `crash()` kills the isolate:
 * its background work is abandoned, its timers never fire, its writes are
 * discarded and no step function starts in it again, while the durable state
 * stays for the next isolate (a new host over the same `DurableInstance`).
 */
export class VirtualHost implements EngineHost {
	readonly store: InstanceStore;
	readonly registry: Registry;
	readonly env: unknown;
	readonly wrapStepFunction: StepFunctionWrapper | undefined;
	/** Index entries the engine delivered (the kit has no shards; nothing reads them but tests). */
	readonly indexEntries: IndexEntry[] = [];
	private readonly durable: DurableInstance;
	private readonly clock: VirtualClock;
	private readonly work = new Set<Promise<unknown>>();
	private dead = false;
	private died!: () => void;
	private readonly death = new Promise<void>((resolve) => (this.died = resolve));

	constructor(options: VirtualHostOptions) {
		this.durable = options.durable;
		this.clock = options.clock;
		this.registry = options.registry;
		this.env = options.env;
		const gate = options.gate;
		this.store = gatedStore(options.durable.store, {
			admit: (method, args) => !this.dead && (gate === undefined || gate.admit(method, args)),
		});
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
		this.indexEntries.push(entry);
	}

	/** Deferred work runs on the next macrotask: the virtual clock does not move for it (index coalescing, the first pass). */
	defer(fn: () => void): void {
		if (this.dead) return;
		this.background(new Promise<void>((resolve) => setTimeout(() => resolve(this.dead ? undefined : fn()), 0)));
	}

	yieldToEventLoop(): Promise<void> {
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
}
