import type { ChildPort } from '../../src/engine/children/child-workflows';
import type { Registry } from '../../src/engine/definition/registry';
import type { InstanceEngine } from '../../src/engine/instance/instance-engine';
import { InvalidStateError } from '../../src/engine/support/errors';
import { VirtualHost } from '../../src/testing/virtual-host';
import type { Tracer } from '../../src/engine/support/tracer';

/** Instances on virtual hosts that reach each other through a `ChildPort`; `deaf` drops every notice. */
export class World {
	hosts = new Map<string, VirtualHost>();
	engines = new Map<string, InstanceEngine>();
	deaf = false;
	unreachable = false;
	/** Calls of `outcome`: a parent that heard the outcome in the notice makes none. */
	outcomeCalls = 0;
	/** The children that sent their parent a notice, in order. */
	noticesFrom: string[] = [];
	/** While set, the answers of the creates that ask for the outcome are lost on their way back (the call fails after the child answered). */
	loseAnswers = false;
	/** While set, notices wait here instead of reaching the parent (a slow notice): `deliver` sends them. */
	held: { parentId: string; childId: string; outcome: unknown }[] | undefined;
	/** Replaces the outcome a notice carries (a forged or malformed notice). */
	forge: ((outcome: unknown) => unknown) | undefined;
	/** Creates of a child that carried a transplant (it ran inline in its parent first), by child id. */
	transplanted: string[] = [];
	/** How many steps each transplant carried. */
	transplantedSteps = new Map<string, number>();
	/** Lent to every host made after it is set: spans of every instance's passes and attempts. */
	tracer: Tracer | undefined;

	constructor(
		private readonly registry: Registry,
		/** Hosts run short children inside their parent first (EngineHost.inlineChildren). */
		private readonly inline = false,
		/**
		 * A finished inline child kept in its parent in one row (EngineHost.inlineOneRow): on, as a new project runs;
		 * SHARDFLOW_INLINE_ONE_ROW=false npx vitest ... runs the same tests with it off.
		 */
		private readonly oneRow = process.env.SHARDFLOW_INLINE_ONE_ROW !== 'false',
	) {}

	port: ChildPort = {
		start: async ({ id, type, payload, parent, waitMs, transplant }) => {
			if (this.unreachable) throw new Error('network down');
			if (transplant) {
				this.transplanted.push(id);
				this.transplantedSteps.set(id, transplant.steps.length);
			}
			await this.engine(id).create(id, type, payload, parent, undefined, transplant);
			const outcome = await this.engine(id).childOutcome(waitMs, parent.id);
			if (this.loseAnswers && waitMs !== undefined) throw new Error('connection lost');
			return outcome;
		},
		outcome: async (id) => {
			this.outcomeCalls++;
			if (this.unreachable) throw new Error('network down');
			return this.engine(id).childOutcome();
		},
		terminate: async (id) => {
			if (this.unreachable) throw new Error('network down');
			try {
				this.engine(id).terminate();
			} catch (error) {
				if (!(error instanceof InvalidStateError)) throw error;
			}
		},
		notifyParent: async (parentId, childId, outcome) => {
			this.noticesFrom.push(childId);
			if (this.deaf) return;
			if (this.held) return void this.held.push({ parentId, childId, outcome });
			this.engine(parentId).childFinished(childId, this.forge ? this.forge(outcome) : outcome);
		},
	};

	/** Delivers the held notices, all in one turn (none is taken before the last one came), and stops holding. */
	deliver(): void {
		const held = this.held ?? [];
		this.held = undefined;
		for (const { parentId, childId, outcome } of held) this.engine(parentId).childFinished(childId, outcome);
	}

	host(id: string): VirtualHost {
		let host = this.hosts.get(id);
		if (!host) {
			host = new VirtualHost({ registry: this.registry });
			host.children = this.port;
			host.inlineChildren = this.inline;
			host.inlineOneRow = this.oneRow;
			if (this.tracer) host.tracer = this.tracer;
			this.hosts.set(id, host);
		}
		return host;
	}
	engine(id: string): InstanceEngine {
		let engine = this.engines.get(id);
		if (!engine) this.engines.set(id, (engine = this.host(id).engine()));
		return engine;
	}
	/** A new engine over the same storage: an eviction (or a crash, with the host's work dropped). */
	evict(id: string): InstanceEngine {
		const dead = this.host(id);
		dead.crash();
		this.hosts.set(id, dead.nextIsolate());
		const engine = this.host(id).engine();
		this.engines.set(id, engine);
		return engine;
	}
	async idle(): Promise<void> {
		for (let i = 0; i < 5; i++) for (const host of this.hosts.values()) await host.idle();
	}
	/** Moves every clock by `ms` and fires every alarm that is due. */
	async advance(ms: number): Promise<void> {
		for (const host of this.hosts.values()) host.advance(ms);
		for (const [id, host] of this.hosts) if (host.alarmAt !== undefined && host.alarmAt <= host.now()) await host.fireAlarm(this.engine(id));
		await this.idle();
	}
}
