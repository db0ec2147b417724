import { FAILING_REPORT_STALE_MS, summarizeFailing, type FailingReport, type FailingSummary } from '../engine/instance/failing-passes';

/** Key prefix of a report in the backlog object's key-value storage (one owner: this file). */
const PREFIX = 'failing:';
/** How many reports a summary reads at most: a scrape's cost stays bounded in an outage that fails every instance. */
export const FAILING_READ_CAP = 1000;
/** Stale reports a new report removes at most (they only accumulate when an isolate died mid-report). */
const PRUNE_LIMIT = 100;
/** How often (by the reports' clock) a report looks for stale ones. */
const PRUNE_EVERY_MS = 60_000;

/**
 * A type's reports of instances whose passes keep failing (engine/instance/failing-passes.ts), in
 * the backlog object's key-value storage: one key per failing instance, 1 row written per report
 * and 1 per withdrawal, nothing for an instance whose passes go well. Key-value rather than a
 * table so no migration is needed and an object that never had a failing instance has nothing.
 */
export class FailingPassesStore {
	private prunedAt = -Infinity;

	constructor(private readonly kv: SyncKvStorage) {}

	/** Records (or refreshes) a report; a refresh keeps the run's first `since`. Prunes a few stale reports, once a minute. */
	report(report: FailingReport): void {
		const key = PREFIX + report.id;
		const earlier = this.kv.get<FailingReport>(key);
		this.kv.put(key, { ...report, since: earlier ? Math.min(earlier.since, report.since) : report.since });
		// At most once a minute per isolate: in an outage that fails every instance, each report would otherwise read them all.
		if (report.at - this.prunedAt < PRUNE_EVERY_MS) return;
		this.prunedAt = report.at;
		let pruned = 0;
		for (const [stale, kept] of this.kv.list<FailingReport>({ prefix: PREFIX, limit: FAILING_READ_CAP })) {
			if (pruned >= PRUNE_LIMIT) break;
			if (report.at - kept.at >= FAILING_REPORT_STALE_MS) (this.kv.delete(stale), pruned++);
		}
	}

	withdraw(id: string): void {
		this.kv.delete(PREFIX + id);
	}

	summary(now: number): FailingSummary {
		const reports: FailingReport[] = [];
		for (const [, report] of this.kv.list<FailingReport>({ prefix: PREFIX, limit: FAILING_READ_CAP })) reports.push(report);
		return summarizeFailing(reports, now);
	}
}
