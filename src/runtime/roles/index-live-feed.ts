import { ErrorCode } from '../../engine/support/errors';
import type { IndexEntry } from '../../engine/index/index-entry';
import { STREAM_SUBSCRIBERS_MAX } from '../../engine/streams/stream';
import { WORKFLOW_STATUSES, type WorkflowStatus } from '../../engine/support/statuses';

/** How long entries written in a burst are gathered into one message (the dashboard promises ~1 s). */
const FLUSH_MS = 100;
/** A flush carrying more than this tells the watchers to re-read their page instead. */
const MAX_ENTRIES_PER_MESSAGE = 500;

/** What a watcher asked for, kept on its socket across hibernation: only entries in these statuses (none: every entry). */
interface WatchFilter {
	status?: WorkflowStatus[];
}

/** What a watcher of an index shard receives, as JSON text. */
export type LiveMessage =
	| { kind: 'hello'; shard: string }
	| { kind: 'entries'; shard: string; entries: IndexEntry[] }
	/** More changed than one message carries: re-read the listing. */
	| { kind: 'overflow'; shard: string };

/**
 * The live side of an index shard: dashboards connect with a WebSocket and
 * receive every entry the shard stores, a moment after it is stored. The
 * sockets are hibernatable (`ctx.acceptWebSocket`): a shard with watchers
 * and no writes is evicted like any idle object, and a ping is answered by
 * the runtime without waking it. A shard nobody watches does no work here
 * beyond one `getWebSockets()` per write.
 */
export class IndexLiveFeed {
	private pending = new Map<string, IndexEntry>();
	private timer: ReturnType<typeof setTimeout> | undefined;

	constructor(private readonly ctx: DurableObjectState) {
		ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair('ping', 'pong'));
	}

	/**
	 * Accepts a WebSocket upgrade (the Worker checked who asks). `?status=a,b`: only entries
	 * in those statuses (an application's query subscription, docs/streams.md).
	 */
	accept(request: Request): Response {
		if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') return new Response('expected a WebSocket upgrade', { status: 426 });
		const given = new URL(request.url).searchParams.get('status');
		const status = given ? given.split(',').map((s) => s.trim()) : undefined;
		const unknown = status?.find((s) => !WORKFLOW_STATUSES.includes(s as WorkflowStatus));
		if (unknown !== undefined) return refuse(400, ErrorCode.InvalidQuery, `unknown status ${JSON.stringify(unknown)}; statuses: ${WORKFLOW_STATUSES.join(', ')}`);
		if (this.ctx.getWebSockets().length >= STREAM_SUBSCRIBERS_MAX) {
			return refuse(429, ErrorCode.StreamSubscribersFull, `this index shard has its maximum of ${STREAM_SUBSCRIBERS_MAX} watchers; share one subscription or retry later`);
		}
		const { 0: client, 1: server } = new WebSocketPair();
		this.ctx.acceptWebSocket(server);
		if (status) server.serializeAttachment({ status: status as WorkflowStatus[] } satisfies WatchFilter);
		server.send(JSON.stringify({ kind: 'hello', shard: this.name } satisfies LiveMessage));
		return new Response(null, { status: 101, webSocket: client });
	}

	get watched(): boolean {
		return this.ctx.getWebSockets().length > 0;
	}

	/** Queues entries the shard now holds; the newest of each id goes out with the next flush. */
	publish(entries: IndexEntry[]): void {
		if (entries.length === 0 || !this.watched) return;
		for (const entry of entries) this.pending.set(entry.id, entry);
		this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
	}

	/** A watcher went away: complete the closing handshake. */
	closed(ws: WebSocket, code: number): void {
		try {
			ws.close(code === 1005 || code === 1006 ? 1000 : code, 'closing');
		} catch {
			// Already closed: nothing to complete.
		}
	}

	private flush(): void {
		this.timer = undefined;
		const entries = [...this.pending.values()];
		this.pending.clear();
		const overflow = entries.length > MAX_ENTRIES_PER_MESSAGE;
		// One text per distinct filter: the dashboard's watchers (no filter) share one.
		const texts = new Map<string, string | null>();
		const textFor = (filter: WatchFilter | null) => {
			const key = filter?.status?.join(',') ?? '';
			if (!texts.has(key)) {
				const kept = filter?.status ? entries.filter((e) => filter.status!.includes(e.status)) : entries;
				const message: LiveMessage | null = overflow ? { kind: 'overflow', shard: this.name } : kept.length ? { kind: 'entries', shard: this.name, entries: kept } : null;
				texts.set(key, message && JSON.stringify(message));
			}
			return texts.get(key)!;
		};
		for (const ws of this.ctx.getWebSockets()) {
			const text = textFor(ws.deserializeAttachment() as WatchFilter | null);
			if (text === null) continue;
			try {
				ws.send(text);
			} catch {
				// A socket closing under us; its close handler cleans up.
			}
		}
	}

	private get name(): string {
		return this.ctx.id.name ?? '';
	}
}

function refuse(status: number, code: string, message: string): Response {
	return Response.json({ error: { code, message } }, { status });
}
