/**
 * `shardflow/workflow`, the authoring entry: what a workflow file imports. The base class (with its
 * typed static helpers), step types, errors, durations and the registry. It
 * pulls in no `cloudflare:*`, Drizzle or Hono (test/tooling/entry-points.test.ts
 * bundles it to prove it), so a workflow file can be type-checked, bundled and
 * unit-tested anywhere; the host (the Durable Object class and the Worker app)
 * is `src/host.ts`.
 *
 * @example
 * import { Workflow, type Step } from 'shardflow/workflow';
 * export class Greeter extends Workflow<{ name: string }, string> {
 *   static override readonly type = 'greeter';
 *   async run(step: Step, { name }: { name: string }) {
 *     return step.do('greet', () => `Hello, ${name}!`);
 *   }
 * }
 */
export { Workflow } from './workflow';
export type { StreamsOf, EventsOf, OutputOf, PayloadInputOf, PayloadOf, StepOf, TypedStatus } from './engine/definition/class-types';
export {
	ATTRIBUTE_LIMITS,
	type AttributeDeclaration,
	type AttributeKind,
	type AttributesOf,
	type AttributeUpdate,
	type AttributeValues,
} from './engine/index/search-attributes';
export { defineRegistry, type Registry, type RegistryEntry, type TypeOptions } from './engine/definition/registry';
export { parseDuration, type Duration, type DurationUnit } from './engine/support/duration';
export type { ScheduleDefinition, ScheduleOverlap } from './engine/schedule/schedule';
export type { ConcurrencyDefinition } from './engine/limiter/concurrency';
export type { InstanceLimits } from './engine/definition/instance-limits';
export type { RetryPolicy, Backoff, RetryDelayFunction, RetryDelayInput } from './engine/definition/retry-policy';
export type { SendEventOptions } from './engine/instance/event-keys';
export type { ChildOptions, OnParentTerminate } from './engine/definition/child-options';
export type { RestartFrom, RestartFromStep } from './engine/steps/restart-from';
export type { RestartFromType } from './engine/support/step-kinds';
export type {
	EventMap,
	StreamMap,
	Json,
	Serializable,
	Step,
	StepAttempt,
	StepConfig,
	StepDoOptions,
	StepPage,
	StepSummary,
	WaitForEventOptions,
	RollbackFunction,
	RollbackInfo,
	PendingWebhook,
	WebhookHandle,
	WebhookOptions,
	WorkflowContext,
	WorkflowDefaults,
	DeclaredWorkflowDefaults,
	WorkflowStatusInfo,
} from './engine/definition/types';
export type { WorkflowStatus } from './engine/support/statuses';
export { WORKFLOW_STATUSES } from './engine/support/statuses';
export * from './caller-errors';
// ...and those a workflow's own steps raise or throw.
export {
	DelayFunctionError,
	DeterminismError,
	EventTimeoutError,
	HistoryLimitExceededError,
	NonRetryableError,
	StepFailedError,
	StepLimitExceededError,
	StepTimeoutError,
} from './engine/support/errors';
export type { ShardflowEnv } from './client/instance-client';
