import type { StandardSchemaV1 } from '@standard-schema/spec';
import { createBatch, type BatchCreateOutcome } from './client/create-batch';
import { deleteBatch, type BatchDeleteOptions, type BatchDeleteOutcome } from './client/delete-batch';
import type { ShardflowEnv } from './client/instance-client';
import { callHelper, HELPER_NAMES, type HelperArgs, type HelperName } from './client/workflow-client';
import type { SendEventOptions } from './engine/instance/event-keys';
import type { CreateResult } from './engine/instance/create';
import type { DeclaredWorkflowDefaults, EventInput, EventMap, EventName, Serializable, Step, StreamMap, WorkflowContext } from './engine/definition/types';
import type { OutputOf as OperationOutput } from './operations/table';
import { schedules } from './client/schedule-client';
import type { ScheduleDefinition } from './engine/schedule/schedule';
import type { ConcurrencyDefinition } from './engine/limiter/concurrency';
import type { ScheduleInfo } from './engine/schedule/schedule-engine';
import type { AttributeDeclaration, AttributesOf, AttributeUpdate } from './engine/index/search-attributes';
import type { EventsOf, OutputOf, PayloadInputOf, TypedStatus } from './engine/definition/class-types';

/** Any concrete workflow class (what the static helpers are called on). */
type AnyWorkflowClass = {
	readonly type: string;
	new (ctx: WorkflowContext<any>): WorkflowBase<any, any, any>;
};

declare global {
	/**
	 * Cloudflare's own home for a Worker's bindings: `wrangler types` writes them
	 * into `Cloudflare.Env` (as `@cloudflare/workers-types` expects), and
	 * `DurableObject`, `WorkerEntrypoint` and `import { env } from
	 * 'cloudflare:workers'` are typed by it. Declared (empty) here as well, so
	 * the default of `Workflow`'s `Env` exists in a project without those types.
	 */
	namespace Cloudflare {
		interface Env {}
	}
}

/**
 * The base class of every workflow. Subclasses declare `static type`,
 * optionally `static payload` (a Standard Schema), `static events` and
 * `static defaults`, and implement `run()`. `Env` types `this.env`: by default
 * `Cloudflare.Env`, which `wrangler types` fills in from `wrangler.jsonc`.
 */
abstract class WorkflowBase<Payload = unknown, Output = unknown, Env = Cloudflare.Env> {
	/** The type name this class is registered under. */
	static readonly type: string;
	static events?: EventMap;
	/** Topics `step.emit` publishes on, with their schema or type (docs/streams.md). */
	static streams?: StreamMap;
	static payload?: StandardSchemaV1;
	/** Write `satisfies WorkflowDefaults` after the object to have its durations checked at compile time. */
	static defaults?: DeclaredWorkflowDefaults;
	/** Create an instance at each tick of a cron (UTC); see docs/writing-workflows.md "Schedules". */
	static schedule?: ScheduleDefinition;
	/** At most `limit` instances per key run at once; the others wait, status `queued`, in arrival order (docs/writing-workflows.md "Concurrency keys"). */
	static concurrency?: ConcurrencyDefinition;
	/**
	 * `false`: a parent's `step.invoke` never runs this type inside the parent first; its children
	 * start in their own object at once (docs/writing-workflows.md "Child workflows").
	 */
	static inline?: boolean;
	/**
	 * Search attributes (docs/search-attributes.md): name -> `'keyword' | 'number' | 'boolean' | 'datetime'`.
	 * Write `as const` (or `satisfies AttributeDeclaration`) after the object so names and kinds type
	 * `create`'s `attributes`, `step.setAttributes` and the index's queries.
	 */
	static attributes?: AttributeDeclaration;

	/** Pauses this type's schedule: no tick runs until `resumeSchedule`. */
	static pauseSchedule(this: AnyWorkflowClass, env: ShardflowEnv): Promise<ScheduleInfo> {
		return schedules.pause(env, this.type);
	}

	/** Resumes this type's schedule from the next tick after now (ticks passed while paused are not run). */
	static resumeSchedule(this: AnyWorkflowClass, env: ShardflowEnv): Promise<ScheduleInfo> {
		return schedules.resume(env, this.type);
	}

	/** Where this type's schedule stands (cron, state, next run, last runs); also wakes it with the deployed code. */
	static describeSchedule(this: AnyWorkflowClass, env: ShardflowEnv): Promise<ScheduleInfo> {
		return schedules.wake(env, this.type);
	}

	constructor(protected readonly ctx: WorkflowContext<Env>) {}

	/**
	 * Bindings of the Worker that runs the instance, typed by the class's third
	 * type argument (`Workflow<Payload, Output, Env>`), else by `Cloudflare.Env`
	 * (what `wrangler types` generates).
	 */
	protected get env(): Env {
		return this.ctx.env;
	}

	/** The workflow itself. Its output must be JSON-compatible (see `Serializable`), as every stored value. */
	abstract run(step: Step<any, any>, payload: Payload): Promise<Serializable<Output>>;
}

/** The helpers as the table types them: enough for every operation whose types do not depend on the workflow class. */
type DerivedHelpers = { [K in HelperName]: (env: ShardflowEnv, ...args: HelperArgs<K>) => Promise<OperationOutput<K>> };

/**
 * Helpers whose types follow the workflow class they are called on: its
 * payload, its events, its output. Their runtime comes from the table like
 * every other helper; only their static types are refined here.
 */
interface TypedHelpers {
	/**
	 * Starts an instance. An existing id with the same payload returns that instance
	 * (`created: false`); with another payload it throws `PAYLOAD_MISMATCH`.
	 * Without `id`, a UUIDv7 is generated.
	 */
	create<W extends AnyWorkflowClass>(
		this: W,
		env: ShardflowEnv,
		options: {
			id?: string;
			payload: Serializable<PayloadInputOf<W>>;
			/** Search attributes the class declares, set from the start. */
			attributes?: AttributeUpdate<AttributesOf<W>>;
			/** The group to create it in, for a type that does not choose its own (docs/residency.md). */
			group?: string;
		},
	): Promise<CreateResult>;
	/** The instance's status, output or error, and its latest steps. */
	status<W extends AnyWorkflowClass>(this: W, env: ShardflowEnv, id: string): Promise<TypedStatus<W>>;
	/**
	 * Sends a declared event; its name and payload are checked at compile time.
	 * With `idempotencyKey`, retrying the same send is safe: it is accepted once.
	 */
	sendEvent<W extends AnyWorkflowClass, K extends EventName<EventsOf<W>>>(
		this: W,
		env: ShardflowEnv,
		options: { id: string; event: K; payload: Serializable<EventInput<EventsOf<W>[K]>> } & SendEventOptions,
	): Promise<void>;
	/**
	 * Starts up to 100 instances of this type, each like `create`, at most 16 at a time;
	 * one outcome per item, in order (see `createBatch`).
	 * @example const outcomes = await PaymentWorkflow.createBatch(env, [{ id: 'pay-1', payload }, { payload: other }]);
	 */
	createBatch<W extends AnyWorkflowClass>(this: W, env: ShardflowEnv, items: readonly { id?: string; group?: string; payload: Serializable<PayloadInputOf<W>> }[]): Promise<BatchCreateOutcome[]>;
	/**
	 * Deletes up to 100 instances by id, each like `delete`, at most 16 at a time; one
	 * outcome per id, in order (see `deleteBatch`). Like `delete`, it does not check the ids' type.
	 * @example const outcomes = await PaymentWorkflow.deleteBatch(env, ['pay-1', 'pay-2'], { terminate: true });
	 */
	deleteBatch(env: ShardflowEnv, ids: readonly string[], options?: BatchDeleteOptions): Promise<BatchDeleteOutcome[]>;
}

/** The static side of `Workflow`: the base class plus one helper per operation that declares one. */
type WorkflowClassWithHelpers = typeof WorkflowBase & Omit<DerivedHelpers, keyof TypedHelpers> & TypedHelpers;

for (const name of HELPER_NAMES) {
	Object.defineProperty(WorkflowBase, name, {
		value(this: AnyWorkflowClass, env: ShardflowEnv, ...args: unknown[]) {
			return callHelper(env, name, this.type, args);
		},
		writable: true,
		configurable: true,
	});
}

// Not an operation of the table (it reaches many instances): a fan-out over `delete`.
Object.defineProperty(WorkflowBase, 'deleteBatch', {
	value(this: AnyWorkflowClass, env: ShardflowEnv, ids: readonly string[], options?: BatchDeleteOptions) {
		return deleteBatch(env, ids, options);
	},
	writable: true,
	configurable: true,
});

// Not an operation of the table (it reaches many instances): a fan-out over `create`.
Object.defineProperty(WorkflowBase, 'createBatch', {
	value(this: AnyWorkflowClass, env: ShardflowEnv, items: readonly { id?: string; group?: string; payload?: unknown }[]) {
		if (!Array.isArray(items)) return createBatch(env, items as never);
		return createBatch(env, items.map((item) => ({ ...item, type: this.type })));
	},
	writable: true,
	configurable: true,
});

/**
 * The base class of every workflow. Subclasses declare `static type`,
 * optionally `static payload` (a Standard Schema), `static events` and
 * `static defaults`, and implement `run()`. The static helpers (one per
 * operation of `src/operations/table.ts`: `create`, `status`, `steps`,
 * `sendEvent`, `pause`, `resume`, `terminate`, `restart`) need nothing but
 * `env.WORKFLOW_RUNNER`, so any Worker bound to the namespace can use them.
 *
 * @example
 * class TestWorkflow extends Workflow<{ name: string }, { greeting: string }> {
 *   static readonly type = 'test';
 *   async run(step: Step, payload: { name: string }) {
 *     const greeting = await step.do('greet', () => `Hello, ${payload.name}!`);
 *     await step.sleep('nap', '1 second');
 *     return { greeting };
 *   }
 * }
 * const { id } = await TestWorkflow.create(env, { payload: { name: 'World' } });
 */
export const Workflow = WorkflowBase as WorkflowClassWithHelpers;
export type Workflow<Payload = unknown, Output = unknown, Env = Cloudflare.Env> = WorkflowBase<Payload, Output, Env>;
