import { ErrorCode, ValidationError } from './errors';
import type { IndexEntry } from './index-entry';
import { WORKFLOW_STATUSES, type WorkflowStatus } from './types';

/** Filters of an index listing; every bound is in ms since the epoch, exclusive. */
export interface ListFilters {
	status?: WorkflowStatus[];
	createdAfter?: number;
	createdBefore?: number;
	updatedAfter?: number;
	updatedBefore?: number;
}

/** A position in the listing order (updatedAt desc, then id desc). */
export interface ListPosition {
	updatedAt: number;
	id: string;
}

/** What one shard is asked: rows strictly after `after`, at most `limit`. */
export interface ShardListQuery extends ListFilters {
	limit: number;
	after?: ListPosition;
}

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 1000;

/** True when `a` comes before `b` in the listing order. */
export function comesBefore(a: ListPosition, b: ListPosition): boolean {
	return a.updatedAt !== b.updatedAt ? a.updatedAt > b.updatedAt : a.id > b.id;
}

export function compareEntries(a: ListPosition, b: ListPosition): number {
	return comesBefore(a, b) ? -1 : comesBefore(b, a) ? 1 : 0;
}

/** Checks filters coming from a caller; the shard trusts what passes. */
export function assertValidFilters(filters: ListFilters): void {
	for (const status of filters.status ?? []) {
		if (!(WORKFLOW_STATUSES as readonly string[]).includes(status)) {
			throw new ValidationError(ErrorCode.InvalidQuery, `unknown status ${JSON.stringify(status)}; use one of ${WORKFLOW_STATUSES.join(', ')}`);
		}
	}
	for (const key of ['createdAfter', 'createdBefore', 'updatedAfter', 'updatedBefore'] as const) {
		const value = filters[key];
		if (value !== undefined && !Number.isSafeInteger(value)) {
			throw new ValidationError(ErrorCode.InvalidQuery, `${key} must be a whole number of milliseconds since the epoch`);
		}
	}
}

export function assertValidLimit(limit: number): void {
	if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
		throw new ValidationError(ErrorCode.InvalidQuery, `limit must be a whole number from 1 to ${MAX_LIMIT}`);
	}
}

/** An index entry tagged with the shard that answered it. */
export interface ShardRow extends IndexEntry {
	shard: number;
}
