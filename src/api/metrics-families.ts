import { mergeHistograms, summarizeMetrics, type ShardMetrics } from '../engine/index/run-metrics';
import type { BacklogSummary } from '../engine/index/index-backlog';
import { FAILING_PASSES_THRESHOLD, type FailingSummary } from '../engine/instance/failing-passes';
import type { ResolvedStuckAfter } from '../engine/index/stuck-after';
import type { ScheduleInfo } from '../engine/schedule/schedule-engine';
import type { MetricFamily, Sample } from './prometheus-text';

/** What `GET /metrics` gathered about one type. */
export interface TypeSnapshot {
	type: string;
	shards: ShardMetrics[];
	backlog: BacklogSummary;
	/** Instances whose last passes failed (or were cut short) in a row (engine/instance/failing-passes.ts). */
	failing: FailingSummary;
	stuckAfter: ResolvedStuckAfter;
	/** Instances `running`/`waiting` past the threshold, counted up to `cap` (null: the check is off). */
	stuck: { running: number | null; waiting: number | null };
	/** The type's schedule, when it declares one. */
	schedule?: ScheduleInfo;
}

/** How many stuck instances one scrape counts per type and status; the gauge says `cap` when there are more. */
export const STUCK_COUNT_CAP = 1000;

const OUTCOMES = ['started', 'completed', 'errored', 'terminated'] as const;
/**
 * Upper bounds of the duration buckets: every power of two of milliseconds from 1 ms to
 * 2^27 ms (37 hours), in seconds. The shards keep 8 buckets per doubling
 * (run-metrics.ts `durationBucket`), so each bound here is a bound of theirs and the
 * cumulative counts are exact, not interpolated.
 */
const LE_EXPONENTS = Array.from({ length: 28 }, (_, k) => k);
const FINE_PER_DOUBLING = 8;

/**
 * The families `GET /metrics` serves, from each type's snapshot at `now`. Every family is a
 * gauge: the shards keep a day of per-minute counts, not totals since forever, so the numbers
 * are windows (`window="5m"`, `"1h"`, `"1d"`, ending at `now`) that fall as minutes age out;
 * declaring them counters would make `rate()` read every fall as a reset.
 */
export function metricFamilies(now: number, snapshots: readonly TypeSnapshot[]): MetricFamily[] {
	const runs: Sample[] = [];
	const buckets: Sample[] = [];
	const quantiles: Sample[] = [];
	const backlogPending: Sample[] = [];
	const backlogAge: Sample[] = [];
	const stuck: Sample[] = [];
	const failingInstances: Sample[] = [];
	const failingMost: Sample[] = [];
	const stuckThreshold: Sample[] = [];
	const scheduleOverdue: Sample[] = [];
	const scheduleMissed: Sample[] = [];
	const scheduleLastRun: Sample[] = [];
	const scheduleDelay: Sample[] = [];

	for (const snap of snapshots) {
		const { type } = snap;
		const metrics = summarizeMetrics(type, now, snap.shards);
		const fiveMinutes = metrics.perMinute.slice(-5);
		const windows = {
			'5m': Object.fromEntries(OUTCOMES.map((o) => [o, fiveMinutes.reduce((sum, m) => sum + m[o], 0)])),
			'1h': metrics.hour,
			'1d': metrics.day,
		} as const;
		for (const [window, counts] of Object.entries(windows)) {
			for (const outcome of OUTCOMES) runs.push({ labels: { type, outcome, window }, value: (counts as Record<string, number>)[outcome]! });
		}
		const histograms = { '1h': mergeHistograms(snap.shards.map((s) => s.durations.hour)), '1d': mergeHistograms(snap.shards.map((s) => s.durations.day)) };
		for (const [window, histogram] of Object.entries(histograms)) {
			const fine = Object.entries(histogram).map(([b, n]) => [Number(b), n] as const);
			for (const k of LE_EXPONENTS) {
				const count = fine.filter(([b]) => b <= k * FINE_PER_DOUBLING).reduce((sum, [, n]) => sum + n, 0);
				buckets.push({ labels: { type, window, le: String(2 ** k / 1000) }, value: count });
			}
			buckets.push({ labels: { type, window, le: '+Inf' }, value: fine.reduce((sum, [, n]) => sum + n, 0) });
			const durations = (window === '1h' ? metrics.hour : metrics.day).durationMs;
			for (const [quantile, ms] of [['0.5', durations.p50], ['0.9', durations.p90], ['0.99', durations.p99]] as const) {
				if (ms !== null) quantiles.push({ labels: { type, window, quantile }, value: ms / 1000 });
			}
		}
		backlogPending.push({ labels: { type }, value: snap.backlog.pending });
		backlogAge.push({ labels: { type }, value: snap.backlog.oldestSince === null ? 0 : Math.max(0, now - snap.backlog.oldestSince) / 1000 });
		failingInstances.push({ labels: { type }, value: snap.failing.instances });
		failingMost.push({ labels: { type }, value: snap.failing.mostInARow });
		for (const status of ['running', 'waiting'] as const) {
			const threshold = snap.stuckAfter[status];
			const count = snap.stuck[status];
			if (threshold === null || count === null) continue;
			stuck.push({ labels: { type, status }, value: count });
			stuckThreshold.push({ labels: { type, status }, value: threshold / 1000 });
		}
		if (snap.schedule) {
			const { nextRunAt, lastRuns, missedLastDay } = snap.schedule;
			scheduleOverdue.push({ labels: { type }, value: nextRunAt === null ? 0 : Math.max(0, now - nextRunAt) / 1000 });
			scheduleMissed.push({ labels: { type, window: '1d' }, value: missedLastDay });
			const last = lastRuns[0];
			if (last) {
				scheduleLastRun.push({ labels: { type, outcome: last.outcome }, value: last.at / 1000 });
				scheduleDelay.push({ labels: { type }, value: Math.max(0, last.at - last.tick) / 1000 });
			}
		}
	}

	return [
		{ name: 'shardflow_runs', type: 'gauge', help: 'Runs that started, completed, errored or were terminated in the window ending now (minutes counted by the index shards).', samples: runs },
		{ name: 'shardflow_run_duration_seconds_bucket', type: 'gauge', help: 'Runs that finished (completed or errored) in the window and took at most le seconds from creation; cumulative, exact at these bounds; use histogram_quantile().', samples: buckets },
		{ name: 'shardflow_run_duration_seconds', type: 'gauge', help: 'Run duration percentiles (creation to completed or errored) of the runs that finished in the window, within ~5%.', samples: quantiles },
		{ name: 'shardflow_index_backlog_pending', type: 'gauge', help: 'Instances whose index delivery failed and has not succeeded since.', samples: backlogPending },
		{ name: 'shardflow_index_backlog_oldest_age_seconds', type: 'gauge', help: 'How long the longest-waiting undelivered index entry has waited (0 when none).', samples: backlogAge },
		{ name: 'shardflow_instances_stuck', type: 'gauge', help: `Instances running or waiting for longer than their type's stuckAfter threshold since their last status change (counted up to ${STUCK_COUNT_CAP}).`, samples: stuck },
		{ name: 'shardflow_instances_failing_passes', type: 'gauge', help: `Instances whose last ${FAILING_PASSES_THRESHOLD} passes or more failed in a row (storage refused them, an error outside the steps, or the isolate died mid-pass), reported within the last 15 minutes.`, samples: failingInstances },
		{ name: 'shardflow_failing_passes_max_in_a_row', type: 'gauge', help: 'The most passes in a row any of those instances failed (0 when none).', samples: failingMost },
		{ name: 'shardflow_instances_stuck_threshold_seconds', type: 'gauge', help: "The type's stuckAfter threshold for the status.", samples: stuckThreshold },
		{ name: 'shardflow_schedule_overdue_seconds', type: 'gauge', help: "How far the schedule's next tick is past due after the scrape woke it (0 when on time or paused): a tick that cannot run.", samples: scheduleOverdue },
		{ name: 'shardflow_schedule_missed_ticks', type: 'gauge', help: 'Ticks the schedule missed in the window: due while its alarm could not fire, stood in for by a later tick and not run.', samples: scheduleMissed },
		{ name: 'shardflow_schedule_last_run_delay_seconds', type: 'gauge', help: 'How late the last handled tick ran after its time.', samples: scheduleDelay },
		{ name: 'shardflow_schedule_last_run_timestamp_seconds', type: 'gauge', help: 'When the schedule last handled a tick, by its outcome.', samples: scheduleLastRun },
	];
}
