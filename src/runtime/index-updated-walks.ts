import { and, asc, eq, lte, sql } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import * as schema from '../db/schema';
import type { WorkflowStatus } from '../engine/support/statuses';
import { DELETED } from './index-entry-upsert';

const { indexEntries: t } = schema;

/** Rows read per statement of a walk. */
const CHUNK = 256;

/** A position in the `(status, created_at, id)` index of one status. */
interface CreatedPosition {
	createdAt: number;
	id: string;
}

/**
 * The shard's questions about `updated_at` with no index on it (drizzle/0023), each a walk of
 * `(status, created_at, id)` in ascending order that stops where `created_at <= updated_at` says no
 * later row can answer (engine/index/updated-bounds.ts). What each reads, in rows (docs/decisions.md
 * "One listing index per shard"):
 * - `oldestUpdated`: the entries of the status created by the oldest `updated_at` among them, plus
 *   the rest of a chunk (8 rows first): a few rows when the oldest entry finished soon after it was created;
 * - `updatedBy`: the entries of the status created by the bound, until `limit` of them match;
 * - `deletedBefore`: deletion tombstones created before the bound, from where the last call stopped.
 */
export class UpdatedWalks {
	private readonly chunk;

	constructor(private readonly db: DrizzleSqliteDODatabase) {
		const p = sql.placeholder;
		this.chunk = db
			.select({ id: t.id, createdAt: t.createdAt, updatedAt: t.updatedAt })
			.from(t)
			.where(and(eq(t.status, p('status')), sql`(${t.createdAt}, ${t.id}) > (${p('createdAt')}, ${p('id')})`, lte(t.createdAt, p('createdAtMost'))))
			.orderBy(asc(t.createdAt), asc(t.id))
			.limit(p('limit'))
			.prepare();
	}

	/** One chunk of a status's rows after `from`, created at or before `createdAtMost`. */
	private rows(status: string, from: CreatedPosition, createdAtMost: number, limit = CHUNK): { id: string; createdAt: number; updatedAt: number }[] {
		return this.chunk.all({ status, createdAt: from.createdAt, id: from.id, createdAtMost, limit }) as { id: string; createdAt: number; updatedAt: number }[];
	}

	/** The oldest `updated_at` of the entries in `status` (undefined: none). */
	oldestUpdated(status: WorkflowStatus): number | undefined {
		let oldest: number | undefined;
		let from: CreatedPosition = { createdAt: Number.MIN_SAFE_INTEGER, id: '' };
		// Small first chunks: most often the oldest entry created is (nearly) the oldest updated, and bounds the rest.
		for (let size = 8; ; size = Math.min(size * 2, CHUNK)) {
			// Past the oldest updated_at seen, no row can be older: its created_at is already later.
			const rows = this.rows(status, from, oldest ?? Number.MAX_SAFE_INTEGER, size);
			for (const row of rows) if (oldest === undefined || row.updatedAt < oldest) oldest = row.updatedAt;
			if (rows.length < size) return oldest;
			from = rows.at(-1)!;
		}
	}

	/** The ids of the entries in `status` last changed at or before `updatedAtMost`, oldest created first, at most `limit`. */
	updatedBy(status: WorkflowStatus, updatedAtMost: number, limit: number): string[] {
		const found: string[] = [];
		let from: CreatedPosition = { createdAt: Number.MIN_SAFE_INTEGER, id: '' };
		for (;;) {
			const rows = this.rows(status, from, updatedAtMost);
			for (const row of rows) {
				if (row.updatedAt > updatedAtMost) continue;
				found.push(row.id);
				if (found.length === limit) return found;
			}
			if (rows.length < CHUNK) return found;
			from = rows.at(-1)!;
		}
	}

	/**
	 * Deletion tombstones written before `before` (tombstones without a write time, written before they
	 * carried one, are kept), walked from `from`: at most `limit` ids, having read at most `budget` rows.
	 * Answers where the walk stopped (null: at the end).
	 */
	deletedBefore(before: number, limit: number, budget: number, from: CreatedPosition | null): { ids: string[]; next: CreatedPosition | null } {
		const ids: string[] = [];
		let at: CreatedPosition = from ?? { createdAt: Number.MIN_SAFE_INTEGER, id: '' };
		let read = 0;
		for (;;) {
			const rows = this.rows(DELETED, at, before - 1);
			read += rows.length;
			for (const row of rows) {
				at = row;
				if (row.updatedAt > 0 && row.updatedAt < before) ids.push(row.id);
				if (ids.length === limit) return { ids, next: at };
			}
			if (rows.length < CHUNK) return { ids, next: null };
			if (read >= budget) return { ids, next: at };
		}
	}
}
