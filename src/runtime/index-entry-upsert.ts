import { sql, type SQL } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import * as schema from '../db/schema';

const { indexEntries: t } = schema;

/** Status of a tombstone left behind when an entry moves to another shard. */
export const MOVED = '__moved';
/** Status of a tombstone left where a deleted instance's entry was. */
export const DELETED = '__deleted';

/**
 * Whether the incoming row (`excluded`) is newer than the stored one: a later
 * incarnation of the id (`created_at`), or the same one at a higher version
 * (`compareEntries`). Tombstones written before incarnations counted have
 * `created_at` 0 and compare by version alone.
 */
export function newer(orEqual: SQL): SQL {
	return sql`CASE WHEN ${t.createdAt} = 0 OR excluded.created_at = 0
		THEN excluded.version > ${t.version} OR (${orEqual} AND excluded.version >= ${t.version})
		ELSE (excluded.created_at, excluded.version) > (${t.createdAt}, ${t.version})
			OR (${orEqual} AND (excluded.created_at, excluded.version) >= (${t.createdAt}, ${t.version})) END`;
}

/** The columns every delivery may change; the indexed ones (status, created_at, parent_id) only when they differ (below). */
const unindexed = {
	type: sql`excluded.type`, updatedAt: sql`excluded.updated_at`, version: sql`excluded.version`, codeVersion: sql`excluded.code_version`,
	attributes: sql`excluded.attributes`, pendingMetrics: sql`excluded.pending_metrics`, generation: sql`excluded.generation`,
};

/**
 * The upserts of a delivery, prepared once per shard object. SQLite rewrites an index's entry when the
 * UPDATE assigns one of its columns, whether or not the value changes, and each is a row written: so a
 * delivery that keeps the entry's status, incarnation and parent (a second `sleeping`, a `running` after
 * `running`) takes `sameKeys`, which leaves the three indexed columns out of its SET and writes 1 row
 * (the entry), where the full one writes 2 (the entry and its `(status, created_at, id)` index entry; 3
 * for a child, whose partial parent index it rewrites too).
 */
export function prepareUpserts(db: DrizzleSqliteDODatabase) {
	const p = sql.placeholder;
	const upsert = (set: Record<string, SQL>) =>
		db
			.insert(t)
			.values({
				id: p('id'), type: p('type'), status: p('status'), createdAt: p('createdAt'), updatedAt: p('updatedAt'), version: p('version'), codeVersion: p('codeVersion'), parentId: p('parentId'),
				attributes: p('attributes'), pendingMetrics: p('pendingMetrics'), generation: p('generation'),
			} as never)
			.onConflictDoUpdate({
				target: t.id,
				set,
				// A move tombstone yields to its own version too: an entry can move back (4 -> 8 -> 4 shards).
				// A deletion tombstone yields only to a later incarnation (its version is past the last entry's).
				setWhere: newer(sql`${t.status} = ${MOVED}`),
			})
			// A row back says the write won (inserted or replaced the stored row); none, it was older.
			.returning({ id: t.id })
			.prepare();
	return {
		full: upsert({ ...unindexed, status: sql`excluded.status`, createdAt: sql`excluded.created_at`, parentId: sql`excluded.parent_id` }),
		sameKeys: upsert(unindexed),
	};
}
