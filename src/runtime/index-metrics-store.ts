import { and, eq, gte, lt, sql } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import * as schema from '../db/schema';
import { METRICS_RETENTION_MS, mergeHistograms, minuteOf, type MetricsDelta, type MinuteCounts, type ShardMetrics } from '../engine/index/run-metrics';
import { isEmptyDelta, mergePending, sumPending, type MinuteSums } from '../engine/index/pending-metrics';

const { indexMetricMinutes: m, indexMetricDurations: d } = schema;

/** How often a shard that takes writes drops minutes past the retention (its clock, ms). */
const PRUNE_EVERY_MS = 60_000;

/**
 * The SQL side of one index shard's run metrics (engine/index/run-metrics.ts): a row of counters
 * per minute with its duration histogram (JSON), added to by the rollup of the entries' marks once
 * a minute (index-metrics-rollup.ts) and by the few writes the rollup has passed, one row written per
 * minute and upsert. A read sums at most a day of minutes, whatever the number of entries, plus the
 * marks not rolled up yet.
 */
export class IndexMetricsStore {
	private readonly addCounts;
	private readonly durationsOf;
	private prunedAt = -Infinity;
	/** Writes that changed a counter, in this isolate (a shard exporting to Analytics Engine arms its alarm after one). */
	changes = 0;
	/**
	 * The counts the shard's entries hold that are not in the minute rows yet (index-metrics-rollup.ts), added
	 * to every read; none when the shard rolls nothing up (a store used on its own).
	 */
	unrolled: () => Map<number, MinuteSums> = () => new Map();

	constructor(private readonly db: DrizzleSqliteDODatabase) {
		const p = sql.placeholder;
		// A minute's counters and its duration histogram (JSON) in one row: one row written per upsert, where a
		// row of `index_metric_durations` (a composite key: the row and its index) made it 2 or 3 (drizzle/0017).
		// The histogram is merged in code (`durations` is the merged JSON): a rollup adds many buckets at once.
		this.addCounts = db
			.insert(m)
			.values({
				minute: p('minute'),
				started: p('started'),
				completed: p('completed'),
				errored: p('errored'),
				terminated: p('terminated'),
				durations: p('durations'),
				rolledTo: p('rolledTo'),
			} as never)
			.onConflictDoUpdate({
				target: m.minute,
				set: {
					started: sql`${m.started} + excluded.started`,
					completed: sql`${m.completed} + excluded.completed`,
					errored: sql`${m.errored} + excluded.errored`,
					terminated: sql`${m.terminated} + excluded.terminated`,
					durations: sql`excluded.durations`,
					// A rollup's write moves the watermark it carries; a delivery's own write (null) leaves it.
					rolledTo: sql`coalesce(excluded.rolled_to, ${m.rolledTo})`,
				},
			})
			.prepare();
		this.durationsOf = db.select({ durations: m.durations }).from(m).where(eq(m.minute, p('minute'))).prepare();
	}

	/**
	 * Adds what one accepted entry changed straight into the minute rows (a delivery the rollup has
	 * passed, or a mark folded before its entry goes). A run that started and finished in the same
	 * minute is one upsert of that minute's row.
	 */
	record(delta: MetricsDelta): void {
		if (isEmptyDelta(delta)) return;
		this.changes++;
		this.add(sumPending([mergePending(undefined, delta, 0)!]));
	}

	/**
	 * Adds counted minutes into their rows: one row written per minute. A rollup passes where it now stands
	 * (`rolledTo`), which its rows carry (the newest is the shard's watermark: `rolledTo()`).
	 */
	add(minutes: Map<number, MinuteSums>, rolledTo: number | null = null): void {
		for (const { counts, histogram } of minutes.values()) {
			const stored = this.durationsOf.get({ minute: counts.minute }) as { durations: string | null } | undefined;
			const merged = mergeHistograms([stored?.durations ? (JSON.parse(stored.durations) as Record<number, number>) : {}, histogram]);
			const durations = Object.keys(merged).length ? JSON.stringify(merged) : null;
			this.addCounts.run({ minute: counts.minute, started: counts.started, completed: counts.completed, errored: counts.errored, terminated: counts.terminated, durations, rolledTo });
		}
	}

	/** The newest watermark a rollup left on the rows it wrote (undefined: none). */
	rolledTo(): number | undefined {
		return this.db.select({ at: sql<number | null>`max(${m.rolledTo})` }).from(m).get()?.at ?? undefined;
	}

	/**
	 * The minutes from `from` to `to` (inclusive) that counted anything, oldest first, at most
	 * `limit`, each with its duration histogram (fine bucket -> runs): what the Analytics Engine
	 * export writes (engine/index/metrics-export.ts). Rows of `index_metric_durations` (before
	 * drizzle/0017) are not read: an export starts with the build that writes it, after that migration.
	 */
	minutes(from: number, to: number, limit: number): { counts: MinuteCounts; histogram: Record<string, number> }[] {
		const rows = this.db
			.select({ minute: m.minute, started: m.started, completed: m.completed, errored: m.errored, terminated: m.terminated, durations: m.durations })
			.from(m)
			.where(and(gte(m.minute, from), lt(m.minute, to + 1)))
			.orderBy(m.minute)
			.limit(limit)
			.all()
			.map(({ durations, ...counts }) => ({ counts: counts as MinuteCounts, histogram: durations ? (JSON.parse(durations as string) as Record<string, number>) : {} }));
		// The marks not rolled up yet, in the same range; past a full page's last minute they wait for the next page.
		const through = rows.length === limit ? rows.at(-1)!.counts.minute : to;
		const merged = new Map(rows.map((r) => [r.counts.minute, r]));
		for (const sums of this.unrolled().values()) {
			const minute = sums.counts.minute;
			if (minute < from || minute > through) continue;
			const row = merged.get(minute);
			merged.set(minute, row ? { counts: addCounts(row.counts, sums.counts), histogram: mergeHistograms([row.histogram, sums.histogram]) } : { counts: { ...sums.counts }, histogram: { ...sums.histogram } });
		}
		return [...merged.values()].sort((a, b) => a.counts.minute - b.counts.minute).slice(0, limit);
	}

	/** The newest minute that counted anything (undefined: none), rolled up or not. */
	newestMinute(): number | undefined {
		const stored = this.db.select({ minute: sql<number | null>`max(${m.minute})` }).from(m).get()?.minute ?? undefined;
		const pending = [...this.unrolled().keys()];
		return pending.length ? Math.max(stored ?? -Infinity, ...pending) : stored;
	}

	/** Drops minutes older than the retention, at most once a minute of the shard's clock. */
	pruneIfDue(now: number): void {
		if (now - this.prunedAt < PRUNE_EVERY_MS) return;
		this.prunedAt = now;
		const before = minuteOf(now - METRICS_RETENTION_MS);
		// The row holding the rollup's watermark stays, however old (reads never reach back to it).
		this.db.delete(m).where(and(lt(m.minute, before), sql`(${m.rolledTo} IS NULL OR ${m.rolledTo} < (SELECT max(${m.rolledTo}) FROM ${m}))`)).run();
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
		// The marks not rolled up yet (index-metrics-rollup.ts), added as they would be once they are.
		const byMinute = new Map(minutes.map((row) => [row.minute, row]));
		const hour: Record<number, number> = histogram(hourFrom);
		const dayHistogram: Record<number, number> = histogram(dayFrom);
		let daySums: Omit<MinuteCounts, 'minute'> = day;
		for (const sums of this.unrolled().values()) {
			const minute = sums.counts.minute;
			if (minute < dayFrom || minute > current) continue;
			daySums = addCounts({ minute, ...daySums }, sums.counts);
			addInto(dayHistogram, sums.histogram);
			if (minute < hourFrom) continue;
			const row = byMinute.get(minute);
			byMinute.set(minute, row ? addCounts(row, sums.counts) : { ...sums.counts });
			addInto(hour, sums.histogram);
		}
		const { minute: _, ...daySum } = daySums as MinuteCounts;
		return { minutes: [...byMinute.values()].sort((a, b) => a.minute - b.minute), day: daySum, durations: { hour, day: dayHistogram } };
	}
}

/** The counters of two rows of the same minute added. */
function addCounts(a: MinuteCounts, b: MinuteCounts): MinuteCounts {
	return { minute: a.minute, started: a.started + b.started, completed: a.completed + b.completed, errored: a.errored + b.errored, terminated: a.terminated + b.terminated };
}

function addInto(sums: Record<number, number>, histogram: Record<string, number>): void {
	for (const [bucket, runs] of Object.entries(histogram)) sums[Number(bucket)] = (sums[Number(bucket)] ?? 0) + runs;
}
