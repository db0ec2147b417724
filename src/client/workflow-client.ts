import type { SendEventOptions } from '../engine/instance/event-keys';
import type { AttributesOf, AttributeUpdate } from '../engine/index/search-attributes';
import type { CreateResult } from '../engine/instance/create';
import type { EventInput, EventName, Serializable, StreamData } from '../engine/definition/types';
import type { StreamEvent } from '../engine/streams/stream';
import { instanceStream, type StreamOptions } from './instance-stream';
import type { AnyOperation, Operation } from '../operations/operation';
import { operations, type OperationName, type Operations, type OutputOf as OperationOutput } from '../operations/table';
import type { EventsOf, PayloadInputOf, StreamsOf, TypedStatus } from '../engine/definition/class-types';
import { callOperation, type ShardflowEnv } from './instance-client';

/** The arguments of an operation's helper after the workflow type (`helper` in its table entry). */
export type HelperArgs<K extends OperationName> = Operations[K] extends Operation<any, any, any, infer A> ? A : never;
/** Operations with a helper: the static helpers of `Workflow` and the methods of a `WorkflowClient`. */
export type HelperName = { [K in OperationName]: [HelperArgs<K>] extends [never] ? never : K }[OperationName];

/** What a workflow client needs of a class: its type name and, for the types only, its payload, events and output. */
export type AnyWorkflowClass = { readonly type: string; new (...args: any): { run(step: any, payload: any): Promise<unknown> } };

/**
 * Calls an operation through its helper, as `Workflow.<name>(env, ...args)`
 * and `workflowClient(env, type).<name>(...args)` both do.
 */
export function callHelper(env: ShardflowEnv, name: HelperName, type: string, args: unknown[]): Promise<unknown> {
	const helper = (operations[name] as AnyOperation).helper!;
	return callOperation(env, name, helper(type, ...args));
}

/** Every operation that has a helper, in table order. */
export const HELPER_NAMES = (Object.keys(operations) as OperationName[]).filter((name) => (operations[name] as AnyOperation).helper) as HelperName[];

/** The helpers typed by their table entry: every operation whose types do not depend on the workflow class. */
type DerivedMethods = { [K in HelperName]: (...args: HelperArgs<K>) => Promise<OperationOutput<K>> };

/**
 * The typed control calls of one workflow type, for a Worker bound to the
 * `WorkflowRunner` namespace: the same calls as the static helpers of
 * `Workflow` (`create`, `status`, `sendEvent`, `pause`, ...), typed by the
 * workflow class (a type-only import is enough) without bundling it.
 */
export type WorkflowClient<W extends AnyWorkflowClass> = Omit<DerivedMethods, 'create' | 'status' | 'sendEvent'> & {
	/**
	 * Starts an instance. An existing id with the same payload returns that instance
	 * (`created: false`); with another payload it throws `PAYLOAD_MISMATCH`.
	 * Without `id`, a UUIDv7 is generated.
	 */
	create(options: {
		id?: string;
		payload: Serializable<PayloadInputOf<W>>;
		/** Search attributes the class declares. */
		attributes?: AttributeUpdate<AttributesOf<W>>;
		/** The group to create it in, for a type that does not choose its own (docs/residency.md). */
		group?: string;
	}): Promise<CreateResult>;
	/** The instance's status, output or error, and its latest steps. */
	status(id: string): Promise<TypedStatus<W>>;
	/** Sends a declared event; its name and payload are checked at compile time. */
	sendEvent<K extends EventName<EventsOf<W>>>(options: { id: string; event: K; payload: Serializable<EventInput<EventsOf<W>[K]>> } & SendEventOptions): Promise<void>;
	/**
	 * The instance's live stream (status changes, step completions, the messages of
	 * `step.emit` typed by `static streams`) until it finishes; see `instanceStream`.
	 * @example for await (const event of imports.stream(id)) if (event.kind === 'stream.message') show(event.data);
	 */
	stream(id: string, options?: StreamOptions): AsyncGenerator<StreamEvent<StreamData<StreamsOf<W>>>, void, undefined>;
};

/**
 * The control calls of one workflow type, typed by its class. The class is
 * only a type argument: `import type` it, so the caller's bundle carries
 * neither the workflow's code nor the engine.
 *
 * @example
 * import type { PaymentWorkflow } from './workflows/payment-workflow';
 * const payments = workflowClient<typeof PaymentWorkflow>(env, 'payment');
 * const { id } = await payments.create({ payload: { amount: 42, currency: 'EUR' } });
 * await payments.sendEvent({ id, event: 'approval', payload: { approved: true, reviewer: 'ann' } });
 */
export function workflowClient<W extends AnyWorkflowClass>(env: ShardflowEnv, type: W['type']): WorkflowClient<W> {
	const helpers = Object.fromEntries(HELPER_NAMES.map((name) => [name, (...args: unknown[]) => callHelper(env, name, type, args)]));
	return { ...helpers, stream: (id: string, options?: StreamOptions) => instanceStream(env, id, options) } as WorkflowClient<W>;
}
