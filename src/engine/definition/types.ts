import type { StepKind } from '../support/step-kinds';
import type { StepStatus, WorkflowStatus } from '../support/statuses';
import type { AttributeDeclaration, AttributeUpdate } from '../index/search-attributes';
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { Duration } from '../support/duration';
import type { Backoff, RetryDelayFunction, RetryPolicy } from './retry-policy';
import type { ChildClass, ChildOptions, ChildOutput, ChildPayload } from './child-options';

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

/**
 * `static streams` of a workflow class: one declaration per topic `step.emit` publishes
 * on, a Standard Schema (validated at run time) or a type marker (`{} as { percent: number }`).
 */
export type StreamMap = Record<string, EventDeclaration>;
/** What a subscriber receives for each topic of a stream map. */
export type StreamData<S> = { [K in keyof S & string]: EventPayload<S[K]> };

/** Event names of a map; `never` when the workflow declares none. */
export type EventName<E> = keyof E & string;

/**
 * What `step.do` hands its function (Cloudflare's `ctx`): which attempt this is, a signal
 * that aborts when the attempt times out, the step's name and the config it runs with.
 * @example await step.do('charge', async ({ attempt, signal, config }) => charge(order, { signal, last: attempt > config.retries.limit }));
 */
export interface StepAttempt {
	/** 1 for the first attempt, 2 for the first retry, … */
	attempt: number;
	/** Aborts at the step's `timeout`: the attempt is abandoned, so pass it to `fetch` or stop on it. */
	signal: AbortSignal;
	/** The step's name, and which occurrence of it this is: always 1, step names being unique per kind within a run (Cloudflare counts repeats). */
	step: { name: string; count: number };
	/** The retries and timeout this step runs with, defaults applied (frozen: changing it changes nothing). */
	config: StepConfig;
}

/** `ctx.config`: a step's retries and attempt timeout as resolved (the step's own, else the workflow's `static defaults`, else the engine's). */
export interface StepConfig {
	/** `delay` is left out when it is a function (`RetryDelayFunction`). */
	retries: { limit: number; delay?: Duration; backoff: Backoff };
	/** As given, or `'10 minutes'` (DEFAULT_STEP_TIMEOUT). */
	timeout: Duration;
	/** Present when the step's result is redacted outside the run. */
	sensitive?: 'output';
}

/**
 * Undoes a completed step (saga): gets the step's stored result and, like a step
 * function, `{attempt, signal}`. Its return value is ignored.
 */
export type RollbackFunction<T = any> = (result: T, attempt: StepAttempt) => Promise<unknown> | unknown;

/** Options of one `step.do`. */
export interface StepDoOptions<T = any> {
	/** Overrides the workflow's `static defaults.retries`. */
	retries?: RetryPolicy;
	/** Longest a single attempt may take (default 10 minutes, like Cloudflare); a late attempt fails with `STEP_TIMEOUT` and is retried. More than 0. */
	timeout?: Duration;
	/**
	 * Runs, once this step has completed, when `run()` fails for good or on
	 * `terminate(…, {rollback: true})`: the rollbacks of completed steps run in
	 * reverse completion order, each a checkpointed step of its own (docs/writing-workflows.md "Rollbacks").
	 * @example await step.do('charge', () => charge(order), { rollback: (charge) => refund(charge.id) });
	 */
	rollback?: RollbackFunction<T>;
	/** Retries of the rollback; defaults to the type's `defaults.retries` (not the step's: a step that must not be retried still needs its compensation retried, also after a crash). */
	rollbackRetries?: RetryPolicy;
	/** Longest a single rollback attempt may take (default 10 minutes, like a step's). More than 0. */
	rollbackTimeout?: Duration;
	/**
	 * `'output'`: the result is stored for replay but shown as `'[REDACTED]'` in the status,
	 * step pages, history export, archive, dashboard and test kit (errors are not redacted).
	 * @example const token = await step.do('get-token', () => auth(), { sensitive: 'output' });
	 */
	sensitive?: 'output';
}

/** Options of `step.webhook`. */
export interface WebhookOptions {
	/** After this, a POST to the URL is refused (410) and `wait()` throws `WEBHOOK_EXPIRED`. Without one the URL works until it is used or the instance ends. */
	timeout?: Duration;
}

/**
 * A one-shot webhook (`step.webhook`): its URL exists (and is stored) before anyone
 * waits, so it can be sent out first; one POST of JSON to it completes `wait()`.
 */
export interface WebhookHandle<Body = unknown> {
	/** Where an outside system POSTs, once, without the API token (absolute when `PUBLIC_URL` is set, else a path). */
	url: string;
	/** When the URL stops working (epoch milliseconds); null without a timeout. */
	expiresAt: number | null;
	/** The JSON body of the POST, once it came (suspends until then); throws `WebhookExpiredError` after the timeout. */
	wait(): Promise<Body>;
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
export interface Step<E extends object = {}, S extends object = {}, A extends AttributeDeclaration = {}> {
	/**
	 * Runs `fn` at least once until it succeeds, and stores its result, which must
	 * be JSON-compatible (see `Serializable`): a replay gets back exactly that JSON.
	 * @example const user = await step.do('fetch-user', () => api.getUser(id));
	 */
	do<T>(name: string, fn: (attempt: StepAttempt) => Promise<T & Serializable<T>> | (T & Serializable<T>), options?: StepDoOptions<NoInfer<T>>): Promise<T>;
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
	 * A one-shot webhook: a URL (stored as this step's outcome) that an outside system
	 * POSTs JSON to exactly once, without the API token; `wait()` returns that body.
	 * @example
	 * const hook = await step.webhook('approval', { timeout: '7 days' });
	 * await step.do('ask', () => sendApprovalMail(hook.url));
	 * const answer = await hook.wait();
	 */
	webhook<Body = unknown>(name: string, options?: WebhookOptions): Promise<WebhookHandle<Body>>;
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
	/**
	 * Publishes a message on this instance's live stream (docs/streams.md), to every
	 * subscriber (`GET /workflows/:id/stream`, the client's `stream()`). The topic and its
	 * data are typed by the class's `static streams`. The message is a history record:
	 * durable, published once (a replay does not publish it again), at most 16 KiB of JSON
	 * (STREAM_MESSAGE_TOO_LARGE) and 50 a second, bursts of 200 (STREAM_RATE_LIMITED).
	 * Like steps, the emits of a run must be deterministic: the n-th emit of a run is
	 * published once.
	 * @example await step.emit('progress', { done: i, of: total });
	 */
	emit<K extends keyof S & string>(topic: K, data: Serializable<EventInput<S[K]>>): Promise<void>;
	/**
	 * Sets (or, with `null`, clears) search attributes the class declares (`static attributes`),
	 * as a step: recorded in the history (`attributes.set`) with the index update in the same
	 * write, done once, answered from the record on replay. Type `step` as `StepOf<typeof X>`
	 * (`Step<events, streams, attributes>`) and a wrong name or value does not compile.
	 * @example await step.setAttributes('mark-reviewed', { reviewer: approval.reviewer, reviewedAt: new Date() });
	 */
	setAttributes(name: string, attributes: AttributeUpdate<A>): Promise<void>;
}

/** What a running workflow knows about itself. */
export interface WorkflowContext<Env = unknown> {
	id: string;
	type: string;
	env: Env;
}

/**
 * Workflow-level defaults that every step inherits unless it overrides them.
 * Write `satisfies WorkflowDefaults` after a class's `static defaults` so a
 * misspelt duration (`delay: '1 sec0nd'`) does not compile:
 *
 * @example
 * static override defaults = { retries: { limit: 3, delay: '1s', backoff: 'exponential' } } satisfies WorkflowDefaults;
 */
export interface WorkflowDefaults {
	retries?: RetryPolicy;
}

/**
 * `static defaults` as TypeScript types a class property written without
 * `satisfies`: a class property is not typed by the base class, so its
 * strings widen to `string`. Accepted so such classes compile; `defineRegistry`
 * checks them when the Worker starts and names the type of a bad one.
 */
export interface DeclaredWorkflowDefaults {
	retries?: Omit<RetryPolicy, 'delay'> & { delay: Duration | RetryDelayFunction | (string & {}) };
}

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
	/** The search attributes set (a datetime as ms since the epoch); absent while none is. */
	attributes?: Record<string, string | number | boolean>;
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
	/** Present once rollbacks began (status `rolling_back`, then `errored` or `terminated`). */
	rollback?: RollbackInfo;
	/** Webhooks waiting for their POST (`step.webhook`), with their URLs. */
	webhooks?: PendingWebhook[];
}

/** What the status says about the rollbacks of an instance. */
export interface RollbackInfo {
	/** Why they run: `run()` failed for good, or a terminate asked for them. */
	reason: 'failed' | 'terminated';
	/** `running`, then `completed` (every rollback ran), `failed` (one failed for good: the rest did not run) or `abandoned` (a plain terminate stopped them). */
	state: 'running' | 'completed' | 'failed' | 'abandoned';
	/** Rollbacks completed so far. */
	completed: number;
	/** The step whose rollback failed for good, and its error. */
	failedStep?: string;
	error?: { name: string; message: string; code?: string };
}

/** A webhook waiting for its POST. */
export interface PendingWebhook {
	step: string;
	url: string;
	expiresAt: number | null;
}
