import { describe, expect, it } from 'vitest';
import { MAX_MISSED_ENTRIES, MISSED_STRETCH_MS, MISSED_WINDOW_MS, missedInLastDay, recordMissed, type MissedTicksLog } from '../../src/engine/schedule/missed-ticks-log';

const T0 = Date.UTC(2026, 0, 1);
const MIN = 60_000;

describe('missed-ticks log', () => {
	it('merges the reports of a schedule that keeps missing ticks into one entry per 15 minutes, so a day stays small', () => {
		let log: MissedTicksLog = [];
		// A per-minute cron that misses every other tick for a whole day.
		for (let at = T0; at < T0 + MISSED_WINDOW_MS; at += 2 * MIN) log = recordMissed(log, at, 1);
		// A stretch starts at its first report (every 16 minutes here): 90 entries, where one per report would be 720.
		expect(log.length).toBe(90);
		expect(log.length).toBeLessThanOrEqual(MAX_MISSED_ENTRIES);
		expect(log.every(([from, to]) => to - from < MISSED_STRETCH_MS)).toBe(true);
		expect(missedInLastDay(log, T0 + MISSED_WINDOW_MS - 1)).toBe(720);
	});

	it('counts a report for a day after it, never less, and drops it from the log on the next report after that', () => {
		let log = recordMissed([], T0, 3);
		log = recordMissed(log, T0 + 10 * MIN, 2); // the same stretch: counted until a day after this one
		expect(missedInLastDay(log, T0 + MISSED_WINDOW_MS + 5 * MIN)).toBe(5);
		expect(missedInLastDay(log, T0 + MISSED_WINDOW_MS + 10 * MIN + 1)).toBe(0);
		log = recordMissed(log, T0 + 2 * MISSED_WINDOW_MS, 1);
		expect(log).toEqual([[T0 + 2 * MISSED_WINDOW_MS, T0 + 2 * MISSED_WINDOW_MS, 1]]);
	});

	it('keeps the newest entries when a clock stepped back would make more than a day of them', () => {
		let log: MissedTicksLog = [];
		for (let n = 0; n < 2 * MAX_MISSED_ENTRIES; n++) log = recordMissed(log, T0 - n * MIN, 1);
		expect(log.length).toBe(MAX_MISSED_ENTRIES);
		expect(log.at(-1)![0]).toBe(T0 - (2 * MAX_MISSED_ENTRIES - 1) * MIN);
	});
});
