import { Hono } from 'hono';
import { defineIndexLayout, IndexClient, ShardflowError, workflowClient, type ShardflowEnv } from 'shardflow/client';
// A type, not code: the caller's bundle carries neither the workflow nor the engine.
import type { PaymentWorkflow } from '../../demo/workflows/payment-workflow';

/**
 * A shop Worker: checkout starts a payment workflow in the shardflow Worker,
 * a reviewer approves it, and anyone can watch it. Every call is typed by the
 * workflow class: a wrong event name or payload does not compile. It imports
 * only `shardflow/client`.
 */
const app = new Hono<{ Bindings: ShardflowEnv }>();
const payments = (env: ShardflowEnv) => workflowClient<typeof PaymentWorkflow>(env, 'payment');
// The same shard count as the host's registry (examples/demo/workflows/registry.ts).
const layout = defineIndexLayout({ payment: { shards: 4 } });

app.post('/checkout', async (c) => {
	const { amount, currency } = await c.req.json<{ amount: number; currency: string }>();
	const { id, status } = await payments(c.env).create({ payload: { amount, currency } });
	return c.json({ id, status }, 201);
});

app.post('/checkout/:id/approve', async (c) => {
	const { reviewer } = await c.req.json<{ reviewer: string }>();
	await payments(c.env).sendEvent({ id: c.req.param('id'), event: 'approval', payload: { approved: true, reviewer } });
	return c.json({ ok: true }, 202);
});

app.get('/checkout/:id', async (c) => {
	const status = await payments(c.env).status(c.req.param('id'));
	return c.json({ id: status.id, status: status.status, output: status.output ?? null });
});

app.get('/checkouts', async (c) => {
	const page = await new IndexClient(c.env, layout).list({ type: 'payment', limit: 100 });
	return c.json(page);
});

app.onError((error, c) =>
	error instanceof ShardflowError ? c.json({ error: error.toBody() }, 400) : c.json({ error: { code: 'INTERNAL', message: 'internal error' } }, 500),
);

export default app;
