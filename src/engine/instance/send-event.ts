import { ErrorCode, IdempotencyKeyReusedError, InvalidStateError, ValidationError } from '../support/errors';
import { historyRow } from '../history/history';
import { assertJsonDepth, toStoredJson } from '../support/json';
import { MAX_EVENT_KEYS } from '../support/limits';
import { validateEventPayload } from '../definition/schema-validation';
import { FINISHED_STATUSES } from '../support/statuses';
import type { InstanceRow } from '../storage/store';
import { assertEventBufferRoom, eventDigest, type SendEventOptions } from './event-keys';
import { assertValidIdempotencyKey } from '../support/ids';
import type { InstanceKernel } from './kernel';
import { WATCHDOG_MS } from '../support/timing';

/**
 * An event sent to the instance: checked against its declaration, buffered with its
 * `event.received` record (once per idempotency key), and the replay loop woken to take it.
 */
export async function sendEvent(k: InstanceKernel, name: string, payloadInput: unknown, options: SendEventOptions = {}): Promise<void> {
	const key = options?.idempotencyKey;
	if (key !== undefined) assertValidIdempotencyKey(key);
	const row = k.require();
	// A keyed send may be the retry of one accepted before the instance finished: answer it below.
	if (key === undefined) assertAcceptsEvents(row);
	const { workflow } = k.entryOf(row);
	const events = workflow.events ?? {};
	if (typeof name !== 'string' || !Object.hasOwn(events, name)) {
		const declared = Object.keys(events);
		throw new ValidationError(
			ErrorCode.UnknownEvent,
			`workflow type "${row.type}" does not declare event ${JSON.stringify(name)}${declared.length ? `; declared events: ${declared.join(', ')}` : ' (it declares no events)'}`,
		);
	}
	assertJsonDepth(payloadInput, `payload of event "${name}"`);
	const payload = await validateEventPayload(events[name], payloadInput, name, ErrorCode.InvalidEventPayload);
	const json = toStoredJson(payload, `payload of event "${name}"`);
	const digest = key === undefined ? undefined : await eventDigest(name, json);
	// No await from here on: the key check, the limits and the append are one step, so
	// concurrent retries of one key buffer it once.
	const current = k.require();
	if (key !== undefined) {
		const seen = k.host.store.readEventKey(key);
		if (seen) {
			if (seen.digest === digest) return;
			throw new IdempotencyKeyReusedError(
				`idempotency key ${JSON.stringify(key)} was already used for ${seen.name === name ? `event "${name}" with another payload` : `event "${seen.name}"`}; use a new key for a new event`,
			);
		}
	}
	assertAcceptsEvents(current);
	assertEventBufferRoom(k.host.store, name, json, current.id);
	const now = k.host.now();
	k.host.store.transaction(() => {
		k.host.store.appendEvent(name, json, now);
		k.host.store.appendHistory(historyRow({ kind: 'event.received', value: json, detail: { event: name } }, current.generation, now));
		if (key !== undefined) k.host.store.writeEventKey({ key, name, digest: digest! }, now, MAX_EVENT_KEYS);
	});
	if (current.status === 'paused' || current.status === 'diverged') return;
	// If the process dies before the pass that consumes the event, the alarm finds it buffered.
	k.host.ensureAlarmBy(now + WATCHDOG_MS);
	k.replay.kick();
}

function assertAcceptsEvents(row: InstanceRow): void {
	if (FINISHED_STATUSES.includes(row.status)) {
		throw new InvalidStateError(`workflow "${row.id}" is ${row.status} and accepts no more events`);
	}
}
