import { Hono } from 'hono';
import { IndexClient, ShardflowError, type ShardflowEnv } from '../../../src/shardflow';
import { PaymentWorkflow } from '../../../src/workflows/payment-workflow';
import { registry } from '../../../src/workflows/registry';

/**
 * A shop Worker: checkout starts a payment workflow in the shardflow Worker,
 * a reviewer approves it, and anyone can watch it. Every call is typed by the
 * workflow class: a wrong event name or payload does not compile.
 */
const app = new Hono<{ Bindings: ShardflowEnv }>();

app.post('/checkout', async (c) => {
	const { amount, currency } = await c.req.json<{ amount: number; currency: string }>();
	const { id, status } = await PaymentWorkflow.create(c.env, { payload: { amount, currency } });
	return c.json({ id, status }, 201);
});

app.post('/checkout/:id/approve', async (c) => {
	const { reviewer } = await c.req.json<{ reviewer: string }>();
	await PaymentWorkflow.sendEvent(c.env, { id: c.req.param('id'), event: 'approval', payload: { approved: true, reviewer } });
	return c.json({ ok: true }, 202);
});

app.get('/checkout/:id', async (c) => {
	const status = await PaymentWorkflow.status(c.env, c.req.param('id'));
	return c.json({ id: status.id, status: status.status, output: status.output ?? null });
});

app.get('/checkouts', async (c) => {
	const page = await new IndexClient(c.env, registry).list({ type: 'payment', limit: 100 });
	return c.json(page);
});

app.onError((error, c) =>
	error instanceof ShardflowError ? c.json({ error: error.toBody() }, 400) : c.json({ error: { code: 'INTERNAL', message: 'internal error' } }, 500),
);

export default app;
