import { createApp } from './api/app';
import { registry } from './workflows/registry';

export { WorkflowRunner } from './runtime/workflow-runner';

/** The Worker: the REST API at /workflows, served by Hono. */
export default createApp(registry);
