import type { StoredWindow } from './stream-window';

/**
 * Where each subscriber of an instance's stream stands, kept so that following a stream costs no
 * storage write per subscriber and message (runtime/roles/instance-stream-feed.ts).
 *
 * A cursor is the seq of the last record a subscriber was sent. Subscribers in step with the
 * stream all share one cursor, the *head*, kept once per instance (one write per flush however
 * many subscribe); only a subscriber that is not at the head (catching up page by page, or
 * started ahead of it) carries its own cursor in its socket's attachment, rewritten at most once
 * per page it is sent. Both survive hibernation: the attachment with the socket, the head in the
 * object's storage, written in the same turn as the sends (the output gate releases the sends only
 * once the write is durable), so a woken object knows every socket's place without a gap or a
 * duplicate.
 */

/** A subscriber as the feed keeps it in memory. */
export interface SubscriberPlace {
	/** The seq of the last record it was sent (or that it asked to start after). */
	cursor: number;
	/** Its socket's attachment carries `cursor` (true), or leaves it to the head (false). */
	attached: boolean;
}

/** What a socket's attachment holds: who it is, and its cursor when it is not at the head. */
export interface SubscriberAttachment {
	sub: string;
	after?: number;
	/** Its window (engine/streams/stream-window.ts), when it has anything to keep. */
	w?: StoredWindow;
}

/** A subscriber's place when the object wakes with its socket: its own cursor, or the head. */
export function placeOf(attachment: SubscriberAttachment, head: number): SubscriberPlace {
	return attachment.after !== undefined ? { cursor: attachment.after, attached: true } : { cursor: head, attached: false };
}

/**
 * Moves every subscriber to the last record it was sent of a page (`reached(sub)`; undefined: it
 * was sent none of it, say its window was full), and answers the new head and the attachments to
 * rewrite: a subscriber that reaches the head lets go of its own cursor (once), one that is not at
 * the head carries its new cursor. The places are updated in place.
 */
export function advanceCursors(places: Iterable<[string, SubscriberPlace]>, head: number, reached: (sub: string) => number | undefined): { head: number; rewrite: SubscriberAttachment[] } {
	const entries = [...places];
	let next = head;
	for (const [sub] of entries) next = Math.max(next, reached(sub) ?? next);
	const rewrite: SubscriberAttachment[] = [];
	for (const [sub, place] of entries) {
		const to = reached(sub);
		const moved = to !== undefined && place.cursor < to;
		if (moved) place.cursor = to;
		const attached = place.cursor !== next;
		if (attached !== place.attached || (attached && moved)) rewrite.push(attached ? { sub, after: place.cursor } : { sub });
		place.attached = attached;
	}
	return { head: next, rewrite };
}
