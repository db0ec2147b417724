import { parseDuration } from '../../src/engine/support/duration';
import { DEFAULT_RETENTION } from '../../src/engine/definition/registry';
import { runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { MAX_ERROR_MESSAGE_CHARS } from '../../src/engine/support/thrown-value';
import { shardName } from '../../src/engine/object-names';
import { slotEnd } from '../../src/engine/lifecycle/retention-sweep';
import { WATCHDOG_MS } from '../../src/engine/support/timing';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId } from '../helpers';

afterEach(resetClock);

describe('values thrown that SQLite could not store as they are', () => {
	it.for([
		['bigint', false],
		['cyclic', false],
		['huge', false],
		['bigint', true],
		['huge', true],
	] as const)('a %s thrown (from a step: %s) ends the instance errored, with no alarm left but its retention', async ([kind, inStep]) => {
		const id = uniqueId(`throws-${kind}`);
		await instances.create(testEnv, { type: 'throws', id, payload: { kind, inStep } });
		await settle(id);
		if (inStep) {
			advanceClock(1_000);
			await fireAlarm(id);
		}
		const status = await instances.status(testEnv, { id });
		expect(status.status).toBe('errored');
		expect(status.error!.message.length).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_CHARS);
		if (inStep) expect(status.steps[0]).toMatchObject({ name: 'bad', status: 'failed', attempts: 2 });
		// Once the index update is delivered, nothing is left but its retention running out, which its index shard
		// notices (its alarm by the retention's slot); the instance keeps at most the watchdog it had, to fire once.
		await settle(id);
		const alarm = await runInDurableObject(stub(id), (_object, state) => state.storage.getAlarm());
		if (alarm !== null) expect(alarm).toBeLessThanOrEqual(status.updatedAt + WATCHDOG_MS);
		const expires = status.updatedAt + parseDuration(DEFAULT_RETENTION.errored);
		const shardAlarm = await runInDurableObject(stub(shardName('throws', 0)), (_object, state) => state.storage.getAlarm());
		expect(shardAlarm).toBe(slotEnd(expires, parseDuration(DEFAULT_RETENTION.errored)));
	});
});
