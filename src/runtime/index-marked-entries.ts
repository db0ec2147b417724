import { and, gte, isNotNull, sql } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import * as schema from '../db/schema';

const { indexEntries: t } = schema;

/** Ids looked up per statement (one JSON parameter each). */
const LOOKUP_CHUNK = 500;

/** An entry row as the rollup reads it. */
export interface MarkRow {
	id: string;
	status: string;
	updatedAt: number;
	pendingMetrics: string | null;
}

/**
 * Which entries of an index shard may carry a metrics mark the rollup has not counted yet
 * (index-metrics-rollup.ts), kept in memory so that the rollup, once a minute, reads those entries
 * by id and nothing else: no index leads with `updated_at` (drizzle/0023), so "the entries written
 * since the watermark" is no longer a range of one.
 *
 * The set holds every id this object wrote with a mark, and, from before the object started (a
 * previous life of the shard, or a build rolled back to and forward from), every id whose row has a
 * mark and `updated_at` at or past the watermark: found by **one scan of the shard's entries, the
 * first time the set is asked for** after the object starts (rows read: every entry, once; none on a
 * shard that never wrote a mark). Every write of a mark goes through this object, so from then on the
 * set is complete. An id leaves it once the rollup has passed its row (or its row holds no mark).
 */
export class MarkedEntries {
	private readonly ids = new Set<string>();
	/** Whether the scan for the marks written before this object started has run. */
	private scanned = false;
	private readonly scan;

	constructor(private readonly db: DrizzleSqliteDODatabase) {
		this.scan = db
			.select({ id: t.id })
			.from(t)
			.where(and(isNotNull(t.pendingMetrics), gte(t.updatedAt, sql.placeholder('from'))))
			.prepare();
	}

	/** An entry written with a mark. */
	add(id: string): void {
		this.ids.add(id);
	}

	/** Whether the set is known to hold nothing (so no rollup can find a mark, and none is read). */
	knownEmpty(): boolean {
		return this.scanned && this.ids.size === 0;
	}

	/** The rows of the ids in the set (the first call after the object starts scans for those written before, from `watermark`). */
	rows(watermark: number): MarkRow[] {
		if (!this.scanned) {
			for (const { id } of this.scan.all({ from: watermark }) as { id: string }[]) this.ids.add(id);
			this.scanned = true;
		}
		const ids = [...this.ids];
		const rows: MarkRow[] = [];
		for (let i = 0; i < ids.length; i += LOOKUP_CHUNK) {
			rows.push(
				...(this.db
					.select({ id: t.id, status: t.status, updatedAt: t.updatedAt, pendingMetrics: t.pendingMetrics })
					.from(t)
					.where(sql`${t.id} IN (SELECT value FROM json_each(${JSON.stringify(ids.slice(i, i + LOOKUP_CHUNK))}))`)
					.all() as MarkRow[]),
			);
		}
		return rows;
	}

	/** Drops the ids whose rows a rollup up to `to` has passed, or that hold nothing to count: `keep` says which stay. */
	retain(rows: MarkRow[], keep: (row: MarkRow) => boolean): void {
		const present = new Set(rows.map((row) => row.id));
		for (const id of this.ids) if (!present.has(id)) this.ids.delete(id);
		for (const row of rows) if (!keep(row)) this.ids.delete(row.id);
	}
}
