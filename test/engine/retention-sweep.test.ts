import { describe, expect, it } from 'vitest';
import { expiresAt, nextExpiry, nextShardAlarm, retentionSlotMs, slotEnd, sweepRetryMs } from '../../src/engine/lifecycle/retention-sweep';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const retention = { completed: 7 * DAY, errored: 90 * DAY, terminated: null, archive: true };

describe('the index shard retention sweep times', () => {
	it('expires within a tenth of the retention, at most an hour late: every run of a slot shares one shard alarm', () => {
		expect(retentionSlotMs(7 * DAY)).toBe(HOUR);
		expect(retentionSlotMs(HOUR)).toBe(HOUR / 10);
		expect(retentionSlotMs(1_000)).toBe(1_000);
		// Runs finishing across most of an hour fall in one slot: the same alarm time.
		const base = Math.ceil(1_796_000_000_000 / HOUR) * HOUR;
		expect(slotEnd(base + 1, 7 * DAY)).toBe(base + HOUR);
		expect(slotEnd(base + HOUR - 1, 7 * DAY)).toBe(base + HOUR);
		expect(slotEnd(base, 7 * DAY)).toBe(base);
		// Never before the retention ran out.
		for (const at of [base + 1, base + 12_345, base + HOUR - 1]) expect(slotEnd(at, 7 * DAY)).toBeGreaterThanOrEqual(at);
	});

	it('keeps each finished status its own time, and a status kept forever (or a status not finished) never', () => {
		expect(expiresAt(retention, 'completed', 10)).toBe(10 + 7 * DAY);
		expect(expiresAt(retention, 'errored', 10)).toBe(10 + 90 * DAY);
		expect(expiresAt(retention, 'terminated', 10)).toBeUndefined();
		expect(expiresAt(retention, 'running', 10)).toBeUndefined();
		expect(expiresAt(retention, '__deleted', 10)).toBeUndefined();
	});

	it('arms for the earliest slot among the oldest entry of each status', () => {
		expect(nextExpiry(retention, {})).toBeUndefined();
		expect(nextExpiry(retention, { terminated: 5 })).toBeUndefined();
		expect(nextExpiry(retention, { completed: 0, errored: 0 })).toBe(7 * DAY);
		expect(nextExpiry(retention, { completed: 100 * DAY, errored: 0 })).toBe(90 * DAY);
	});

	it('sets the one shard alarm for the earliest of its duties, never in the past', () => {
		expect(nextShardAlarm(100, [])).toBeUndefined();
		expect(nextShardAlarm(100, [undefined, undefined])).toBeUndefined();
		expect(nextShardAlarm(100, [500, undefined, 300])).toBe(300);
		expect(nextShardAlarm(100, [50, 500])).toBe(100);
		expect(sweepRetryMs(7 * DAY)).toBe(HOUR);
		expect(sweepRetryMs(1_000)).toBe(60_000);
	});
});
