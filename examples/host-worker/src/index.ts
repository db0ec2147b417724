import { Hono } from 'hono';
import { timingSafeEqual } from 'hono/utils/buffer';
import { createApp, createWorkflowRunner, defineRegistry } from 'shardflow';
import { Greeter } from './greeter';

const registry = defineRegistry({ greeter: { workflow: Greeter } });

export class WorkflowRunner extends createWorkflowRunner(registry) {}

const app = new Hono<{ Bindings: { ADMIN_KEY?: string; API_TOKEN?: string } }>();
app.get('/', (c) => c.text('the shop'));
// The API for the shop's own services, behind the shop's auth. With ADMIN_KEY unset nobody gets
// in: comparing the header with an unset key would let every request without the header through.
app.use('/workflows-admin/*', async (c, next) => {
	const key = c.env.ADMIN_KEY;
	if (!key) return c.text('ADMIN_KEY is not set: the admin API is closed', 403);
	const sent = c.req.header('x-admin-key');
	if (sent === undefined || !(await timingSafeEqual(sent, key))) return c.text('who are you?', 401);
	await next();
});
app.route('/workflows-admin', createApp(registry, { auth: 'host', dashboard: false }));
// The API and its dashboard for people, under /ops: /ops/dashboard, signed in with API_TOKEN.
app.route('/ops', createApp(registry));
export default app;
