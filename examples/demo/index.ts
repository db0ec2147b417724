import { Hono } from 'hono';
import { createApp, createWorkflowRunner, type ApiEnv } from '../../src/host'; // in your own Worker: 'shardflow'
import { progressPage } from './workflows/progress-page';
import { registry } from './workflows/registry';

/** The one Durable Object class: every workflow type and every index shard. */
export class WorkflowRunner extends createWorkflowRunner(registry) {}

/** The Worker: the REST API at /workflows, served by Hono, and the live-stream example page (docs/streams.md). */
const api = createApp(registry);
const worker = new Hono<{ Bindings: ApiEnv }>();
worker.get('/examples/progress', (c) => c.html(progressPage()));
// Everything else is the app's, answered by it whole: its JSON 404 for an unknown route and its
// JSON errors (a Hono app mounted with `route` would answer an unknown path with the outer
// app's plain-text 404 instead).
worker.all('*', (c) => api.fetch(c.req.raw, c.env, c.executionCtx));
export default worker;
