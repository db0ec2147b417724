/**
 * `shardflow/client`: what a Worker that only calls workflows imports. Typed
 * control calls by workflow type (`workflowClient`), untyped ones by
 * operation (`instances`), reads of the sharded index (`IndexClient`), and
 * the typed errors to match on. It needs nothing but a binding to the
 * `WorkflowRunner` namespace (`script_name` of the host Worker) and pulls in
 * no engine, Drizzle, Hono or `cloudflare:*` (test/tooling/entry-points.test.ts
 * and test/tooling/package.test.ts check the bundle).
 *
 * @example
 * import { workflowClient, type ShardflowEnv } from 'shardflow/client';
 * import type { PaymentWorkflow } from './payment-workflow'; // a type, not code
 * const payments = workflowClient<typeof PaymentWorkflow>(env, 'payment');
 * const { id } = await payments.create({ payload: { amount: 42, currency: 'EUR' } });
 */
export { workflowClient, type AnyWorkflowClass, type WorkflowClient } from './client/workflow-client';
export { instances, type ShardflowEnv } from './client/instance-client';
export { schedules } from './client/schedule-client';
export { limiterInfo } from './client/limiter-client';
export type { ScheduleInfo, ScheduleRun, ScheduleOutcome } from './engine/schedule/schedule-engine';
export type { LimiterInfo } from './engine/limiter/limiter';
export { createBatch, MAX_BATCH_CREATE, type BatchCreateItem, type BatchCreateOutcome } from './client/create-batch';
export { bulk, type BulkRequest } from './client/bulk-client';
export type { BulkAction, BulkProgress, BulkState } from './engine/bulk/bulk-job';
export { deleteBatch, MAX_BATCH_DELETE, type BatchDeleteOptions, type BatchDeleteOutcome } from './client/delete-batch';
export { IndexClient, type CountByQuery, type ListPage, type ListQuery, type TypedIndexReads, type TypedListPage, type TypedIndexEntry } from './client/index-client';
export { watchIndex, openIndexWatch, WATCH_CLIENT_BUFFER, type WatchEvent, type WatchQuery } from './client/index-watch';
export type {
	AttributeCondition,
	AttributeDeclaration,
	AttributeFilters,
	AttributeKind,
	AttributeRange,
	AttributesOf,
	AttributeUpdate,
	AttributeValues,
} from './engine/index/search-attributes';
export type { AttributeCounts } from './engine/index/index-query';
export { defineIndexLayout, type IndexLayout, type TypeOptions } from './engine/definition/registry';
export type { AttributeOrder, ListOrder, TimeOrder } from './engine/index/index-query';
export type { IndexEntry } from './engine/index/index-entry';
export type { CreateResult } from './engine/instance/create';
export type { RestartOptions } from './engine/instance/controls';
export type { RestartFrom, RestartFromStep } from './engine/steps/restart-from';
export type { RestartFromType } from './engine/support/step-kinds';
export type { SendEventOptions } from './engine/instance/event-keys';
export type { EventsOf, OutputOf, PayloadInputOf, StreamsOf, TypedStatus } from './engine/definition/class-types';
export { instanceStream, STREAM_CLIENT_BUFFER, type StreamOptions } from './client/instance-stream';
export type { StreamEvent, StreamMessage, StreamRecord } from './engine/streams/stream';
export { type StepPage, type StepSummary, type WorkflowStatusInfo } from './engine/definition/types';
export { WORKFLOW_STATUSES, type WorkflowStatus } from './engine/support/statuses';
export * from './caller-errors';
// ...and the one a stream subscriber meets.
export { StreamSubscribersFullError } from './engine/support/errors';
