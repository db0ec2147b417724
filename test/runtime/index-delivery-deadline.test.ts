import { afterEach, describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { OUTBOX_GRACE_MS } from '../../src/engine/support/timing';
import { api } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, testEnv, uniqueId } from '../helpers';
import { indexDeliveries } from '../worker/probes';

afterEach(() => resetClock());

/** The run's entry as a listing of its type shows it, or undefined while the index has none. */
async function listed(id: string): Promise<{ status: string; updatedAt: number | string } | undefined> {
	const { json } = await api('GET', `/workflows?type=retries-every-second&idPrefix=${id}&limit=10`);
	return (json.items as { id: string; status: string; updatedAt: number | string }[]).find((item) => item.id === id);
}

/** A time as the API or the client answers it (milliseconds, or ISO 8601). */
const ms = (at: number | string): number => (typeof at === 'number' ? at : Date.parse(at));

describe('the index of a run whose status changes every second (docs/operations.md "Consistency bound")', () => {
	it('lists a run retrying every second by 10 s after its create, and keeps it within 10 s of its status after that, with about one delivery per 10 s', async () => {
		const id = uniqueId('every-second');
		await instances.create(testEnv, { type: 'retries-every-second', id, payload: { failures: 60 } });
		await settle(id);
		expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
		// Its first retry is 1 s away, before the entry is due: not listed yet (main listed it at once, and again every second).
		expect(await listed(id)).toBeUndefined();
		let firstListedAfter: number | undefined;
		let waited = 0;
		for (let second = 1; second <= 40; second++) {
			advanceClock(1_000);
			waited += 1_000;
			await fireAlarm(id);
			const entry = await listed(id);
			if (entry && firstListedAfter === undefined) firstListedAfter = waited;
			if (entry) {
				// Once listed, the entry is never older than the bound: its last update within 10 s (and a retry) of now.
				const status = await instances.status(testEnv, { id });
				expect(status.status).toBe('sleeping');
				expect(ms(status.updatedAt) - ms(entry.updatedAt)).toBeLessThanOrEqual(OUTBOX_GRACE_MS + 1_000);
			}
		}
		expect(firstListedAfter).toBeDefined();
		expect(firstListedAfter!).toBeLessThanOrEqual(OUTBOX_GRACE_MS);
		// 40 retries: about one delivery per 10 s, each of 1 row (the same status), not 40.
		expect((indexDeliveries.get(id) ?? []).length).toBeLessThanOrEqual(Math.ceil(40_000 / OUTBOX_GRACE_MS) + 1);
	});
});
