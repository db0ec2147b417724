/**
 * The public API of shardflow: what workflow authors and calling Workers
 * import. Internals (the engine core, stores, signals) are not re-exported.
 */
export { Workflow, type EventsOf, type OutputOf, type PayloadInputOf, type PayloadOf, type TypedStatus } from './workflow';
export { defineRegistry, type Registry, type RegistryEntry, type TypeOptions } from './engine/registry';
export type { Duration } from './engine/duration';
export type { RetryPolicy, Backoff } from './engine/retry-policy';
export type { SendEventOptions } from './engine/event-keys';
export type {
	EventMap,
	Json,
	Serializable,
	Step,
	StepAttempt,
	StepDoOptions,
	StepPage,
	StepSummary,
	WaitForEventOptions,
	WorkflowContext,
	WorkflowDefaults,
	WorkflowStatus,
	WorkflowStatusInfo,
} from './engine/types';
export { WORKFLOW_STATUSES } from './engine/types';
export {
	DeterminismError,
	ErrorCode,
	EventBufferFullError,
	EventTimeoutError,
	IdempotencyKeyReusedError,
	InvalidStateError,
	NonRetryableError,
	NotFoundError,
	PayloadMismatchError,
	ShardflowError,
	StepFailedError,
	StepTimeoutError,
	TypeMismatchError,
	ValidationError,
} from './engine/errors';
export { instances, type ShardflowEnv } from './client/instance-client';
export { IndexClient, type ListPage, type ListQuery } from './client/index-client';
export type { ListOrder } from './engine/index-query';
export { rebalance, type RebalanceProgress } from './client/rebalance';
export { backlogSummary, reconcile, reindex, type ReconcileProgress } from './client/reconcile';
export type { BacklogSummary } from './engine/index-backlog';
export { shardIndex } from './engine/shard';
export { createWorkflowRunner } from './runtime/workflow-runner';
export { createApp, type ApiEnv } from './api/app';
