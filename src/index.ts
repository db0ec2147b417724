import { createApp, createWorkflowRunner } from './host';
import { registry } from './workflows/registry';

/** The one Durable Object class: every workflow type and every index shard. */
export class WorkflowRunner extends createWorkflowRunner(registry) {}

/** The Worker: the REST API at /workflows, served by Hono. */
export default createApp(registry);
