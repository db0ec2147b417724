import { ErrorCode, ValidationError } from './errors';
import { assertValidWorkflowId } from './ids';
import type { IndexEntry } from './index-entry';
import { CODE_VERSION_PATTERN } from './registry';
import { WORKFLOW_STATUSES, type WorkflowStatus } from './types';

/** Filters of an index listing; every bound is in ms since the epoch, exclusive. */
export interface ListFilters {
	status?: WorkflowStatus[];
	createdAfter?: number;
	createdBefore?: number;
	updatedAfter?: number;
	updatedBefore?: number;
	/** Only instances created by this code version (the registry's `version`). */
	codeVersion?: string;
	/** Only the children of this instance (those its `step.invoke` / `step.start` started). */
	parent?: string;
}

/**
 * The orders a listing can walk, both descending and then by id descending.
 * `createdAt` is the default because it never changes, so a page walk returns
 * every entry that existed before it began exactly once. `updatedAt` moves
 * under the cursor: an entry updated during a walk jumps ahead of it and is
 * skipped (or, moving back, seen twice); it is there for "what changed lately".
 */
export const LIST_ORDERS = ['createdAt', 'updatedAt'] as const;
export type ListOrder = (typeof LIST_ORDERS)[number];
export const DEFAULT_ORDER: ListOrder = 'createdAt';

/** A position in a listing order: the order's timestamp, then the id (createdAt is not unique). */
export interface ListPosition {
	at: number;
	id: string;
}

/** What one shard is asked: rows strictly after `after` in `order`, at most `limit`. */
export interface ShardListQuery extends ListFilters {
	order: ListOrder;
	limit: number;
	after?: ListPosition;
}

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 1000;

export function positionOf(entry: Pick<IndexEntry, 'id' | 'createdAt' | 'updatedAt'>, order: ListOrder): ListPosition {
	return { at: entry[order], id: entry.id };
}

/** A sort comparator for entries in a listing order. */
export function compareIn(order: ListOrder) {
	return (a: Pick<IndexEntry, 'id' | 'createdAt' | 'updatedAt'>, b: Pick<IndexEntry, 'id' | 'createdAt' | 'updatedAt'>): number =>
		a[order] !== b[order] ? b[order] - a[order] : a.id > b.id ? -1 : a.id < b.id ? 1 : 0;
}

export function assertValidOrder(order: unknown): asserts order is ListOrder {
	if (!(LIST_ORDERS as readonly unknown[]).includes(order)) {
		throw new ValidationError(ErrorCode.InvalidQuery, `unknown order ${JSON.stringify(order)}; use one of ${LIST_ORDERS.join(', ')}`);
	}
}

/** Checks filters coming from a caller; the shard trusts what passes. */
export function assertValidFilters(filters: ListFilters): void {
	for (const status of filters.status ?? []) {
		if (!(WORKFLOW_STATUSES as readonly string[]).includes(status)) {
			throw new ValidationError(ErrorCode.InvalidQuery, `unknown status ${JSON.stringify(status)}; use one of ${WORKFLOW_STATUSES.join(', ')}`);
		}
	}
	if (filters.codeVersion !== undefined && (typeof filters.codeVersion !== 'string' || !CODE_VERSION_PATTERN.test(filters.codeVersion))) {
		throw new ValidationError(ErrorCode.InvalidQuery, 'codeVersion must be 1-64 visible ASCII characters (a registry version)');
	}
	if (filters.parent !== undefined) {
		try {
			assertValidWorkflowId(filters.parent);
		} catch {
			throw new ValidationError(ErrorCode.InvalidQuery, 'parent must be a workflow id (1-100 characters of A-Z a-z 0-9 _ . : -)');
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
