/**
 * `shardflow`, the host entry: what the Worker that runs the engine imports.
 * It builds the one Durable Object class and the REST API (a Hono app, to
 * serve alone or mount under a path of your own app) from a registry. It
 * brings in `cloudflare:workers`, Drizzle and Hono; workflow files import
 * `shardflow/workflow` (src/authoring.ts) instead, Workers that only call
 * workflows `shardflow/client` (src/client.ts).
 *
 * @example
 * import { createApp, createWorkflowRunner, defineRegistry } from 'shardflow';
 * const registry = defineRegistry({ greeter: { workflow: Greeter } });
 * export class WorkflowRunner extends createWorkflowRunner(registry) {}
 * export default createApp(registry);
 */
export { createWorkflowRunner, type RunnerOptions } from './runtime/workflow-runner';
export { createApp, type ApiEnv, type AppOptions } from './api/app';
export { defineRegistry, type Registry, type RegistryEntry, type TypeOptions } from './engine/definition/registry';
export type { InstanceLimits } from './engine/definition/instance-limits';
export type { ShardflowEnv } from './client/instance-client';
export { rebalance, type RebalanceProgress } from './client/rebalance';
export { backlogSummary, reconcile, reindex, type ReconcileProgress } from './client/reconcile';
export { purge, type PurgeOptions, type PurgeProgress } from './client/purge';
export type { BacklogSummary } from './engine/index/index-backlog';
export { shardIndex } from './engine/index/shard';
export { schedules, wakeSchedules } from './client/schedule-client';
export { limiterInfo } from './client/limiter-client';
export type { ScheduleInfo, ScheduleRun, ScheduleOutcome } from './engine/schedule/schedule-engine';
export type { LimiterInfo } from './engine/limiter/limiter';
