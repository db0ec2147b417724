import { ErrorCode } from '../../engine/support/errors';
import { parseHistoryAfter } from '../../engine/history/history';
import type { InstanceStore } from '../../engine/storage/store';
import { STREAM_CATCH_UP_PAGE, STREAM_KINDS, STREAM_SUBSCRIBERS_MAX, streamEnds, toStreamRecord, type StreamEvent } from '../../engine/streams/stream';
import { advanceCursors, placeOf, type SubscriberAttachment, type SubscriberPlace } from '../../engine/streams/stream-cursors';

/** The key (in the object's key-value storage) of the head: the cursor of every subscriber in step with the stream. */
const STREAM_HEAD_KEY = 'stream:head';

/** Close code of a stream that ended because the instance finished (or was deleted). */
export const STREAM_END_CLOSE = 1000;

/**
 * The live side of a workflow instance (docs/streams.md): subscribers connect
 * with a WebSocket (directly, or through the Worker's SSE relay or the
 * client's iterator) and receive the instance's stream records in history
 * order, then `end` once it has finished. The sockets are hibernatable
 * (`ctx.acceptWebSocket`): an instance with subscribers and nothing to say is
 * evicted like any idle one, and a ping is answered without waking it. Where
 * each subscriber stands survives hibernation at the cost of one write per
 * flush, not one per subscriber (engine/streams/stream-cursors.ts): those in
 * step share the head, kept in storage; a socket's attachment carries a cursor
 * only while it is not at the head. So a subscriber never gets a record twice on
 * one connection, and one that reconnects with `after=<seq>` misses none:
 * records are read from the history, which the output gate releases only once
 * it is durable.
 *
 * Bounds: at most `STREAM_SUBSCRIBERS_MAX` sockets; a flush reads one page of
 * `STREAM_CATCH_UP_PAGE` records and sends each subscriber at most those, then
 * yields before the next page, so a subscriber far behind catches up page by
 * page instead of in one unbounded burst.
 */
export class InstanceStreamFeed {
	private timer: ReturnType<typeof setTimeout> | undefined;
	private subscribers: number;
	/** Each subscriber's place, by its attachment's `sub` (rebuilt from the attachments and the head after a wake). */
	private readonly places = new Map<string, SubscriberPlace>();
	/** The head as stored (undefined: not read since the object woke). */
	private head: number | undefined;
	/** Each socket's `sub`, so a flush need not read every attachment (a miss reads it: after a wake, or if the runtime hands out another wrapper). */
	private readonly subOf = new WeakMap<WebSocket, string>();

	constructor(
		private readonly ctx: DurableObjectState,
		/** The instance's store, or undefined when the object holds no instance (never created, or deleted). */
		private readonly store: () => InstanceStore | undefined,
	) {
		ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair('ping', 'pong'));
		this.subscribers = ctx.getWebSockets().length;
	}

	/** Accepts a subscriber (the Worker checked who asks). `?after=<seq>`: resume after that record. */
	accept(request: Request): Response {
		if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') return refuse(426, 'UPGRADE_REQUIRED', 'open the stream as a WebSocket');
		const store = this.store();
		const row = store?.readInstance();
		if (!store || !row) return refuse(404, ErrorCode.NotFound, 'no such workflow instance');
		let after: number;
		try {
			const given = new URL(request.url).searchParams.get('after');
			// Without `after`: from the start of the current run (a restarted instance's earlier runs are history).
			after = given === null ? Math.max(0, (store.readHistory({ generation: row.generation, afterSeq: 0, limit: 1 })[0]?.seq ?? 1) - 1) : parseHistoryAfter(given);
		} catch (error) {
			return refuse(400, ErrorCode.InvalidCursor, (error as Error).message);
		}
		// Refused, not clamped: an `after` past the end was not issued by this instance's history
		// (a typo, or a seq of an instance deleted and created again under the same id), and
		// waiting on it would hold back every record up to it with no word of why.
		const last = store.historyLastSeq();
		if (after > last) return refuse(400, ErrorCode.InvalidCursor, `after=${after} is past the last record of this instance's history (seq ${last}); resume with a seq it sent`);
		if (this.ctx.getWebSockets().length >= STREAM_SUBSCRIBERS_MAX) {
			return refuse(429, ErrorCode.StreamSubscribersFull, `this instance has its maximum of ${STREAM_SUBSCRIBERS_MAX} stream subscribers; share one subscription (say, through your own Worker) or retry later`);
		}
		const { 0: client, 1: server } = new WebSocketPair();
		this.ctx.acceptWebSocket(server);
		const sub = crypto.randomUUID();
		server.serializeAttachment({ sub, after } satisfies SubscriberAttachment);
		this.subOf.set(server, sub);
		this.places.set(sub, { cursor: after, attached: true });
		this.subscribers++;
		this.schedule();
		return new Response(null, { status: 101, webSocket: client });
	}

	/** The history grew: subscribers get the new records on the next turn (writes of one turn go out together). */
	historyAppended(): void {
		if (this.subscribers > 0) this.schedule();
	}

	/** A subscriber went away: complete the closing handshake. */
	closed(ws: WebSocket, code: number): void {
		this.subscribers = Math.max(0, this.ctx.getWebSockets().length - 1);
		try {
			ws.close(code === 1005 || code === 1006 ? 1000 : code, 'closing');
		} catch {
			// Already closed: nothing to complete.
		}
	}

	/** The instance is gone (deleted): every subscriber's stream ends. */
	endAll(reason: string): void {
		for (const ws of this.ctx.getWebSockets()) close(ws, STREAM_END_CLOSE, reason);
		this.subscribers = 0;
		this.places.clear();
		this.head = undefined;
	}

	private schedule(): void {
		this.timer ??= setTimeout(() => this.flush(), 0);
	}

	private flush(): void {
		this.timer = undefined;
		const sockets = this.ctx.getWebSockets();
		this.subscribers = sockets.length;
		if (sockets.length === 0) return;
		const store = this.store();
		const row = store?.readInstance();
		if (!store || !row) return this.endAll('deleted');
		const head = (this.head ??= this.ctx.storage.kv.get<number>(STREAM_HEAD_KEY) ?? 0);
		const subscribers = sockets.map((ws) => ({ ws, ...this.placeOfSocket(ws, head) }));
		// Places of sockets that went away go with them.
		const present = new Set(subscribers.map((s) => s.sub));
		for (const sub of this.places.keys()) if (!present.has(sub)) this.places.delete(sub);
		const from = Math.min(...subscribers.map((s) => s.place.cursor));
		const rows = store.readHistoryOfKinds({ afterSeq: from, limit: STREAM_CATCH_UP_PAGE, kinds: STREAM_KINDS });
		const texts = rows.map((r) => ({ seq: r.seq, text: JSON.stringify(toStreamRecord(r)) }));
		const more = rows.length === STREAM_CATCH_UP_PAGE;
		const ends = !more && streamEnds(row.status);
		for (const { ws, place } of subscribers) {
			let last = place.cursor;
			for (const { seq, text } of texts) {
				if (seq <= last) continue;
				send(ws, text);
				last = seq;
			}
			if (ends) {
				send(ws, JSON.stringify({ kind: 'end', seq: last, status: row.status } satisfies StreamEvent));
				close(ws, STREAM_END_CLOSE, 'finished');
			}
		}
		if (ends) {
			this.subscribers = 0;
			this.places.clear();
		} else if (texts.length > 0) {
			// Written in the turn of the sends: the output gate lets them out once these are durable.
			const moved = advanceCursors(this.places, head, texts.at(-1)!.seq);
			const bySub = new Map(subscribers.map((s) => [s.sub, s.ws]));
			for (const attachment of moved.rewrite) bySub.get(attachment.sub)?.serializeAttachment(attachment);
			if (moved.head !== head) this.ctx.storage.kv.put(STREAM_HEAD_KEY, (this.head = moved.head));
		}
		// The next page on a later turn: the runtime sends this one first, and other work gets a turn.
		if (more) this.schedule();
	}

	/** A socket's subscriber and place: known in memory, or (after a wake) read from its attachment and the head. */
	private placeOfSocket(ws: WebSocket, head: number): { sub: string; place: SubscriberPlace } {
		const known = this.subOf.get(ws);
		const knownPlace = known === undefined ? undefined : this.places.get(known);
		if (known !== undefined && knownPlace) return { sub: known, place: knownPlace };
		let attachment = ws.deserializeAttachment() as Partial<SubscriberAttachment> | null;
		if (typeof attachment?.sub !== 'string') {
			// A socket accepted without a name (none is, today): named now, from the cursor it carries.
			attachment = { sub: crypto.randomUUID(), after: attachment?.after ?? 0 };
			ws.serializeAttachment(attachment);
		}
		const sub = attachment.sub as string;
		this.subOf.set(ws, sub);
		let place = this.places.get(sub);
		if (!place) this.places.set(sub, (place = placeOf(attachment as SubscriberAttachment, head)));
		return { sub, place };
	}
}

function send(ws: WebSocket, text: string): void {
	try {
		ws.send(text);
	} catch {
		// A socket closing under us; its close handler cleans up.
	}
}

function close(ws: WebSocket, code: number, reason: string): void {
	try {
		ws.close(code, reason);
	} catch {
		// Already closed.
	}
}

/** A stream refused before it opened: its status and `{error: {code, message}}`, as the Worker's routes answer. */
export function refuse(status: number, code: string, message: string): Response {
	return Response.json({ error: { code, message } }, { status });
}
