import type { InstanceRow } from './store';
import type { WorkflowStatus } from './types';

/**
 * What an instance tells its index shard at every status transition.
 * `version` grows with every transition of that instance, so a shard keeps
 * the newest entry even when deliveries arrive out of order.
 */
export interface IndexEntry {
	id: string;
	type: string;
	status: WorkflowStatus;
	createdAt: number;
	updatedAt: number;
	version: number;
}

/** The index entry of an instance row: what its shard should hold. */
export function toIndexEntry(row: InstanceRow): IndexEntry {
	return { id: row.id, type: row.type, status: row.status, createdAt: row.createdAt, updatedAt: row.updatedAt, version: row.version };
}
