import { createApp, createWorkflowRunner } from 'shardflow';
import { registry } from './registry';

/** The one Durable Object class: every workflow type and every index shard. */
export class WorkflowRunner extends createWorkflowRunner(registry) {}

/**
 * The REST API (/workflows, /openapi.json) and the dashboard (/dashboard).
 * Outside `npm run dev` it needs a token: `npx wrangler secret put API_TOKEN`.
 * To serve it under a path of your own Hono app: `app.route('/ops', createApp(registry))`.
 */
export default createApp(registry);
