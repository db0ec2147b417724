import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { Duration } from './duration';
import type { RetryPolicy } from './retry-policy';
import type { ChildClass, ChildOptions, ChildOutput, ChildPayload } from './child-workflows';

/**
 * An event declaration: either a Standard Schema (zod, valibot, arktype …),
 * which validates at runtime and gives the type, or a plain type marker
 * (`{} as { approved: boolean }`), which gives the type only.
 */
export type EventDeclaration = StandardSchemaV1 | object;

/** `static events` of a workflow class. */
export type EventMap = Record<string, EventDeclaration>;

/** The payload type an event declaration delivers to `waitForEvent`. */
export type EventPayload<D> = D extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<D> : D;
/** The payload type a sender must give for an event declaration. */
export type EventInput<D> = D extends StandardSchemaV1 ? StandardSchemaV1.InferInput<D> : D;

/** Event names of a map; `never` when the workflow declares none. */
export type EventName<E> = keyof E & string;

/** What `step.do` hands its function: which attempt this is, and a signal that aborts when the attempt times out. */
export interface StepAttempt {
	/** 1 for the first attempt, 2 for the first retry, … */
	attempt: number;
	/** Aborts at the step's `timeout`: the attempt is abandoned, so pass it to `fetch` or stop on it. */
	signal: AbortSignal;
}

/** Options of one `step.do`. */
export interface StepDoOptions {
	/** Overrides the workflow's `static defaults.retries`. */
	retries?: RetryPolicy;
	/** Longest a single attempt may take; a late attempt fails with `STEP_TIMEOUT` and is retried. */
	timeout?: Duration;
}

export interface WaitForEventOptions {
	/** Without a timeout the wait lasts until the event arrives or the instance is terminated. */
	timeout?: Duration;
	/** The step's name; defaults to the event name. Give one per wait to await the same event more than once. */
	name?: string;
}

/** A JSON value: what steps may return and events may carry. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** Values a JSON round trip would change or lose (a class instance is refused at run time only). */
type NotJson =
	| Function
	| symbol
	| bigint
	| Date
	| RegExp
	| Map<any, any>
	| Set<any>
	| WeakMap<any, any>
	| WeakSet<any>
	| Promise<any>
	| ArrayBuffer
	| ArrayBufferView
	| Error;

/**
 * `T` itself when a JSON round trip gives it back unchanged, else a type `T` does
 * not satisfy, so `step.do` (and payloads, events and outputs) refuse it at
 * compile time: a step returning a `Date` would get a string back on replay, a
 * `Map` or `Set` would get `{}`. `any` and `unknown` pass (checked at run time,
 * with NaN/Infinity and class instances, which types cannot tell apart).
 *
 * @example
 * await step.do('when', () => new Date().toISOString()); // ok: a string
 * await step.do('when', () => new Date());               // compile error
 */
export type Serializable<T> = unknown extends T
	? T
	: T extends string | number | boolean | null | undefined | void
		? T
		: T extends NotJson
			? never
			: T extends readonly unknown[]
				? { [K in keyof T]: undefined extends T[K] ? never : Serializable<T[K]> }
				: { [K in keyof T]: Serializable<T[K]> };

/**
 * The step API handed to `run()`. Every method is a checkpoint: once it has
 * completed, a replay returns its stored outcome instead of doing it again.
 */
export interface Step<E extends object = {}> {
	/**
	 * Runs `fn` at least once until it succeeds, and stores its result, which must
	 * be JSON-compatible (see `Serializable`): a replay gets back exactly that JSON.
	 * @example const user = await step.do('fetch-user', () => api.getUser(id));
	 */
	do<T>(name: string, fn: (attempt: StepAttempt) => Promise<T & Serializable<T>> | (T & Serializable<T>), options?: StepDoOptions): Promise<T>;
	/** Durable sleep: the instance hibernates and the alarm wakes it. */
	sleep(name: string, duration: Duration): Promise<void>;
	/** Durable sleep until an absolute time (stored as given, so replays after it pass do not fail). */
	sleepUntil(name: string, until: Date | number): Promise<void>;
	/**
	 * Waits for the named event. Events sent before the wait is reached are
	 * buffered and delivered in arrival order.
	 * @example const approval = await step.waitForEvent('approval', { timeout: '7 days' });
	 */
	waitForEvent<K extends EventName<E>>(event: K, options?: WaitForEventOptions): Promise<EventPayload<E[K]>>;
	/**
	 * Changes code safely under instances in flight. True on a new execution (a marker is
	 * recorded) and on replays of histories that recorded the marker; false on replays of
	 * histories that passed this point before the change existed: keep the old code there.
	 * @example
	 * if (await step.patched('fraud-check')) await step.do('fraud-check', () => screen(order));
	 * await step.do('charge-card', () => charge(order));
	 */
	patched(id: string): Promise<boolean>;
	/** The next stage of a patch once no instance can take the old branch: records the marker, never decides anything. Remove the call when no instance records it any more. */
	deprecatePatch(id: string): Promise<void>;
	/**
	 * Starts a child workflow (of any registered type) and waits durably for its output,
	 * typed by the child's `run()`. The child's id is derived from this instance's id and
	 * the step name unless `id` is given; a replay never starts a second child. A child that
	 * errors or is terminated makes this throw `ChildWorkflowError` (catchable). Terminating
	 * this instance terminates the child unless `onParentTerminate: 'abandon'`.
	 * @example const label = await step.invoke('ship', ShippingWorkflow, { payload: { orderId } });
	 */
	invoke<C extends ChildClass>(name: string, Child: C, options: ChildOptions<Serializable<ChildPayload<C>>>): Promise<ChildOutput<C>>;
	/**
	 * Starts a child workflow and returns its id without waiting (fire and forget);
	 * idempotent like `invoke`. Its outcome is the child's own (`Child.status(env, id)`).
	 * @example const id = await step.start('send-receipt', ReceiptWorkflow, { payload: { orderId } });
	 */
	start<C extends ChildClass>(name: string, Child: C, options: ChildOptions<Serializable<ChildPayload<C>>>): Promise<string>;
}

/** What a running workflow knows about itself. */
export interface WorkflowContext<Env = unknown> {
	id: string;
	type: string;
	env: Env;
}

/** Workflow-level defaults that every step inherits unless it overrides them. */
export interface WorkflowDefaults {
	retries?: RetryPolicy;
}

/** The statuses an instance can be in. */
/** `diverged`: the code no longer matches the recorded steps; nothing runs until a resume (after a fix) or a restart. */
export const WORKFLOW_STATUSES = ['created', 'running', 'sleeping', 'waiting', 'paused', 'diverged', 'completed', 'errored', 'terminated'] as const;
export type WorkflowStatus = (typeof WORKFLOW_STATUSES)[number];

/** Statuses from which an instance never moves on its own. */
export const FINISHED_STATUSES: readonly WorkflowStatus[] = ['completed', 'errored', 'terminated'];

/** `patch`: a marker recorded by `step.patched` / `step.deprecatePatch`; `child`: `step.invoke` / `step.start`. */
export type StepKind = 'do' | 'sleep' | 'wait' | 'patch' | 'child';
export type StepStatus = 'running' | 'retrying' | 'completed' | 'failed' | 'sleeping' | 'waiting' | 'timed_out';

/** One entry of a status's step history. */
export interface StepSummary {
	name: string;
	kind: StepKind;
	status: StepStatus;
	attempts: number;
	startedAt: number | null;
	finishedAt: number | null;
	wakeAt: number | null;
	result?: unknown;
	/** The step has a result, left out to keep the status within its byte budget: page it with `steps()`. */
	resultOmitted?: true;
	error?: { name: string; message: string; code?: string; stack?: string };
}

/** One page of an instance's step history, oldest first. */
export interface StepPage {
	items: StepSummary[];
	/** Pass it back for the next page; null after the last. */
	nextCursor: string | null;
}

/** Everything `status()` tells about one instance. */
export interface WorkflowStatusInfo {
	id: string;
	type: string;
	status: WorkflowStatus;
	payload: unknown;
	output?: unknown;
	error?: { name: string; message: string; code?: string; stack?: string };
	createdAt: number;
	updatedAt: number;
	version: number;
	/** The current run: 0, then one more per restart (the history's default generation). */
	generation: number;
	/** The registry's code version of the type when the instance was created (absent: none given). */
	codeVersion?: string;
	/** The code version of the last pass that ran it. */
	lastCodeVersion?: string;
	/** The instance whose `step.invoke` / `step.start` started this one. */
	parentId?: string;
	/** Steps per status, and `total`. */
	stepCounts: { total: number } & Partial<Record<StepStatus, number>>;
	/** Steps before the window in `steps` (page them with `steps()` / `GET /workflows/:id/steps`). */
	stepsBefore: number;
	/** The most recent steps (at most 100), oldest first. */
	steps: StepSummary[];
	/** Events buffered for a wait not reached yet. */
	bufferedEvents: number;
	/** Buffered events nobody consumed, dropped when the instance finished. */
	droppedEvents: number;
	/** Present when the instance was deleted and this is its archived record. */
	archived?: true;
}
