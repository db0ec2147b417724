import type { StandardSchemaV1 } from '@standard-schema/spec';
import { instances, type ShardflowEnv } from './client/instance-client';
import type { SendEventOptions } from './engine/event-keys';
import type { CreateResult } from './engine/instance-engine';
import type { EventInput, EventMap, EventName, Serializable, Step, StepPage, WorkflowContext, WorkflowDefaults, WorkflowStatus, WorkflowStatusInfo } from './engine/types';

/** Any concrete workflow class (what the static helpers are called on). */
type AnyWorkflowClass = {
	readonly type: string;
	new (ctx: WorkflowContext<any>): Workflow<any, any, any>;
};

/** The `static events` of a class, or `{}` when it declares none (then `waitForEvent` does not compile). */
export type EventsOf<W> = W extends { events: infer E extends EventMap } ? E : {};

/** What `create` accepts: the schema's input when `static payload` is a schema, else `run`'s payload type. */
export type PayloadInputOf<W> = W extends { payload: infer S extends StandardSchemaV1 }
	? StandardSchemaV1.InferInput<S>
	: W extends abstract new (...args: any) => { run(step: any, payload: infer P): any }
		? P
		: never;

/** What `run` returns once completed. */
export type OutputOf<W> = W extends abstract new (...args: any) => { run(...args: any): Promise<infer O> } ? O : unknown;

/** The payload type `run` receives: the schema's output when `static payload` is a schema. */
export type PayloadOf<S> = S extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<S> : S;

/** The status of an instance, with `output` typed by the workflow class. */
export type TypedStatus<W> = Omit<WorkflowStatusInfo, 'output'> & { output?: OutputOf<W> };

/**
 * The base class of every workflow. Subclasses declare `static type`,
 * optionally `static payload` (a Standard Schema), `static events` and
 * `static defaults`, and implement `run()`. The static helpers need nothing
 * but `env.WORKFLOW_RUNNER`, so any Worker bound to the namespace can use them.
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
export abstract class Workflow<Payload = unknown, Output = unknown, Env = unknown> {
	/** The type name this class is registered under. */
	static readonly type: string;
	static events?: EventMap;
	static payload?: StandardSchemaV1;
	static defaults?: WorkflowDefaults;

	constructor(protected readonly ctx: WorkflowContext<Env>) {}

	/** Bindings of the Worker that runs the instance. */
	protected get env(): Env {
		return this.ctx.env;
	}

	/** The workflow itself. Its output must be JSON-compatible (see `Serializable`), as every stored value. */
	abstract run(step: Step<any>, payload: Payload): Promise<Serializable<Output>>;

	/**
	 * Starts an instance. An existing id with the same payload returns that instance
	 * (`created: false`); with another payload it throws `PAYLOAD_MISMATCH`.
	 * Without `id`, a UUIDv7 is generated.
	 */
	static create<W extends AnyWorkflowClass>(
		this: W,
		env: ShardflowEnv,
		options: { id?: string; payload: Serializable<PayloadInputOf<W>> },
	): Promise<CreateResult> {
		return instances.create(env, this.type, options);
	}

	/** The instance's status, output or error, and step history. */
	static status<W extends AnyWorkflowClass>(this: W, env: ShardflowEnv, id: string): Promise<TypedStatus<W>> {
		return instances.status(env, id) as Promise<TypedStatus<W>>;
	}

	/** One page of the step history, oldest first, every step with its result (a status shows the latest 100). */
	static steps(env: ShardflowEnv, id: string, options?: { cursor?: string | null; limit?: number }): Promise<StepPage> {
		return instances.steps(env, id, options);
	}

	/**
	 * Sends a declared event; its name and payload are checked at compile time.
	 * With `idempotencyKey`, retrying the same send is safe: it is accepted once.
	 */
	static sendEvent<W extends AnyWorkflowClass, K extends EventName<EventsOf<W>>>(
		this: W,
		env: ShardflowEnv,
		options: { id: string; event: K; payload: Serializable<EventInput<EventsOf<W>[K]>> } & SendEventOptions,
	): Promise<void> {
		const { idempotencyKey } = options;
		return instances.sendEvent(env, options.id, options.event, options.payload, idempotencyKey === undefined ? {} : { idempotencyKey });
	}

	static pause(env: ShardflowEnv, id: string): Promise<WorkflowStatus> {
		return instances.pause(env, id);
	}

	static resume(env: ShardflowEnv, id: string): Promise<WorkflowStatus> {
		return instances.resume(env, id);
	}

	static terminate(env: ShardflowEnv, id: string): Promise<WorkflowStatus> {
		return instances.terminate(env, id);
	}

	/** Reruns a completed, errored or terminated instance from the start, discarding its step history. */
	static restart(env: ShardflowEnv, id: string): Promise<WorkflowStatus> {
		return instances.restart(env, id);
	}
}
