import type { TypeSnapshot } from './metrics-families';

/** What an alert is about; each is one of the example alert rules of docs/operations.md "Metrics and alerts". */
export type AlertKind = 'index_backlog' | 'stuck' | 'failing_passes' | 'schedule_missed_ticks' | 'schedule_overdue';

/** One thing an on-call engineer should look at now (`GET /alerts`, the dashboard's overview). */
export interface Alert {
	type: string;
	kind: AlertKind;
	/** `stuck` only: the status the instances are stuck in. */
	status?: 'running' | 'waiting';
	/** How many instances (or, for a schedule, ticks) it is about. */
	count: number;
	/** One sentence, with the numbers. */
	message: string;
	/** Since when it holds, where known (ms since the epoch): the oldest undelivered entry, the first report of the worst failing instance. */
	since?: number;
	/** The query of `GET /workflows` (and the dashboard's list) that shows the instances, where the index can answer it (`updatedBefore` in ms since the epoch). */
	list?: { type: string; status: string; updatedBefore: number; order: 'updated'; group?: string };
	/** Instances to open first, where no list can find them (the index does not know they are behind or failing). */
	ids?: string[];
}

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;
const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;

/**
 * The alerts that hold at `now` for each type's snapshot, in the order an on-call engineer would
 * take them: runs that cannot move (failing passes, stuck), then what only lags (the index backlog),
 * then schedules. Each fires where the example rule in docs/operations.md would, without its `for:`.
 */
export function alertsOf(now: number, snapshots: readonly TypeSnapshot[], group?: string): Alert[] {
	const alerts: Alert[] = [];
	for (const snap of snapshots) {
		const { type, failing, backlog } = snap;
		if (failing.instances > 0) {
			const top = failing.worst[0]!;
			alerts.push({
				type,
				kind: 'failing_passes',
				count: failing.instances,
				message: `${plural(failing.instances, 'instance')} of ${type} failed ${failing.threshold} or more passes in a row (up to ${failing.mostInARow}): storage, an error outside the steps, or the isolate dying mid-pass; each retries from its alarm.`,
				since: top.since,
				ids: failing.worst.map((w) => w.id),
			});
		}
		for (const status of ['running', 'waiting'] as const) {
			const count = snap.stuck[status];
			const threshold = snap.stuckAfter[status];
			if (!count || threshold === null) continue;
			alerts.push({
				type,
				kind: 'stuck',
				status,
				count,
				message: `${plural(count, 'instance')} of ${type} ${count === 1 ? 'has' : 'have'} been ${status} for over ${seconds(threshold)} (stuckAfter) since ${count === 1 ? 'its' : 'their'} last status change.`,
				// Another group's instances are listed from its own index: the query names it.
				list: { type, status, updatedBefore: now - threshold, order: 'updated', ...(group !== undefined ? { group } : {}) },
			});
		}
		if (backlog.pending > 0) {
			alerts.push({
				type,
				kind: 'index_backlog',
				count: backlog.pending,
				message: `${plural(backlog.pending, 'instance')} of ${type} could not update the index, the oldest for ${seconds(Math.max(0, now - (backlog.oldestSince ?? now)))}: lists and counts lag until the deliveries succeed (reindex repairs one).`,
				...(backlog.oldestSince !== null ? { since: backlog.oldestSince } : {}),
				ids: backlog.oldest.map((o) => o.id),
			});
		}
		if (snap.schedule) {
			const missed = snap.schedule.missedLastDay;
			if (missed > 0) alerts.push({ type, kind: 'schedule_missed_ticks', count: missed, message: `The schedule of ${type} missed ${plural(missed, 'tick')} in the last day (due while its alarm could not fire).` });
			const next = snap.schedule.nextRunAt;
			if (next !== null && now - next > 300_000) {
				alerts.push({ type, kind: 'schedule_overdue', count: 1, message: `The schedule of ${type} is ${seconds(now - next)} past its next tick: a tick that cannot run.`, since: next });
			}
		}
	}
	return alerts;
}
