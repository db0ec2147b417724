import { createRoute, z } from '@hono/zod-openapi';
import { groupScoped } from '../client/group-scope';
import { groupOfLayout, type LayoutGroups } from '../client/index-group';
import type { Context } from 'hono';
import { namespace } from '../client/instance-client';
import { openInstanceStream } from '../client/instance-stream';
import { openIndexWatch } from '../client/index-watch';
import type { IndexLayout } from '../engine/definition/registry';
import type { WorkflowStatus } from '../engine/support/statuses';
import { parseHistoryAfter } from '../engine/history/history';
import { assertValidWorkflowId } from '../engine/support/ids';
import { ErrorCode, ValidationError } from '../engine/support/errors';
import type { StreamEvent } from '../engine/streams/stream';
import { SseBudget } from '../engine/streams/sse-budget';
import { busyAnswer, SSE_RELAY_WINDOW, takeRelayPlace } from './sse-relays';
import type { ApiEnv } from './env';
import { apiRoutes, type ApiRoutes } from './routes';
import { errors } from './openapi-responses';
import { refuseParamsOtherThan, statusParam } from './query-params';

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
export function streamRoutes(layout: IndexLayout): ApiRoutes {
	const app = apiRoutes();
	documentStreamRoutes(app);
	app.get('/workflows/:id/stream', async (c) => {
		const id = c.req.param('id');
		assertValidWorkflowId(id);
		refuseParamsOtherThan(c.req.queries(), ['after', 'ack'], { once: true, what: 'a stream' });
		const websocket = c.req.header('upgrade')?.toLowerCase() === 'websocket';
		// `ack=1`: a WebSocket subscriber that acknowledges what it took (docs/streams.md "Slow subscribers");
		// over SSE the relay acknowledges for the browser, as the browser reads.
		const ack = c.req.query('ack');
		if (ack !== undefined && (ack !== '1' || !websocket)) {
			throw new ValidationError(ErrorCode.InvalidQuery, websocket ? `ack=${JSON.stringify(ack.slice(0, 20))}: give ack=1 (this subscriber acknowledges) or leave it out` : 'ack is for WebSocket subscribers; over Server-Sent Events the relay acknowledges as the client reads');
		}
		// An EventSource reconnecting sends the URL it opened (with its `after`) and the last id it got:
		// that id is where it stands, so it wins over the URL's `after`.
		const lastEventId = c.req.header('last-event-id');
		const given = lastEventId !== undefined && lastEventId !== '' ? lastEventId : c.req.query('after');
		const after = given === undefined || given === '' ? undefined : parseHistoryAfter(given);
		if (websocket) {
			const stub = namespace(c.env).getByName(id) as { fetch(request: Request): Promise<Response> };
			const query = new URLSearchParams({ ...(after === undefined ? {} : { after: String(after) }), ...(ack ? { ack } : {}) }).toString();
			return stub.fetch(new Request(`https://instance/stream${query ? `?${query}` : ''}`, { headers: { upgrade: 'websocket' } }));
		}
		// At most SSE_RELAYS_PER_ISOLATE relays at once in this isolate, a share of them per client address (api/sse-relays.ts): past them, come back later.
		const release = takeRelayPlace(c.req.header('cf-connecting-ip') ?? '');
		if (!release) return new Response(busyAnswer(), { headers: SSE_HEADERS });
		const abort = new AbortController();
		abort.signal.addEventListener('abort', release);
		let events: AsyncGenerator<StreamEvent, void, undefined>;
		try {
			// A refusal (no such instance, too many subscribers) is answered with its status before any event.
			// A small window: what the instance sent and the client did not take waits here (api/sse-relays.ts).
			events = await openInstanceStream(c.env, id, { ...(after === undefined ? {} : { after }), signal: abort.signal, window: SSE_RELAY_WINDOW });
		} catch (error) {
			release();
			throw error;
		}
		// At most SSE_RESPONSE_BYTES per response, then `event: behind` (engine/streams/sse-budget.ts).
		const budget = new SseBudget();
		return relay(c, events, abort, frame, {
			admit: (event, size) => budget.admit(event.seq, size, event.kind === 'end'),
			spend: (size) => budget.spend(size),
			behind: () => budget.behind(),
		});
	});

	/**
	 * `GET /types/:type/stream?status=a,b`: status changes of the type's instances that match,
	 * as Server-Sent Events (a query subscription over the index shards' live feed; see
	 * `watchIndex`). Live notices, not a log: a `resync` event says to read the list again.
	 */
	app.get('/types/:type/stream', async (c) => {
		const type = c.req.param('type');
		refuseParamsOtherThan(c.req.queries(), ['status', 'group'], { once: true, what: "a type's stream" });
		const statuses = statusParam<WorkflowStatus>(c.req.query('status'));
		// A group's changes come from its own shards, in its jurisdiction (docs/residency.md).
		const group = groupOfLayout(layout as unknown as LayoutGroups, c.req.query('group'));
		const abort = new AbortController();
		// Every shard's socket is open before the response starts: a refusal (unknown type or status, too many watchers) is answered as an error.
		const events = await openIndexWatch(groupScoped(c.env, group.place), layout, { type, signal: abort.signal, ...(statuses ? { status: statuses } : {}) });
		return relay(c, events, abort, (event) => `event: ${event.kind}\ndata: ${JSON.stringify(event)}\n\n`);
	});
	return app;
}



/** The two routes in the OpenAPI document (their handlers are plain: a streamed body has no response schema to validate). */
function documentStreamRoutes(app: ApiRoutes): void {
	const events = (description: string) => ({ description, content: { 'text/event-stream': { schema: z.string() } } });
	app.openAPIRegistry.registerPath(
		createRoute({
			method: 'get',
			path: '/workflows/{id}/stream',
			summary:
				"Follow an instance live (docs/streams.md): its status changes, step completions and step.emit messages in history order, then an `end` event. Server-Sent Events whose ids are the records' seqs (resumes from Last-Event-ID), or a WebSocket with Upgrade: websocket",
			request: {
				params: z.object({ id: z.string() }),
				query: z.object({
					after: z.string().optional().openapi({ description: 'Start after this record (a seq); default: the start of the current run' }),
					ack: z.string().optional().openapi({ description: 'WebSocket only, 1: this subscriber acknowledges what it took (answers {"kind":"ack","seq":S,"token":T} with {"ack":S,"token":T}) and is paced at its 1 MiB window instead of closed with 4008' }),
				}),
				headers: z.object({ 'last-event-id': z.string().optional() }),
			},
			responses: { 200: events('The stream, until the instance finishes'), 101: { description: 'Switching to a WebSocket (Upgrade: websocket)' }, ...errors(400, 401, 404, 429) },
		}),
	);
	app.openAPIRegistry.registerPath(
		createRoute({
			method: 'get',
			path: '/types/{type}/stream',
			summary: 'Follow the status changes of the instances of a type live (docs/streams.md): `entries` events, and `resync` when some may have been missed',
			request: {
				params: z.object({ type: z.string() }),
				query: z.object({
					status: z.string().optional().openapi({ description: 'Comma-separated statuses; default: every status' }),
					group: z.string().optional().openapi({ description: 'The group whose instances to follow (docs/residency.md); default: the default group' }),
				}),
			},
			responses: { 200: events('Live changes, until the client goes away'), ...errors(400, 401, 429) },
		}),
	);
}

/**
 * Relays an iterator as Server-Sent Events. The response is held for as long as the client
 * listens (SSE's cost in a Worker). Its body is pulled, not pushed: the next event is taken from
 * the iterator only when the runtime asks for more of the body, which it does when the connection
 * takes a write; the iterator acknowledges only what was taken, so the instance sends at most its
 * window ahead (engine/streams/stream-window.ts). A write is taken whenever the socket buffers
 * between have room, not when the client read (megabytes per client under `wrangler dev`), so an
 * instance's stream also has a `budget`: past it the response ends with `event: behind`, saying
 * where to resume (engine/streams/sse-budget.ts). A client that goes away cancels the body; ending
 * the response (done, behind or cancelled) aborts and returns the iterator, which closes its socket.
 */
/** What one response may hand to its body (an instance's stream: engine/streams/sse-budget.ts); none for a type's live notices. */
interface RelayBudget<T> {
	/** Counts the frame of `event` (`size` bytes) if it fits; false: end the response instead. */
	admit(event: T, size: number): boolean;
	/** Counts bytes that carry no event. */
	spend(size: number): void;
	/** The last frame of a response past its budget. */
	behind(): string;
}

function relay<T>(c: Context<{ Bindings: ApiEnv }>, events: AsyncGenerator<T, void, undefined>, abort: AbortController, format: (event: T) => string, budget?: RelayBudget<T>): Response {
	const encoder = new TextEncoder();
	let stopped = false;
	const stop = () => {
		if (stopped) return;
		stopped = true;
		// The iterator may be waiting for its next message: the signal ends that wait, and closes its socket.
		abort.abort();
		// It may instead be paused at its yield (the event it gave was never relayed): return it, so its
		// `finally` runs and it holds nothing more (found from outside: each response ended this way kept
		// its subscription at the instance, ~0.5 MiB here, until the instance's 2,000 subscribers were full).
		events.return(undefined).catch(() => {});
	};
	c.req.raw.signal?.addEventListener('abort', stop);
	let started = false;
	/** The iterator's next event, asked for and not yet relayed (a keep-alive may have gone out while it was awaited). */
	let pending: Promise<IteratorResult<T, void>> | undefined;
	/** Hands bytes that carry no event to the body. */
	const send = (controller: ReadableStreamDefaultController<Uint8Array>, text: string) => {
		const bytes = encoder.encode(text);
		budget?.spend(bytes.byteLength);
		controller.enqueue(bytes);
	};
	const body = new ReadableStream<Uint8Array>(
		{
			async pull(controller) {
				if (!started) {
					started = true;
					return send(controller, `retry: ${SSE_RETRY_MS}\n\n`);
				}
				let timer: ReturnType<typeof setTimeout> | undefined;
				try {
					pending ??= events.next();
					const idle = new Promise<'idle'>((resolve) => (timer = setTimeout(() => resolve('idle'), SSE_KEEPALIVE_MS)));
					const next = await Promise.race([pending, idle]);
					if (next === 'idle') return send(controller, ': keep-alive\n\n');
					pending = undefined;
					if (next.done) {
						stop();
						return controller.close();
					}
					const bytes = encoder.encode(format(next.value));
					if (budget && !budget.admit(next.value, bytes.byteLength)) {
						// Past the budget: the pull is no sign the client read (the sockets' buffers between accept
						// megabytes), so the response ends here, saying where to resume; this event comes again then.
						stop();
						controller.enqueue(encoder.encode(budget.behind()));
						return controller.close();
					}
					controller.enqueue(bytes);
				} catch {
					// The stream gave up (its instance was deleted, its object kept failing): end the response.
					stop();
					controller.close();
				} finally {
					if (timer !== undefined) clearTimeout(timer);
				}
			},
			cancel() {
				stop();
			},
		},
		// Nothing read ahead of the client: an event is taken from the iterator only when the body is read.
		{ highWaterMark: 0 },
	);
	return new Response(body, { headers: SSE_HEADERS });
}

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' };

/** One SSE event: its id is the record's seq, which a reconnecting EventSource sends back as Last-Event-ID. */
function frame(event: StreamEvent): string {
	return `id: ${event.seq}\n${event.kind === 'end' ? 'event: end\n' : ''}data: ${JSON.stringify(event)}\n\n`;
}
