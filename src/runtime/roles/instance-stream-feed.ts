import { ErrorCode } from '../../engine/support/errors';
import { historyRowChars, parseHistoryAfter } from '../../engine/history/history';
import type { InstanceStore } from '../../engine/storage/store';
import { STREAM_CATCH_UP_PAGE, STREAM_KINDS, STREAM_SUBSCRIBERS_MAX, streamEnds, toStreamRecord, type StreamEvent } from '../../engine/streams/stream';
import { advanceCursors, placeOf, type SubscriberAttachment, type SubscriberPlace } from '../../engine/streams/stream-cursors';
import { ackRequest, acknowledged, askIfPaced, behindReason, fits, openWindow, parseAck, parseWindowParam, recordSent, STREAM_BEHIND_CLOSE, storedWindow, windowOf, type StreamWindow } from '../../engine/streams/stream-window';

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
 * `STREAM_CATCH_UP_PAGE` records (no more bytes than the roomiest window takes)
 * and sends each subscriber at most those, then yields before the next page.
 * What a subscriber was sent and has not acknowledged never passes its window
 * (engine/streams/stream-window.ts): one that acknowledges (`ack=1`) is paced,
 * one that does not is closed with `STREAM_BEHIND_CLOSE` and where to resume,
 * so a subscriber that never reads costs the runtime its window, not the stream.
 */
export class InstanceStreamFeed {
	private timer: ReturnType<typeof setTimeout> | undefined;
	private subscribers: number;
	/** Each subscriber's place, by its attachment's `sub` (rebuilt from the attachments and the head after a wake). */
	private readonly places = new Map<string, FeedPlace>();
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
		const query = new URL(request.url).searchParams;
		// `ack=1`: the subscriber acknowledges what it took (engine/streams/stream-window.ts), and is paced instead of dropped.
		const acks = query.get('ack') === '1';
		let windowBytes: number | undefined;
		try {
			// `window=<bytes>`: a subscriber that acknowledges may ask for a smaller window (the SSE relay does).
			windowBytes = parseWindowParam(query.get('window'));
		} catch (error) {
			return refuse(400, ErrorCode.InvalidQuery, (error as Error).message);
		}
		try {
			const given = query.get('after');
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
		const place: FeedPlace = { cursor: after, attached: true, window: openWindow(acks, windowBytes), paced: false };
		server.serializeAttachment(attachmentOf(sub, place));
		this.subOf.set(server, sub);
		this.places.set(sub, place);
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
		// Sockets closing (ended, or dropped a window behind) are no subscribers any more.
		const sockets = this.ctx.getWebSockets().filter((ws) => ws.readyState === WebSocket.OPEN);
		this.subscribers = sockets.length;
		if (sockets.length === 0) return;
		const store = this.store();
		const row = store?.readInstance();
		if (!store || !row) return this.endAll('deleted');
		const head = this.readHead();
		const subscribers = sockets.map((ws) => ({ ws, ...this.placeOfSocket(ws, head) }));
		// Places of sockets that went away go with them.
		const present = new Set(subscribers.map((s) => s.sub));
		for (const sub of this.places.keys()) if (!present.has(sub)) this.places.delete(sub);
		// A subscriber paced (its window full) waits for its acknowledgement: it neither gets records
		// nor holds the page back for the others.
		const ready = subscribers.filter((s) => !s.place.paced);
		if (ready.length === 0) return;
		const from = Math.min(...ready.map((s) => s.place.cursor));
		// No more than the roomiest window takes: a paced subscriber's next turn reads what it can be sent, not a whole page.
		const room = Math.max(...ready.map((s) => Math.max(s.place.window.size - s.place.window.unacked, 0)));
		const rows = store.readHistoryOfKinds({ afterSeq: from, limit: STREAM_CATCH_UP_PAGE, kinds: STREAM_KINDS, maxBytes: room });
		const texts = rows.map((r) => {
			const text = JSON.stringify(toStreamRecord(r));
			return { seq: r.seq, text, bytes: utf8Bytes(text) };
		});
		// A page cut by the count or by the bytes may have more behind it (then the next turn finds out).
		const more = rows.length === STREAM_CATCH_UP_PAGE || rows.reduce((sum, r) => sum + historyRowChars(r), 0) >= room;
		const finished = !more && streamEnds(row.status);
		const reached = new Map<string, number>();
		const windowChanged = new Set<string>();
		const gone = new Set<string>();
		for (const { ws, sub, place } of ready) {
			const window = place.window;
			let last = place.cursor;
			let full = false;
			for (const { seq, text, bytes } of texts) {
				if (seq <= last) continue;
				if (!fits(window, bytes)) {
					full = true;
					break;
				}
				send(ws, text);
				last = seq;
				reached.set(sub, seq);
				const counted = recordSent(window, seq, bytes);
				if (counted.ask && window.asked) send(ws, ackRequest(window.asked));
				if (counted.store) windowChanged.add(sub);
			}
			if (full && !window.acks) {
				// It cannot say it read anything: dropped, with where to resume, before it costs more than its window.
				close(ws, STREAM_BEHIND_CLOSE, behindReason(last));
				gone.add(sub);
			} else if (full) {
				place.paced = true;
				if (askIfPaced(window, last) && window.asked) {
					send(ws, ackRequest(window.asked));
					windowChanged.add(sub);
				}
			} else if (finished) {
				send(ws, JSON.stringify({ kind: 'end', seq: last, status: row.status } satisfies StreamEvent));
				close(ws, STREAM_END_CLOSE, 'finished');
				gone.add(sub);
			}
		}
		for (const sub of gone) this.places.delete(sub);
		this.subscribers = sockets.length - gone.size;
		if (reached.size > 0 || windowChanged.size > 0) {
			// Written in the turn of the sends: the output gate lets them out once these are durable.
			const moved = advanceCursors(this.places, head, (sub) => reached.get(sub));
			const rewrite = new Set([...moved.rewrite.map((a) => a.sub), ...windowChanged]);
			const bySub = new Map(subscribers.map((s) => [s.sub, s.ws]));
			for (const sub of rewrite) {
				const place = this.places.get(sub);
				if (place) bySub.get(sub)?.serializeAttachment(attachmentOf(sub, place));
			}
			if (moved.head !== head) this.ctx.storage.kv.put(STREAM_HEAD_KEY, (this.head = moved.head));
		}
		// The next page on a later turn: the runtime sends this one first, and other work gets a turn.
		if (more && ready.some((s) => !s.place.paced && !gone.has(s.sub))) this.schedule();
	}

	/**
	 * A subscriber sent a message: an acknowledgement (`{"ack":<seq>,"token":<token>}`) frees its window, and a
	 * subscriber that was paced gets what it lacks on the next turn. Anything else is ignored (a
	 * `ping` is answered by the runtime without waking the object).
	 */
	message(ws: WebSocket, message: string | ArrayBuffer): void {
		const ack = parseAck(message);
		if (ack === undefined || !this.store()) return;
		const { sub, place } = this.placeOfSocket(ws, this.readHead());
		if (!acknowledged(place.window, ack)) return;
		ws.serializeAttachment(attachmentOf(sub, place));
		if (place.paced) {
			place.paced = false;
			this.schedule();
		}
	}

	private readHead(): number {
		return (this.head ??= this.ctx.storage.kv.get<number>(STREAM_HEAD_KEY) ?? 0);
	}

	/** A socket's subscriber and place: known in memory, or (after a wake) read from its attachment and the head. */
	private placeOfSocket(ws: WebSocket, head: number): { sub: string; place: FeedPlace } {
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
		if (!place) this.places.set(sub, (place = { ...placeOf(attachment as SubscriberAttachment, head), window: windowOf(attachment.w), paced: false }));
		return { sub, place };
	}
}

/** A subscriber as the feed keeps it: its place in the stream, its window, and whether it waits for an acknowledgement. */
type FeedPlace = SubscriberPlace & { window: StreamWindow; paced: boolean };

/** What a subscriber's socket keeps across hibernation: its name, its cursor when it is not at the head, its window. */
function attachmentOf(sub: string, place: FeedPlace): SubscriberAttachment {
	const w = storedWindow(place.window);
	return { sub, ...(place.attached ? { after: place.cursor } : {}), ...(Object.keys(w).length > 0 ? { w } : {}) };
}

/** A text's size as the runtime holds it (UTF-8), counted without encoding a copy of it. */
function utf8Bytes(text: string): number {
	let bytes = text.length;
	for (let i = 0; i < text.length; i++) {
		const unit = text.charCodeAt(i);
		// 2 bytes below U+0800, 3 above; a surrogate pair (2 units) is 4.
		if (unit >= 0x80) bytes += unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff) ? 1 : 2;
	}
	return bytes;
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
