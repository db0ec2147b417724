import { parseAttributes, type StoredAttributes } from './search-attributes';
import type { WorkflowStatus } from '../support/statuses';

/**
 * What an instance tells its index shard at every status transition.
 * `version` grows with every transition of that instance, so a shard keeps
 * the newest entry even when deliveries arrive out of order.
 */
export interface IndexEntry {
	id: string;
	type: string;
	status: WorkflowStatus;
	/** When this incarnation of the id was created: a deleted id created again starts a new one, whose versions restart. */
	createdAt: number;
	updatedAt: number;
	version: number;
	/**
	 * The run of this incarnation the entry is of: grows on every restart (absent: 0, the first run). The run metrics
	 * count a finish once per generation, so a restart whose new run finishes before its first delivery (the 20 ms
	 * coalescing makes completed -> running -> completed one write, completed -> completed) still counts its finish.
	 */
	generation?: number;
	/** The code version that created the instance (absent or null: none given). */
	codeVersion?: string | null;
	/** The instance that started this one as its child (absent or null: none). */
	parentId?: string | null;
	/** The search attributes set (absent: none); a datetime is ms since the epoch. */
	attributes?: StoredAttributes;
	/**
	 * The instance was deleted: the shards replace its entry with a `__deleted`
	 * tombstone at this (createdAt, version), which no older write can undo and
	 * which a later incarnation of the id replaces.
	 */
	removed?: true;
}

/** Where a tombstone stands: an entry's incarnation and version. `createdAt` 0 means unknown (tombstones written before incarnations counted). */
export interface EntryPosition {
	id: string;
	version: number;
	createdAt?: number;
}

/**
 * The fields of an instance row (storage's `InstanceRow`) an entry is made of, named here
 * because index/ sits below storage/ (docs/architecture.md): the store's outbox holds entries.
 */
export type IndexedRow = Pick<IndexEntry, 'id' | 'type' | 'status' | 'createdAt' | 'updatedAt' | 'version' | 'generation'> & {
	codeVersion?: string | null;
	parentId?: string | null;
	/** Sorted JSON of the search attributes (search-attributes.ts); null while none is set. */
	attributes?: string | null;
};

/** The index entry of an instance row: what its shard should hold. */
export function toIndexEntry(row: IndexedRow): IndexEntry {
	return {
		id: row.id, type: row.type, status: row.status, createdAt: row.createdAt, updatedAt: row.updatedAt, version: row.version,
		...(row.generation ? { generation: row.generation } : {}),
		...(row.codeVersion ? { codeVersion: row.codeVersion } : {}),
		...(row.parentId ? { parentId: row.parentId } : {}),
		...(row.attributes ? { attributes: parseAttributes(row.attributes) } : {}),
	};
}

/** The entry that tells the shards an instance is gone: one version past its last one. */
export function removalEntry(row: IndexedRow): IndexEntry {
	return { ...toIndexEntry(row), version: row.version + 1, removed: true };
}

/**
 * Orders two entries of one id by age: a later incarnation (`createdAt`) is
 * newer whatever its version, within one incarnation the higher version is.
 * The shards apply the same order in SQL (`IndexShardStore.write`).
 */
export function compareEntries(a: { createdAt: number; version: number }, b: { createdAt: number; version: number }): number {
	return a.createdAt !== b.createdAt ? Math.sign(a.createdAt - b.createdAt) : Math.sign(a.version - b.version);
}
