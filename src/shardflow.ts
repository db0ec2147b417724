/**
 * The public API for workflow authors and calling Workers: the authoring
 * entry plus the clients (instances by id, the sharded index, its repair
 * tools). Like the authoring entry it pulls in no `cloudflare:*`, Drizzle or
 * Hono; the Durable Object class and the Worker app are in `src/host.ts`.
 * Internals (the engine core, stores, signals) are not re-exported.
 */
export * from './authoring';
export { instances } from './client/instance-client';
export { IndexClient, type ListPage, type ListQuery } from './client/index-client';
export type { ListOrder } from './engine/index-query';
export { rebalance, type RebalanceProgress } from './client/rebalance';
export { backlogSummary, reconcile, reindex, type ReconcileProgress } from './client/reconcile';
export { purge, type PurgeOptions, type PurgeProgress } from './client/purge';
export type { BacklogSummary } from './engine/index-backlog';
export { shardIndex } from './engine/shard';
