import { ErrorCode, EventBufferFullError, ValidationError } from '../support/errors';
import { canonicalJson, utf8Bytes } from '../support/json';
import { MAX_BUFFERED_EVENT_BYTES, MAX_BUFFERED_EVENTS } from '../support/limits';
import type { InstanceStore } from '../storage/store';

/** Options of one event send. */
export interface SendEventOptions {
	/**
	 * Makes retries of this send safe: the same key for the same instance is
	 * accepted once, and answered the same way again (even after the event was
	 * consumed). 1-255 visible ASCII characters. The same key with another event
	 * name or payload is refused with IDEMPOTENCY_KEY_REUSED.
	 */
	idempotencyKey?: string;
}

/** What a key is compared on: SHA-256 of the event name and its canonical JSON payload. */
export async function eventDigest(name: string, json: string | null): Promise<string> {
	const bytes = new TextEncoder().encode(`${name}\n${canonicalJson(json) ?? ''}`);
	const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
	return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Refuses an event its name's buffer has no room for. The limits hold per
 * event name, so a flood of an event nobody waits for can never block the
 * event the instance does wait for (which its wait consumes as it arrives).
 * The instance's total stays bounded: declared names times the limits.
 */
export function assertEventBufferRoom(store: InstanceStore, name: string, json: string | null, workflowId: string): void {
	const { count, bytes } = store.eventBuffer(name);
	const adding = utf8Bytes(json);
	if (count + 1 > MAX_BUFFERED_EVENTS || bytes + adding > MAX_BUFFERED_EVENT_BYTES) {
		throw new EventBufferFullError(
			`workflow "${workflowId}" already buffers ${count} unconsumed "${name}" event(s) of ${bytes} bytes; the limit is ${MAX_BUFFERED_EVENTS} events and ${MAX_BUFFERED_EVENT_BYTES} bytes per event name. Events wait here until the workflow reaches a waitForEvent for them; retry later`,
		);
	}
}
