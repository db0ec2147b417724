import { DurableObject } from 'cloudflare:workers';
import type { ShardflowEnv } from '../client/instance-client';
import { wrap, type BacklogRpc, type IndexRpc, type InstanceRpc, type KeysRpc, type LimiterRpc, type ScheduleRpc, type BulkRpc } from '../client/rpc';
import type { AnyOperation } from '../operations/operation';
import { roleCalls, type AnyRoleCall } from '../operations/role-calls';
import { operations } from '../operations/table';
import type { Registry } from '../engine/definition/registry';
import type { StepFunctionWrapper } from '../engine/steps/step-function-wrapper';
import { workBegan } from './isolate-activity';
import { tracerOf } from './runtime-tracer';
import { tracedCall } from './traced-call';
import { eagerTablesOf, ObjectStorage } from './object-storage';
import { storageSettingsOf } from './storage-format';
import { BacklogRole } from './roles/backlog-role';
import { IndexLiveFeed } from './roles/index-live-feed';
import { IndexShardRole } from './roles/index-shard-role';
import { ShardRetention } from './index-shard-retention';
import { ShardAlarm } from './shard-alarm';
import { ShardMetricsExport, type AnalyticsDataset } from './shard-metrics-export';
import { InstanceRole } from './roles/instance-role';
import { KeysRole } from './roles/keys-role';
import { ScheduleRole } from './roles/schedule-role';
import { LimiterRole } from './roles/limiter-role';
import { BulkRole } from './roles/bulk-role';
import { parseObjectName } from '../engine/object-names';
import { roleKindOf, wrongRole, type RoleKind } from './roles/role-name';
import { objectPlace } from './object-place';

/** What a runner is built with: the workflow types it runs and the clock its instances read. */
export interface RunnerOptions {
	/** Milliseconds since the epoch; `Date.now` unless a test or benchmark Worker moves time. */
	clock?: () => number;
	/**
	 * Test kits only (`shardflow/testing/runner`): the step-function wrapper of an
	 * instance (see engine/steps/step-function-wrapper.ts), so a test can mock its steps.
	 * A construction option, never an RPC method; production runners leave it unset.
	 */
	wrapStepFunctions?: (instanceId: string) => StepFunctionWrapper;
	/**
	 * Test kits only, like `wrapStepFunctions`: told of each instance a `create`
	 * stored (whoever sent it: the Worker's routes, a parent's step, a schedule),
	 * before its first pass starts, so a test can introspect the instances the
	 * Worker's own code creates (`introspectWorkflow`). Production runners leave it unset.
	 */
	instanceCreated?: (instance: { id: string; type: string }) => void;
}

type Role = InstanceRole | IndexShardRole | BacklogRole | KeysRole | ScheduleRole | LimiterRole | BulkRole;
type RoleOf<K extends RoleKind> = Extract<Role, { kind: K }>;

/**
 * Builds the one Durable Object class for a registry. Each object plays one
 * role, decided once from its name (see `roleKindOf`); the class only routes
 * RPC and the alarm to that role's module.
 *
 * @example
 * export class WorkflowRunner extends createWorkflowRunner(registry) {}
 */
export function createWorkflowRunner(registry: Registry, options: RunnerOptions = {}): WorkflowRunnerClass {
	return class WorkflowRunner extends WorkflowRunnerBase {
		constructor(ctx: DurableObjectState, env: ShardflowEnv) {
			super(ctx, env, registry, options);
		}
	};
}

/**
 * The class `createWorkflowRunner` returns, named so its declaration can be
 * emitted (an anonymous class with protected members cannot be) for the
 * package's types.
 */
export type WorkflowRunnerClass = new (ctx: DurableObjectState, env: ShardflowEnv) => WorkflowRunnerBase;

/**
 * The RPC methods are defined from the operation table (instances) and the role calls
 * (every other role); this gives them their types.
 */
export interface WorkflowRunnerBase extends InstanceRpc, IndexRpc, BacklogRpc, KeysRpc, ScheduleRpc, LimiterRpc, BulkRpc {}

export abstract class WorkflowRunnerBase extends DurableObject<ShardflowEnv> {
	/**
	 * This object's role (undefined: an object without a name). An instance
	 * field, not a method, so it is not reachable over RPC; subclasses (the test
	 * and benchmark Workers) read it to add their hooks.
	 */
	protected readonly role: Role | undefined;
	/** Why this object refuses every call: reached through another jurisdiction than its name says (object-place.ts). */
	private readonly misplaced: Error | undefined;

	constructor(ctx: DurableObjectState, env: ShardflowEnv, registry: Registry, options: RunnerOptions) {
		super(ctx, env);
		// The object's group, from its name: its role works with that group's objects only (object-place.ts).
		const place = objectPlace(ctx.id, env, registry);
		this.misplaced = place.misplaced;
		env = place.env;
		const kind = place.misplaced ? undefined : roleKindOf(ctx.id.name);
		const storage = new ObjectStorage(ctx.storage, kind, {
			eagerTables: eagerTablesOf(env as { SHARDFLOW_EAGER_TABLES?: unknown }),
			compactInstances: storageSettingsOf(env as Parameters<typeof storageSettingsOf>[0]).layout === 'compact',
		});
		const now = options.clock ?? Date.now;
		const wrapStepFunction = options.wrapStepFunctions && ctx.id.name !== undefined ? options.wrapStepFunctions(ctx.id.name) : undefined;
		this.role = createRole(kind, { ctx, env, storage, registry, now, wrapStepFunction, instanceCreated: options.instanceCreated });
		void ctx.blockConcurrencyWhile(async () => {
			// A new object has no tables and, since nothing set one, no alarm.
			if ((await storage.open()) && this.role?.kind === 'instance') await this.role.opened();
		});
	}

	// ---- workflow instance role: one RPC method per operation of src/operations/table.ts (see the static block) ----

	static {
		for (const op of Object.values(operations) as AnyOperation[]) {
			Object.defineProperty(WorkflowRunnerBase.prototype, op.rpc, {
				value(this: WorkflowRunnerBase, input: unknown) {
					return this.call('instance', (instance) => tracedCall(op.rpc, this.ctx.id.name, () => op.run(instance, input), tracerOf(this.env)));
				},
				writable: true,
				configurable: true,
			});
		}
		// ---- the other roles: one RPC method per call of src/operations/role-calls.ts ----
		for (const [name, declared] of Object.entries(roleCalls) as [string, AnyRoleCall][]) {
			Object.defineProperty(WorkflowRunnerBase.prototype, name, {
				value(this: WorkflowRunnerBase, ...args: unknown[]) {
					return this.call(declared.role, (role) => declared.run(role as never, ...args), declared.housekeeping === true);
				},
				writable: true,
				configurable: true,
			});
		}
	}

	override async alarm(info?: AlarmInvocationInfo): Promise<void> {
		workBegan();
		if (this.role?.kind === 'instance') await this.role.alarm(info?.retryCount ?? 0);
		else if (this.role?.kind === 'schedule') await this.role.alarm();
		else if (this.role?.kind === 'limiter') this.role.alarm();
		else if (this.role?.kind === 'bulk') await this.role.alarm();
		else if (this.role?.kind === 'index') await this.role.alarm();
	}

	// ---- index shard role: its live feed (the calls are declared in src/operations/role-calls.ts) ----

	/**
	 * The only HTTP an object answers: a WebSocket to an index shard's live feed, or to an
	 * instance's stream (the Worker checks auth first).
	 */
	override async fetch(request: Request): Promise<Response> {
		workBegan();
		if (this.role?.kind === 'index' && this.role.live) return this.role.live.accept(request);
		if (this.role?.kind === 'instance') return this.role.openStream(request);
		return new Response('not found', { status: 404 });
	}

	/** A stream subscriber's acknowledgement (runtime/roles/instance-stream-feed.ts); index feeds take no messages. */
	override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
		if (this.role?.kind === 'instance') this.role.stream.message(ws, message);
	}

	override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
		if (this.role?.kind === 'index') this.role.live?.closed(ws, code);
		if (this.role?.kind === 'instance') this.role.stream.closed(ws, code);
	}

	override async webSocketError(ws: WebSocket): Promise<void> {
		await this.webSocketClose(ws, 1011);
	}

	/**
	 * Runs `fn` on this object's role if it is `kind` (else WRONG_ROLE), wrapped in the RPC envelope.
	 * Calls somebody waits for count as work of the isolate (a long run then gives way, see
	 * engine/steps/yield-pacer.ts); the engine's own background calls (`housekeeping` in role-calls.ts: index and backlog
	 * writes, keys, slots) do not, or every instance's index delivery would slow its own run.
	 */
	private call<K extends RoleKind, T>(kind: K, fn: (role: RoleOf<K>) => T | Promise<T>, housekeeping = false) {
		if (!housekeeping) workBegan();
		return wrap(() => {
			if (this.misplaced) throw this.misplaced;
			const role = this.role;
			if (role?.kind !== kind) throw wrongRole(role?.kind, kind);
			return fn(role as RoleOf<K>);
		});
	}
}

/** This shard's type and number `n`, from its name (object-names.ts). */
function indexShardOf(name: string): { type: string; shard: number } {
	const parsed = parseObjectName(name);
	return parsed.role === 'index' ? { type: parsed.type, shard: parsed.shard } : { type: '', shard: NaN };
}

/** The shard's export to Analytics Engine, when `SHARDFLOW_ANALYTICS` is bound (docs/operations.md "Analytics Engine"). */
function analyticsExport(host: ConstructorParameters<typeof InstanceRole>[0], self: { type: string; shard: number }, alarm: ShardAlarm): ShardMetricsExport | undefined {
	const dataset = (host.env as { SHARDFLOW_ANALYTICS?: AnalyticsDataset }).SHARDFLOW_ANALYTICS;
	if (typeof dataset?.writeDataPoint !== 'function') return undefined;
	return new ShardMetricsExport(dataset, host.ctx.storage, { type: self.type, n: self.shard, now: host.now }, alarm);
}

/** The retention duty of an index shard (index-shard-retention.ts); none for a type this build does not know. */
function shardRetention(host: ConstructorParameters<typeof InstanceRole>[0], self: { type: string }, alarm: ShardAlarm): ShardRetention | undefined {
	if (!host.registry.has(self.type)) return undefined;
	return new ShardRetention({ env: host.env, alarm, retention: host.registry.get(self.type).retention, now: host.now });
}

function createRole(kind: RoleKind | undefined, host: ConstructorParameters<typeof InstanceRole>[0]): Role | undefined {
	switch (kind) {
		case 'instance':
			return new InstanceRole(host);
		case 'index': {
			const self = indexShardOf(host.ctx.id.name!);
			const alarm = new ShardAlarm(host.ctx.storage);
			return new IndexShardRole(host.storage, new IndexLiveFeed(host.ctx), { shard: self.shard, now: host.now }, alarm, shardRetention(host, self, alarm), analyticsExport(host, self, alarm));
		}
		case 'backlog':
			return new BacklogRole(host.storage);
		case 'keys':
			return new KeysRole(host.storage);
		case 'schedule':
			return new ScheduleRole(host);
		case 'limiter':
			return new LimiterRole(host);
		case 'bulk':
			return new BulkRole(host);
		case undefined:
			return undefined;
	}
}
