import { STREAM_SUBSCRIBER_WINDOW } from './stream-window';

/**
 * The most one Server-Sent Events response relays of an instance's stream (UTF-8 bytes of its
 * frames) before it ends with `event: behind` (docs/streams.md "Slow subscribers"): the same 1 MiB
 * as a WebSocket subscriber's window.
 *
 * Why a budget and not only the pull: the relay takes the next event only when the runtime asks
 * for more of the body, and the runtime asks whenever the connection accepts a write, that is
 * whenever the sockets' buffers between it and the client have room, not when the client read.
 * Under `wrangler dev` those buffers (the runtime's socket to wrangler's proxy, the proxy's socket
 * to the client, the kernel's on each side) took about 8 MB per client that never read, all of it
 * relayed through the isolate: 10 such clients grew `workerd` by 37 to 68 MiB
 * (test/tooling/stream-backpressure.test.ts). A Worker cannot see what the client read, so it
 * bounds what one response may hand to the body instead; a client that reads reconnects with
 * `Last-Event-ID` (as `EventSource` does by itself) and gets the rest, none missed, none twice.
 */
export const SSE_RESPONSE_BYTES = STREAM_SUBSCRIBER_WINDOW;

/** What one SSE response has handed to its body, and where it stands. */
export class SseBudget {
	#handed = 0;
	#last: number | undefined;

	constructor(readonly bytes: number = SSE_RESPONSE_BYTES) {}

	/**
	 * Counts a frame of `size` bytes for the record `seq` if it fits in what is left. The first
	 * record always fits (a response carries at least one, however large), and so does the
	 * stream's `end` (`final`): a few bytes that spare the client a reconnect only to read it.
	 */
	admit(seq: number, size: number, final = false): boolean {
		if (!final && this.#last !== undefined && this.#handed + size > this.bytes) return false;
		this.#handed += size;
		this.#last = seq;
		return true;
	}

	/** Counts bytes that carry no record (the `retry` line, a keep-alive comment). */
	spend(size: number): void {
		this.#handed += size;
	}

	/**
	 * The frame that ends a response past its budget: named `behind`, its `id` the last record
	 * relayed, which an `EventSource` sends back as `Last-Event-ID` when it reconnects.
	 */
	behind(): string {
		const seq = this.#last ?? 0;
		return `id: ${seq}\nevent: behind\ndata: ${JSON.stringify({ kind: 'behind', seq, bytes: this.bytes })}\n\n`;
	}
}
