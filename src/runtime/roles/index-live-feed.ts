import type { IndexEntry } from '../../engine/index-entry';

/** How long entries written in a burst are gathered into one message (the dashboard promises ~1 s). */
const FLUSH_MS = 100;
/** A flush carrying more than this tells the watchers to re-read their page instead. */
const MAX_ENTRIES_PER_MESSAGE = 500;

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

	/** Accepts a WebSocket upgrade (the Worker checked who asks). */
	accept(request: Request): Response {
		if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') return new Response('expected a WebSocket upgrade', { status: 426 });
		const { 0: client, 1: server } = new WebSocketPair();
		this.ctx.acceptWebSocket(server);
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
		const message: LiveMessage =
			entries.length > MAX_ENTRIES_PER_MESSAGE ? { kind: 'overflow', shard: this.name } : { kind: 'entries', shard: this.name, entries };
		const text = JSON.stringify(message);
		for (const ws of this.ctx.getWebSockets()) {
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
