import { STREAM_MIN_WINDOW } from '../engine/streams/stream-window';

/**
 * How many Server-Sent Events relays of instance streams one isolate holds open at once, and the
 * window each asks its instance for.
 *
 * A relay subscribes to its instance like any client (client/instance-stream.ts), and what the
 * instance sent it that its HTTP client has not taken waits in this isolate, up to the window the
 * relay asked for. Found from outside: 1,500 SSE catch-ups opened at once on one large stream held
 * 1 MiB each here (the default window) and ran `wrangler dev`'s isolate out of heap at 1.4 GB; in
 * production 120 would pass an isolate's 128 MB. So a relay asks for a small window, and an isolate
 * relays at most `SSE_RELAYS_PER_ISOLATE` at once: at most 200 x 64 KiB = 12.5 MiB of records
 * waiting, whatever the clients do. A request past the cap is answered with `event: busy` and a
 * `retry` of `SSE_BUSY_RETRY_MS`: an `EventSource` comes back then by itself, with its
 * `Last-Event-ID` (the busy answer carries no `id`, so the one it had stays).
 */
export const SSE_RELAYS_PER_ISOLATE = 200;
/**
 * At most this many of them for one client address (`cf-connecting-ip`): found from outside, 200
 * relays of a quiet stream held by one client (a keep-alive every 20 s, never reaching the budget)
 * turned every other SSE client of the isolate away for as long as it held them. One address takes
 * at most a quarter. A request without an address came from inside the account (a service binding)
 * or from `wrangler dev` (api/failed-credentials.ts says why): only the isolate's cap applies to it.
 */
export const SSE_RELAYS_PER_ADDRESS = 50;
/** The window (bytes) a relay asks its instance for: 4 times the smallest, a sixteenth of the default. */
export const SSE_RELAY_WINDOW = 4 * STREAM_MIN_WINDOW;
/** What a client turned away as busy waits before it comes back. */
export const SSE_BUSY_RETRY_MS = 5_000;

let open = 0;
const byAddress = new Map<string, number>();

/**
 * Takes a relay's place in this isolate for a client at `address`; undefined when every place is
 * taken, or the address holds its share. The returned release is idempotent.
 */
export function takeRelayPlace(address = '', limit = SSE_RELAYS_PER_ISOLATE, perAddress = SSE_RELAYS_PER_ADDRESS): (() => void) | undefined {
	const held = byAddress.get(address) ?? 0;
	if (open >= limit || (address !== '' && held >= perAddress)) return undefined;
	open++;
	byAddress.set(address, held + 1);
	let released = false;
	return () => {
		if (released) return;
		released = true;
		open--;
		const left = (byAddress.get(address) ?? 1) - 1;
		if (left > 0) byAddress.set(address, left);
		else byAddress.delete(address);
	};
}

/** The relays this isolate holds open now. */
export function openRelays(): number {
	return open;
}

/** The whole answer to a stream request past the cap: come back in `SSE_BUSY_RETRY_MS`, from where you stood. */
export function busyAnswer(): string {
	return `retry: ${SSE_BUSY_RETRY_MS}\n\nevent: busy\ndata: ${JSON.stringify({ kind: 'busy', retryMs: SSE_BUSY_RETRY_MS, relays: SSE_RELAYS_PER_ISOLATE })}\n\n`;
}
