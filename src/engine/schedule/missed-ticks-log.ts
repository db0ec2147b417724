/**
 * What a schedule missed in the last day, kept apart from its run records: those are the
 * newest 50 runs and `GET /schedules` shows 10, which a per-minute cron replaces in minutes,
 * so a count read from them would clear a missed-tick alert long before the day it promises.
 *
 * One entry per 15-minute stretch in which a tick found ticks missed: `[from, to, missed]`,
 * the first and last such tick's handling time and the ticks missed in between. Written only by
 * a tick that found ticks missed (a healthy schedule writes nothing), so a stretch merges the
 * reports of a flapping schedule: a day holds at most 97 entries, whatever the cron. An entry
 * counts until a day after its last report, so a report is counted for at least a day and at
 * most a day and 15 minutes: an alert on it never clears early.
 */
export type MissedOutage = readonly [from: number, to: number, missed: number];
export type MissedTicksLog = readonly MissedOutage[];

/** How long a missed tick is counted: the `window="1d"` of `shardflow_schedule_missed_ticks`. */
export const MISSED_WINDOW_MS = 86_400_000;
/** Reports within this long of an entry's first one merge into it. */
export const MISSED_STRETCH_MS = 15 * 60_000;
/** A day of stretches, and one more; past it (a clock stepped back) the oldest entries go. */
export const MAX_MISSED_ENTRIES = MISSED_WINDOW_MS / MISSED_STRETCH_MS + 1;

/** The log with `missed` ticks found at `at` added, and entries older than the window dropped. */
export function recordMissed(log: MissedTicksLog, at: number, missed: number): MissedTicksLog {
	const kept = log.filter(([, to]) => to >= at - MISSED_WINDOW_MS);
	const last = kept.at(-1);
	if (last && at >= last[0] && at - last[0] < MISSED_STRETCH_MS) {
		return [...kept.slice(0, -1), [last[0], Math.max(last[1], at), last[2] + missed]];
	}
	return [...kept, [at, at, missed] as const].slice(-MAX_MISSED_ENTRIES);
}

/** Ticks missed in the day ending at `now`. */
export function missedInLastDay(log: MissedTicksLog, now: number): number {
	return log.filter(([, to]) => to >= now - MISSED_WINDOW_MS).reduce((sum, [, , missed]) => sum + missed, 0);
}
