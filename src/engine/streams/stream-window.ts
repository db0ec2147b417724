/**
 * How much of an instance's stream one subscriber may have been sent and not yet taken: its
 * window (runtime/roles/instance-stream-feed.ts, docs/streams.md "Slow subscribers").
 *
 * Workers give a WebSocket's sender no backpressure: `send()` queues in the runtime whether or
 * not the other side reads (workerd has no `bufferedAmount` and no drain event), so a
 * subscriber that never reads would make the runtime hold every record it is sent, the whole
 * stream. The feed therefore counts, per subscriber, the bytes it sent that the subscriber has
 * not acknowledged, and never lets them pass `STREAM_SUBSCRIBER_WINDOW`:
 *
 * - A subscriber that acknowledges (it opened the stream with `ack=1`: the client iterator and
 *   the SSE relay do) is asked for an acknowledgement once half its window is in flight: the
 *   feed sends `{"kind":"ack","seq":S,"token":T}` after the record `S`, and the subscriber answers
 *   `{"ack":S,"token":T}` once its consumer has taken every record up to that request. `T` is
 *   random, so only a subscriber that read the request can answer it: seqs are predictable, and
 *   a subscriber that answered every seq unread would free its window without reading (found
 *   from outside). The answer frees
 *   the bytes sent before the request. When the window is full the feed waits for it: a slow
 *   reader is paced, never dropped, and one that never reads costs at most the window.
 * - A subscriber that does not acknowledge (a WebSocket opened without `ack=1`, as before) has
 *   no way to say it read anything: when its next record would pass the window it is closed with
 *   `STREAM_BEHIND_CLOSE` and the seq to resume after, and reconnects with `after=<seq>`.
 *
 * What the feed knows of a window survives hibernation in the socket's attachment, written
 * only when the count passes what the attachment already allows (once per eighth of the window
 * sent), at a request and at an answer, never once per record: after a wake the feed assumes the
 * attachment's bound, never less than the truth, so waking never lets more than the window out.
 */

/** Bytes (UTF-8) of records one subscriber may have been sent and not acknowledged (its largest window, and the default). */
export const STREAM_SUBSCRIBER_WINDOW = 1024 * 1024;
/**
 * The smallest window a subscriber that acknowledges may ask for (`window=<bytes>`). The SSE relay
 * asks for a small one: what it was sent and its client did not take waits in the relaying
 * isolate, once per concurrent relay (found from outside: 1,500 SSE catch-ups opened at once held
 * 1.5 GB there, 1 MiB each).
 */
export const STREAM_MIN_WINDOW = 16 * 1024;
/** WebSocket close code of a subscriber that does not acknowledge and fell a window behind; the reason says `after=<seq>` to resume from. */
export const STREAM_BEHIND_CLOSE = 4008;
/** The step by which the stored bound of a window grows (its attachment is rewritten at most once per this many bytes sent). */
const BOUND_STEP = STREAM_SUBSCRIBER_WINDOW / 8;

/** A subscriber's window as the feed keeps it in memory. */
export interface StreamWindow {
	/** It acknowledges (opened with `ack=1`): paced when its window is full, not closed. */
	acks: boolean;
	/** Bytes sent and not acknowledged (after a wake: the stored bound, at least the truth). */
	unacked: number;
	/** The bound stored with the socket (`unacked` never passes it without a rewrite). */
	bound: number;
	/** The acknowledgement asked for and not yet answered: after record `seq`, covering `bytes` of `unacked`; the answer must echo `token`. */
	asked?: { seq: number; bytes: number; token: string };
	/** Its size in bytes (`STREAM_SUBSCRIBER_WINDOW` unless the subscriber asked for less). */
	size: number;
}

/** What a socket's attachment keeps of its window (short names: an attachment holds at most 2 KiB). */
export interface StoredWindow {
	/** 1: the subscriber acknowledges. */
	k?: 1;
	/** The bound of its unacknowledged bytes. */
	u?: number;
	/** The seq, bytes and token of the acknowledgement asked for. */
	q?: [number, number, string];
	/** Its size, when smaller than `STREAM_SUBSCRIBER_WINDOW`. */
	s?: number;
}

/** A new subscriber's window, of `size` bytes if it acknowledges and asked for one (kept within `STREAM_MIN_WINDOW`..`STREAM_SUBSCRIBER_WINDOW`). */
export function openWindow(acks: boolean, size?: number): StreamWindow {
	return { acks, unacked: 0, bound: 0, size: acks && size !== undefined ? windowSize(size) : STREAM_SUBSCRIBER_WINDOW };
}

/** A window size asked for, kept within the allowed range. */
function windowSize(size: number): number {
	return Number.isFinite(size) ? Math.min(STREAM_SUBSCRIBER_WINDOW, Math.max(STREAM_MIN_WINDOW, Math.floor(size))) : STREAM_SUBSCRIBER_WINDOW;
}

/** A subscriber's `window=<bytes>` query parameter: undefined when absent; refused when not a whole number. */
export function parseWindowParam(given: string | null): number | undefined {
	if (given === null) return undefined;
	if (!/^\d{1,9}$/.test(given)) throw new Error(`window must be a whole number of bytes (${STREAM_MIN_WINDOW} to ${STREAM_SUBSCRIBER_WINDOW}), got ${JSON.stringify(given.slice(0, 20))}`);
	return Number(given);
}

/** A woken socket's window, from its attachment: as many bytes in flight as it may have had. */
export function windowOf(stored: StoredWindow | undefined): StreamWindow {
	const unacked = stored?.u ?? 0;
	return { acks: stored?.k === 1, unacked, bound: unacked, size: stored?.s === undefined ? STREAM_SUBSCRIBER_WINDOW : windowSize(stored.s), ...(stored?.q ? { asked: { seq: stored.q[0], bytes: stored.q[1], token: String(stored.q[2] ?? '') } } : {}) };
}

/** The window as its attachment keeps it. */
export function storedWindow(window: StreamWindow): StoredWindow {
	return {
		...(window.acks ? { k: 1 as const } : {}),
		...(window.bound > 0 ? { u: window.bound } : {}),
		...(window.asked ? { q: [window.asked.seq, window.asked.bytes, window.asked.token] as [number, number, string] } : {}),
		...(window.size < STREAM_SUBSCRIBER_WINDOW ? { s: window.size } : {}),
	};
}

/**
 * Whether a record of `bytes` may be sent now without passing the window. A record larger than the
 * whole window goes alone, when nothing else is in flight: else it could never be sent.
 */
export function fits(window: StreamWindow, bytes: number): boolean {
	return window.unacked === 0 || window.unacked + bytes <= window.size;
}

/**
 * Counts a record of `bytes` (seq `seq`) sent. Answers whether to ask for an acknowledgement
 * after it (half the window is in flight and none is asked for) and whether the attachment must
 * be rewritten (the count passed its stored bound, or a request was made).
 */
export function recordSent(window: StreamWindow, seq: number, bytes: number): { ask: boolean; store: boolean } {
	window.unacked += bytes;
	let store = false;
	if (window.unacked > window.bound) {
		window.bound = Math.max(window.unacked, Math.min(window.size, window.unacked + BOUND_STEP));
		store = true;
	}
	const ask = window.acks && !window.asked && window.unacked >= window.size / 2;
	if (ask) window.asked = { seq, bytes: window.unacked, token: newToken() };
	return { ask, store: store || ask };
}

/**
 * Asks now, whatever is in flight: a subscriber that acknowledges and is paced must always have a
 * request out (else nothing would ever free its window). Answers whether a request was made.
 */
export function askIfPaced(window: StreamWindow, seq: number): boolean {
	if (!window.acks || window.asked || window.unacked === 0) return false;
	window.asked = { seq, bytes: window.unacked, token: newToken() };
	return true;
}

/**
 * An acknowledgement came: `{"ack":seq,"token":token}`. Only the answer to the request in flight
 * counts, with its token (an old, a made-up or a guessed one frees nothing). Answers whether it
 * freed bytes (the attachment is then rewritten, and a paced subscriber may get more).
 */
export function acknowledged(window: StreamWindow, ack: Acknowledgement): boolean {
	if (!window.asked || window.asked.seq !== ack.seq || !window.asked.token || window.asked.token !== ack.token) return false;
	window.unacked = Math.max(0, window.unacked - window.asked.bytes);
	window.bound = window.unacked;
	delete window.asked;
	return true;
}

/** A subscriber's answer to a request for an acknowledgement. */
export interface Acknowledgement {
	seq: number;
	token: string;
}

/** The request a subscriber that acknowledges is sent (a text message of its own, not a record). */
export function ackRequest(asked: { seq: number; token: string }): string {
	return JSON.stringify({ kind: 'ack', seq: asked.seq, token: asked.token });
}

/** A subscriber's acknowledgement (`{"ack":<seq>,"token":"<token>"}`), or undefined for any other message. */
export function parseAck(message: unknown): Acknowledgement | undefined {
	if (typeof message !== 'string' || message.length > 96) return undefined;
	try {
		const parsed = JSON.parse(message) as { ack?: unknown; token?: unknown };
		if (typeof parsed?.ack !== 'number' || !Number.isSafeInteger(parsed.ack) || parsed.ack < 0 || typeof parsed.token !== 'string') return undefined;
		return { seq: parsed.ack, token: parsed.token };
	} catch {
		return undefined;
	}
}

/** A request's token: 64 random bits, which a subscriber that did not read the request cannot guess. */
function newToken(): string {
	const bytes = crypto.getRandomValues(new Uint8Array(8));
	return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The close reason of a subscriber a window behind: where to resume (`after=<seq>`). */
export function behindReason(cursor: number): string {
	return `behind by ${STREAM_SUBSCRIBER_WINDOW} bytes unacknowledged; resume with after=${cursor}`;
}
