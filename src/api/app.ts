import { Hono } from 'hono';
import { instances, type ShardflowEnv } from '../client/instance-client';
import type { Registry } from '../engine/registry';

export function createApp(registry: Registry) {
	const app = new Hono<{ Bindings: ShardflowEnv }>();
	app.post('/workflows', async (c) => {
		const body = await c.req.json<{ type: string; id?: string; payload: unknown }>();
		registry.get(body.type);
		const result = await instances.create(c.env, body.type, body);
		return c.json(result, result.created ? 201 : 200);
	});
	app.get('/workflows/:id', async (c) => c.json(await instances.status(c.env, c.req.param('id'))));
	return app;
}
