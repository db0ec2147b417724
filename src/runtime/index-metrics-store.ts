import { and, gte, lt, sql } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import * as schema from '../db/schema';
import { METRICS_RETENTION_MS, durationBucket, minuteOf, type MetricsDelta, type MinuteCounts, type ShardMetrics } from '../engine/index/run-metrics';

const { indexMetricMinutes: m, indexMetricDurations: d } = schema;

/** How often a shard that takes writes drops minutes past the retention (its clock, ms). */
const PRUNE_EVERY_MS = 60_000;

/**
 * The SQL side of one index shard's run metrics (engine/index/run-metrics.ts): a row of counters
 * per minute and a duration histogram per minute, added to as entries land. A read sums at
 * most a day of minutes, whatever the number of entries.
 */
export class IndexMetricsStore {
	private readonly addCounts;
	private readonly addDuration;
	private prunedAt = -Infinity;

	constructor(private readonly db: DrizzleSqliteDODatabase) {
		const p = sql.placeholder;
		this.addCounts = db
			.insert(m)
			.values({ minute: p('minute'), started: p('started'), completed: p('completed'), errored: p('errored'), terminated: p('terminated') } as never)
			.onConflictDoUpdate({
				target: m.minute,
				set: {
					started: sql`${m.started} + excluded.started`,
					completed: sql`${m.completed} + excluded.completed`,
					errored: sql`${m.errored} + excluded.errored`,
					terminated: sql`${m.terminated} + excluded.terminated`,
				},
			})
			.prepare();
		this.addDuration = db
			.insert(d)
			.values({ minute: p('minute'), bucket: p('bucket'), runs: 1 } as never)
			.onConflictDoUpdate({ target: [d.minute, d.bucket], set: { runs: sql`${d.runs} + 1` } })
			.prepare();
	}

	/**
	 * Adds what one accepted entry changed (nothing for most writes: a status between start and finish).
	 * A run that started and finished in the same minute (a short run's one delivery) is one upsert of
	 * that minute's counters, not two: a statement and a billed row less per such write.
	 */
	record(delta: MetricsDelta): void {
		const { startedMinute, finished } = delta;
		const zero = { started: 0, completed: 0, errored: 0, terminated: 0 };
		if (startedMinute !== undefined && finished && finished.minute === startedMinute) {
			this.addCounts.run({ minute: startedMinute, ...zero, started: 1, [finished.status]: 1 });
		} else {
			if (startedMinute !== undefined) this.addCounts.run({ minute: startedMinute, ...zero, started: 1 });
			if (finished) this.addCounts.run({ minute: finished.minute, ...zero, [finished.status]: 1 });
		}
		if (finished && finished.status !== 'terminated') this.addDuration.run({ minute: finished.minute, bucket: durationBucket(finished.durationMs) });
	}

	/** Drops minutes older than the retention, at most once a minute of the shard's clock. */
	pruneIfDue(now: number): void {
		if (now - this.prunedAt < PRUNE_EVERY_MS) return;
		this.prunedAt = now;
		const before = minuteOf(now - METRICS_RETENTION_MS);
		this.db.delete(m).where(lt(m.minute, before)).run();
		this.db.delete(d).where(lt(d.minute, before)).run();
	}

	/** The last hour's minutes up to `now`, the last day's sums, and the duration histograms of both. */
	read(now: number): ShardMetrics {
		const current = minuteOf(now);
		const dayFrom = current - 1439;
		const hourFrom = current - 59;
		const minutes = this.db
			.select({ minute: m.minute, started: m.started, completed: m.completed, errored: m.errored, terminated: m.terminated })
			.from(m)
			.where(and(gte(m.minute, hourFrom), lt(m.minute, current + 1)))
			.all() as MinuteCounts[];
		const day = this.db
			.select({
				started: sql<number>`coalesce(sum(${m.started}), 0)`,
				completed: sql<number>`coalesce(sum(${m.completed}), 0)`,
				errored: sql<number>`coalesce(sum(${m.errored}), 0)`,
				terminated: sql<number>`coalesce(sum(${m.terminated}), 0)`,
			})
			.from(m)
			.where(and(gte(m.minute, dayFrom), lt(m.minute, current + 1)))
			.get()!;
		const histogram = (from: number) =>
			Object.fromEntries(
				this.db
					.select({ bucket: d.bucket, runs: sql<number>`sum(${d.runs})` })
					.from(d)
					.where(and(gte(d.minute, from), lt(d.minute, current + 1)))
					.groupBy(d.bucket)
					.all()
					.map((r) => [r.bucket, r.runs]),
			) as Record<number, number>;
		return { minutes, day, durations: { hour: histogram(hourFrom), day: histogram(dayFrom) } };
	}
}
