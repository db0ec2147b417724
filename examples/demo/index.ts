import { Hono } from 'hono';
import { createApp, createWorkflowRunner } from '../../src/host'; // in your own Worker: 'shardflow'
import { progressPage } from './workflows/progress-page';
import { registry } from './workflows/registry';

/** The one Durable Object class: every workflow type and every index shard. */
export class WorkflowRunner extends createWorkflowRunner(registry) {}

/** The Worker: the REST API at /workflows, served by Hono, and the live-stream example page (docs/streams.md). */
const worker = new Hono();
worker.get('/examples/progress', (c) => c.html(progressPage()));
worker.route('/', createApp(registry));
export default worker;
