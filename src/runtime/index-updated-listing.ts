import { sql } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import * as schema from '../db/schema';
import { compareIn } from '../engine/index/index-query';

const { indexEntries: t } = schema;

/** A row as a listing selects it: what the walk needs to order and stop. */
interface Walked {
	id: string;
	createdAt: number;
	updatedAt: number;
}

/** Where a backward walk of `(status, created_at, id)` stands: before this row. */
export interface CreatedBefore {
	createdAt: number;
	id: string;
}

/**
 * The longest time an entry of each status has stood between its creation and its last change
 * (`updated_at - created_at`), kept in memory by the shard object: what lets a page in `updatedAt`
 * order stop walking `(status, created_at, id)` backwards (`newestUpdated`). Found by one scan of the
 * shard's entries the first time a page asks (a shard never listed by update never scans), then kept
 * by every write of this object, which writes every row of its shard. Only grows while the object
 * lives: an entry that leaves does not shorten it (a new object scans again).
 */
export class EntryAges {
	private ages: Map<string, number> | undefined;

	constructor(private readonly db: DrizzleSqliteDODatabase) {}

	/** The longest age of the entries of `status` (0: none). */
	of(status: string): number {
		if (!this.ages) {
			const rows = this.db
				.select({ status: t.status, age: sql<number>`max(${t.updatedAt} - ${t.createdAt})` })
				.from(t)
				.groupBy(t.status)
				.all();
			this.ages = new Map(rows.map((row) => [row.status, Number(row.age)]));
		}
		return Math.max(0, this.ages.get(status) ?? 0);
	}

	/** An entry this object wrote (its `updated_at` as stored: never before its `created_at`). */
	wrote(entry: { status: string; createdAt: number; updatedAt: number }): void {
		if (!this.ages) return;
		const age = entry.updatedAt - entry.createdAt;
		if (age > (this.ages.get(entry.status) ?? -Infinity)) this.ages.set(entry.status, age);
	}
}

/** Rows walked per statement: the first is the page's size and a margin (the rows just past the page often end it), then they double up to this. */
const MAX_CHUNK = 1024;
const MARGIN = 32;
/**
 * Rows walked before the rest is left to SQLite: one statement that keeps the `limit` newest of what lies
 * further back in a sorter, as fast as SQLite reads and with `limit` rows kept, where walking on in chunks
 * would build every row in JavaScript (an entry that stood a week makes a page read every entry).
 */
const MAX_WALK = 4 * MAX_CHUNK;

/**
 * The `limit` newest rows by `(updated_at, id)` among what `walk` yields (`maxAge`: the status's longest age), walking one status's
 * entries backwards by `(created_at, id)` a chunk at a time: once `limit` rows are kept and the walk
 * is at `created_at = c`, no row further back can be newer than `c + maxAge`, so when that is below
 * the `limit`-th row's `updated_at` the page is complete. A page reads the entries created within
 * `maxAge` of the page's oldest update (plus a chunk): a few pages' worth when runs are short; every
 * entry of the status when one entry stood as long as the shard is old (then, past `MAX_WALK` rows, one
 * sorted statement reads the rest).
 */
export function newestUpdated<Row extends Walked>(walk: (before: CreatedBefore | undefined, size?: number) => Row[], limit: number, maxAge: () => number): Row[] {
	const order = compareIn('updatedAt');
	let kept: Row[] = [];
	let before: CreatedBefore | undefined;
	let walked = 0;
	for (let size = limit + MARGIN; ; size = Math.max(size, Math.min(size * 2, MAX_CHUNK))) {
		// Walked far without an end in sight: the newest of the rest in one sorted statement (`size` undefined).
		const rest = walked >= MAX_WALK;
		const rows = walk(before, rest ? undefined : size);
		walked += rows.length;
		kept = [...kept, ...rows].sort(order).slice(0, limit);
		if (rest || rows.length < size) return kept;
		const last = rows.at(-1)!;
		before = { createdAt: last.createdAt, id: last.id };
		// Asked only here: a walk that ends in its first chunk (the stuck check's few running entries) needs no ages.
		if (kept.length === limit && last.createdAt + maxAge() < kept.at(-1)!.updatedAt) return kept;
	}
}
