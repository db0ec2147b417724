import { runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { failingSummary } from '../../src/client/reconcile';
import { api } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId } from '../helpers';
import { testClock } from '../worker/test-clock';

afterEach(resetClock);

/** Makes the instance's storage refuse to write a step (as SQLite can: a full disk), or write again. */
async function breakSteps(id: string, broken: boolean): Promise<void> {
	await runInDurableObject(stub(id), (instance) => {
		const store = (instance as unknown as { role: { store: Record<string, unknown> } }).role.store;
		for (const method of ['writeStep', 'writeStepWithRecord', 'insertStep']) {
			const kept = `__${method}`;
			store[kept] ??= (store[method] as () => unknown).bind(store);
			store[method] = broken
				? () => {
						throw new Error('SQLITE_FULL: database or disk is full');
					}
				: store[kept];
		}
	});
}

describe('an instance whose passes keep failing, in workerd', () => {
	it("reports itself to its type's backlog object from the third failed pass in a row, and withdraws once a pass ends", async () => {
		const id = uniqueId('failing-e2e');
		await api('POST', '/workflows', { type: 'inbox', id, payload: { expect: 1 } });
		await settle(id);
		const failing = () => failingSummary(testEnv as never, 'inbox', testClock.now());
		const before = (await failing()).instances;

		await breakSteps(id, true);
		await api('POST', `/workflows/${id}/events/msg`, { n: 1 }); // the event's pass fails: 1
		await settle(id);
		expect((await failing()).instances).toBe(before); // one or two failures are no report
		for (let pass = 2; pass <= 3; pass++) {
			advanceClock(10 * 60_000); // past the backoff (1 s doubling)
			await fireAlarm(id);
		}
		const reported = await failing();
		expect(reported.instances).toBe(before + 1);
		expect(reported.worst.find((w) => w.id === id)).toMatchObject({ cause: 'failed', count: 3 });

		await breakSteps(id, false);
		advanceClock(10 * 60_000);
		await fireAlarm(id);
		expect((await api('GET', `/workflows/${id}`)).json.status).toBe('completed');
		expect((await failing()).worst.find((w) => w.id === id)).toBeUndefined();
	});
});
