/**
 * The host entry: the Durable Object class and the Worker app, for the one
 * Worker that runs the engine (`src/index.ts`). It brings in
 * `cloudflare:workers`, Drizzle and Hono; workflow files import
 * `src/authoring.ts` instead, caller Workers `src/shardflow.ts`.
 *
 * @example
 * export class WorkflowRunner extends createWorkflowRunner(registry) {}
 * export default createApp(registry);
 */
export { createWorkflowRunner, type RunnerOptions } from './runtime/workflow-runner';
export { createApp, type ApiEnv, type AppOptions } from './api/app';
