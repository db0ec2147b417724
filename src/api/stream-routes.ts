import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { namespace } from '../client/instance-client';
import { openInstanceStream } from '../client/instance-stream';
import { parseHistoryAfter } from '../engine/history';
import { assertValidWorkflowId } from '../engine/ids';
import type { StreamEvent } from '../engine/stream';
import type { ApiEnv } from './app';

/** How often an idle SSE response sends a comment line, so proxies and browsers keep it open. */
const SSE_KEEPALIVE_MS = 20_000;
/** What a browser's EventSource waits before reconnecting (it then sends Last-Event-ID). */
const SSE_RETRY_MS = 1_000;

/**
 * `GET /workflows/:id/stream` (docs/streams.md), behind the API's auth:
 * - with `Upgrade: websocket`, the upgrade goes to the instance's object, which
 *   accepts it as a hibernatable WebSocket: the Worker holds nothing;
 * - otherwise, Server-Sent Events: the Worker subscribes like any client
 *   (`openInstanceStream`) and relays each record as an event whose `id` is its
 *   seq. The object still hibernates between messages, but the Worker's request
 *   is held for as long as the browser listens (that is SSE's cost).
 * `?after=<seq>` (or SSE's `Last-Event-ID`) resumes after a record: no gap, no duplicate.
 */
export function registerStreamRoutes(app: OpenAPIHono<{ Bindings: ApiEnv }>): void {
	app.get('/workflows/:id/stream', async (c) => {
		const id = c.req.param('id');
		assertValidWorkflowId(id);
		const given = c.req.query('after') ?? c.req.header('last-event-id');
		const after = given === undefined || given === '' ? undefined : parseHistoryAfter(given);
		if (c.req.header('upgrade')?.toLowerCase() === 'websocket') {
			const stub = namespace(c.env).getByName(id) as { fetch(request: Request): Promise<Response> };
			return stub.fetch(new Request(`https://instance/stream${after === undefined ? '' : `?after=${after}`}`, { headers: { upgrade: 'websocket' } }));
		}
		return serverSentEvents(c, id, after);
	});
}

async function serverSentEvents(c: Context<{ Bindings: ApiEnv }>, id: string, after: number | undefined): Promise<Response> {
	const abort = new AbortController();
	// A refusal (no such instance, too many subscribers) is answered with its status before any event.
	const events = await openInstanceStream(c.env, id, { ...(after === undefined ? {} : { after }), signal: abort.signal });
	const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
	const writer = writable.getWriter();
	const encoder = new TextEncoder();
	const write = (text: string) => writer.write(encoder.encode(text));
	const keepalive = setInterval(() => void write(': keep-alive\n\n').catch(() => abort.abort()), SSE_KEEPALIVE_MS);
	c.req.raw.signal?.addEventListener('abort', () => abort.abort());
	const relay = (async () => {
		try {
			await write(`retry: ${SSE_RETRY_MS}\n\n`);
			for await (const event of events) await write(frame(event));
		} catch {
			// The browser went away (a write failed) or the stream gave up: end the response.
		} finally {
			clearInterval(keepalive);
			abort.abort();
			await writer.close().catch(() => undefined);
		}
	})();
	try {
		c.executionCtx.waitUntil(relay);
	} catch {
		// No execution context (app.fetch without one): the relay runs on its own while the response is read.
	}
	return new Response(readable, {
		headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' },
	});
}

/** One SSE event: its id is the record's seq, which a reconnecting EventSource sends back as Last-Event-ID. */
function frame(event: StreamEvent): string {
	return `id: ${event.seq}\n${event.kind === 'end' ? 'event: end\n' : ''}data: ${JSON.stringify(event)}\n\n`;
}
