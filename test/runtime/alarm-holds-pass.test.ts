import { runDurableObjectAlarm } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { api } from '../api/helpers';
import { advanceClock, resetClock, settle, stub, uniqueId } from '../helpers';

/**
 * Workers tracing closes an invocation's spans when the invocation ends: a pass the alarm woke but did
 * not wait for lost its spans' attributes and orphaned what it started later (docs/decisions.md
 * "An alarm waits for its pass"). These tests fire the alarm without settling afterwards.
 */
describe("an instance's alarm lasts as long as the work it woke", () => {
	it('returns only once the pass it woke has finished, a step of 80 ms and the next one included', async () => {
		const id = uniqueId('alarm-holds');
		try {
			expect((await api('POST', '/workflows', { type: 'slow-after-sleep', id, payload: { ms: 80 } })).status).toBe(201);
			await settle(id);
			expect((await api('GET', `/workflows/${id}`)).json.status).toBe('sleeping');
			advanceClock(3_600_000 + 1_000);
			expect(await runDurableObjectAlarm(stub(id))).toBe(true);
			// No settle: whatever the alarm woke is done by the time its handler returned.
			const after = (await api('GET', `/workflows/${id}`)).json;
			expect(after.status).toBe('completed');
			expect(after.output).toBe('done');
		} finally {
			resetClock();
		}
	});

	it('returns once the index has the outcome of the pass it woke (its delivery is part of the work)', async () => {
		const id = uniqueId('alarm-holds');
		try {
			expect((await api('POST', '/workflows', { type: 'slow-after-sleep', id, payload: { ms: 20 } })).status).toBe(201);
			await settle(id);
			advanceClock(3_600_000 + 1_000);
			expect(await runDurableObjectAlarm(stub(id))).toBe(true);
			const listed = (await api('GET', `/workflows?type=slow-after-sleep&status=completed&limit=100`)).json;
			expect(listed.items.map((item: { id: string }) => item.id)).toContain(id);
		} finally {
			resetClock();
		}
	});
});
