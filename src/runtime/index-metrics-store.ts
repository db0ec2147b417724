import { and, gte, lt, sql } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import * as schema from '../db/schema';
import { METRICS_RETENTION_MS, durationBucket, minuteOf, type MetricsDelta, type MinuteCounts, type ShardMetrics } from '../engine/index/run-metrics';

const { indexMetricMinutes: m, indexMetricDurations: d } = schema;

/** How often a shard that takes writes drops minutes past the retention (its clock, ms). */
const PRUNE_EVERY_MS = 60_000;

/**
 * The SQL side of one index shard's run metrics (engine/index/run-metrics.ts): a row of counters
 * per minute with its duration histogram (JSON), added to as entries land, one row written per
 * upsert. A read sums at most a day of minutes, whatever the number of entries.
 */
export class IndexMetricsStore {
	private readonly addCounts;
	private prunedAt = -Infinity;
	/** Writes that changed a counter, in this isolate (a shard exporting to Analytics Engine arms its alarm after one). */
	changes = 0;

	constructor(private readonly db: DrizzleSqliteDODatabase) {
		const p = sql.placeholder;
		// A finished run's duration goes into its minute's row with its counters (`bucket` its histogram key, or
		// null for a write that finishes nothing): one row written per upsert, where a row of `index_metric_durations`
		// (a composite key: the row and its index) made it 2 or 3 (drizzle/0017).
		const path = sql`'$."' || ${p('bucket')} || '"'`;
		this.addCounts = db
			.insert(m)
			.values({
				minute: p('minute'),
				started: p('started'),
				completed: p('completed'),
				errored: p('errored'),
				terminated: p('terminated'),
				durations: sql`CASE WHEN ${p('bucket')} IS NULL THEN NULL ELSE json_object(${p('bucket')}, 1) END`,
			} as never)
			.onConflictDoUpdate({
				target: m.minute,
				set: {
					started: sql`${m.started} + excluded.started`,
					completed: sql`${m.completed} + excluded.completed`,
					errored: sql`${m.errored} + excluded.errored`,
					terminated: sql`${m.terminated} + excluded.terminated`,
					durations: sql`CASE WHEN ${p('bucket')} IS NULL THEN ${m.durations} ELSE json_set(coalesce(${m.durations}, '{}'), ${path}, coalesce(json_extract(${m.durations}, ${path}), 0) + 1) END`,
				},
			})
			.prepare();
	}

	/**
	 * Adds what one accepted entry changed (nothing for most writes: a status between start and finish).
	 * A run that started and finished in the same minute (a short run's one delivery) is one upsert of
	 * that minute's counters, not two: a statement and a billed row less per such write.
	 */
	record(delta: MetricsDelta): void {
		const { startedMinute, finished } = delta;
		const zero = { started: 0, completed: 0, errored: 0, terminated: 0, bucket: null };
		// A terminated run's duration is not a run time: it has no bucket.
		const bucket = finished && finished.status !== 'terminated' ? String(durationBucket(finished.durationMs)) : null;
		if (startedMinute !== undefined || finished) this.changes++;
		if (startedMinute !== undefined && finished && finished.minute === startedMinute) {
			this.addCounts.run({ minute: startedMinute, ...zero, started: 1, [finished.status]: 1, bucket });
		} else {
			if (startedMinute !== undefined) this.addCounts.run({ minute: startedMinute, ...zero, started: 1 });
			if (finished) this.addCounts.run({ minute: finished.minute, ...zero, [finished.status]: 1, bucket });
		}
	}

	/**
	 * The minutes from `from` to `to` (inclusive) that counted anything, oldest first, at most
	 * `limit`, each with its duration histogram (fine bucket -> runs): what the Analytics Engine
	 * export writes (engine/index/metrics-export.ts). Rows of `index_metric_durations` (before
	 * drizzle/0017) are not read: an export starts with the build that writes it, after that migration.
	 */
	minutes(from: number, to: number, limit: number): { counts: MinuteCounts; histogram: Record<string, number> }[] {
		return this.db
			.select({ minute: m.minute, started: m.started, completed: m.completed, errored: m.errored, terminated: m.terminated, durations: m.durations })
			.from(m)
			.where(and(gte(m.minute, from), lt(m.minute, to + 1)))
			.orderBy(m.minute)
			.limit(limit)
			.all()
			.map(({ durations, ...counts }) => ({ counts: counts as MinuteCounts, histogram: durations ? (JSON.parse(durations as string) as Record<string, number>) : {} }));
	}

	/** The newest minute that counted anything (undefined: none). */
	newestMinute(): number | undefined {
		return this.db.select({ minute: sql<number | null>`max(${m.minute})` }).from(m).get()?.minute ?? undefined;
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
		// The minutes' own histograms, plus the rows of `index_metric_durations` (minutes written before drizzle/0017,
		// or by an older build while a deploy was rolled back): a minute may have both.
		const histogram = (from: number) => {
			const sums: Record<number, number> = {};
			const add = (bucket: number, runs: number) => (sums[bucket] = (sums[bucket] ?? 0) + runs);
			for (const r of this.db
				.select({ bucket: sql<string>`j.key`, runs: sql<number>`sum(j.value)` })
				.from(sql`${m}, json_each(${m.durations}) AS j`)
				.where(and(gte(m.minute, from), lt(m.minute, current + 1)))
				.groupBy(sql`j.key`)
				.all()) add(Number(r.bucket), Number(r.runs));
			for (const r of this.db
				.select({ bucket: d.bucket, runs: sql<number>`sum(${d.runs})` })
				.from(d)
				.where(and(gte(d.minute, from), lt(d.minute, current + 1)))
				.groupBy(d.bucket)
				.all()) add(r.bucket, Number(r.runs));
			return sums;
		};
		return { minutes, day, durations: { hour: histogram(hourFrom), day: histogram(dayFrom) } };
	}
}
