/**
 * Instances whose passes keep failing, as a report a scrape can read: the engine's side.
 *
 * A pass fails outside run() (storage refused a read or write, a registry that cannot run, a bug:
 * `pass.failed`) or is cut short (the isolate died mid-pass: a crash, a memory or CPU limit:
 * `pass.cut`). Either way the instance backs off and retries from its alarm, and nothing in the
 * index changes: its status stays `running` or `sleeping`, so neither the run counts nor the stuck
 * check can see it. Like the delivery backlog (index-backlog.ts), the instance reports itself to
 * its type's backlog object once its passes have failed `FAILING_PASSES_THRESHOLD` times in a
 * row, refreshes the report on each further failure (so its count is current and a report whose
 * instance vanished ages out), and withdraws it when a pass ends. A pass that goes well after
 * one that went well reports nothing: no RPC, no row.
 */

/** Failed (or cut) passes in a row from which an instance counts as failing. */
export const FAILING_PASSES_THRESHOLD = 3;

/**
 * A report not refreshed for this long no longer counts. A failing instance retries at most 5
 * minutes apart (both backoffs stop there, timing.ts), so three missed refreshes mean its isolate
 * died before it could withdraw the report, or it was deleted while it failed.
 */
export const FAILING_REPORT_STALE_MS = 15 * 60_000;

/** How many failing instances a summary names (the worst first). */
export const FAILING_SAMPLE = 5;

/** What made the passes fail: a throw outside run() (`pass.failed`), or the isolate dying mid-pass (`pass.cut`). */
export type FailingCause = 'failed' | 'cut';

/** One instance's report, as its type's backlog object keeps it. */
export interface FailingReport {
	id: string;
	cause: FailingCause;
	/** Passes in a row that failed (or were cut short) so far. */
	count: number;
	/** When the instance first reported this run of failures (a refresh keeps it). */
	since: number;
	/** When the instance last reported (its last failing pass). */
	at: number;
}

/** What a type's failing passes look like (GET /metrics, GET /alerts, the dashboard's overview). */
export interface FailingSummary {
	/** Instances whose last `threshold` passes or more failed, reported within `FAILING_REPORT_STALE_MS`. */
	instances: number;
	/** The most passes in a row any of them failed (0 when none). */
	mostInARow: number;
	/** The threshold they were counted from. */
	threshold: number;
	/** Up to `FAILING_SAMPLE` of them, the most failures in a row first. */
	worst: Omit<FailingReport, 'at'>[];
}

/** Where an instance reports (runtime: an RPC to `__backlog:<type>`; tests: a fake). */
export interface FailingPassesPort {
	report(type: string, report: FailingReport): Promise<void>;
	withdraw(type: string, id: string): Promise<void>;
}

/** The summary of the reports a backlog object keeps, at `now` (stale ones left out). */
export function summarizeFailing(reports: Iterable<FailingReport>, now: number): FailingSummary {
	const live = [...reports].filter((r) => now - r.at < FAILING_REPORT_STALE_MS);
	live.sort((a, b) => b.count - a.count || a.since - b.since || (a.id < b.id ? -1 : 1));
	return {
		instances: live.length,
		mostInARow: live[0]?.count ?? 0,
		threshold: FAILING_PASSES_THRESHOLD,
		worst: live.slice(0, FAILING_SAMPLE).map(({ id, cause, count, since }) => ({ id, cause, count, since })),
	};
}

interface ReporterHost {
	failingPasses?: FailingPassesPort;
	background(work: Promise<unknown>): void;
	now(): number;
}

/**
 * The replay loop's side: told of each failed or cut pass and of each pass that ended, it
 * reports or withdraws in the background (a report is never worth delaying or failing a pass).
 */
export class FailingPassReporter {
	constructor(private readonly host: ReporterHost) {}

	/** A pass of `id` failed (or was cut short), the `count`-th in a row. */
	failed(type: string, id: string, cause: FailingCause, count: number): void {
		const port = this.host.failingPasses;
		if (!port || count < FAILING_PASSES_THRESHOLD) return;
		const at = this.host.now();
		this.host.background(port.report(type, { id, cause, count, since: at, at }).catch(() => {}));
	}

	/** A pass of `id` ended after `failedInARow` failed and `cutInARow` cut passes: withdraws a report they made. */
	ended(type: string, id: string, failedInARow: number, cutInARow: number): void {
		const port = this.host.failingPasses;
		if (!port || Math.max(failedInARow, cutInARow) < FAILING_PASSES_THRESHOLD) return;
		this.host.background(port.withdraw(type, id).catch(() => {}));
	}
}
