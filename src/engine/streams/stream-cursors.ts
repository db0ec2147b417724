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
}

/** A subscriber's place when the object wakes with its socket: its own cursor, or the head. */
export function placeOf(attachment: SubscriberAttachment, head: number): SubscriberPlace {
	return attachment.after !== undefined ? { cursor: attachment.after, attached: true } : { cursor: head, attached: false };
}

/**
 * Moves every subscriber past a page of records that ends at `pageEnd` (each was sent what it
 * lacked of the page), and answers the new head and the attachments to rewrite: a subscriber
 * that reaches the head lets go of its own cursor (once), one that is not at the head carries
 * its new cursor. The places are updated in place.
 */
export function advanceCursors(places: Iterable<[string, SubscriberPlace]>, head: number, pageEnd: number): { head: number; rewrite: SubscriberAttachment[] } {
	const next = Math.max(head, pageEnd);
	const rewrite: SubscriberAttachment[] = [];
	for (const [sub, place] of places) {
		const moved = place.cursor < pageEnd;
		if (moved) place.cursor = pageEnd;
		const attached = place.cursor !== next;
		if (attached !== place.attached || (attached && moved)) rewrite.push(attached ? { sub, after: place.cursor } : { sub });
		place.attached = attached;
	}
	return { head: next, rewrite };
}
