import { ErrorCode, ValidationError } from '../support/errors';
import { assertValidWorkflowId } from '../support/ids';
import type { IndexEntry } from './index-entry';
import { CODE_VERSION_PATTERN } from '../support/ids';
import { toSqlValue, type AttributeKind, type CheckedCondition, type StoredAttributeValue } from './search-attributes';
import { WORKFLOW_STATUSES, type WorkflowStatus } from '../support/statuses';

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
	/** Only ids that start with this (1-100 id characters). */
	idPrefix?: string;
	/** Conditions on search attributes, checked against the type's declaration (`checkAttributeFilters`). */
	attributes?: Record<string, CheckedCondition>;
}

/**
 * The orders a listing can walk, both descending and then by id descending.
 * `createdAt` is the default because it never changes, so a page walk returns
 * every entry that existed before it began exactly once. `updatedAt` moves
 * under the cursor: an entry updated during a walk jumps ahead of it and is
 * skipped (or, moving back, seen twice); it is there for "what changed lately".
 */
export const LIST_ORDERS = ['createdAt', 'updatedAt'] as const;
export type TimeOrder = (typeof LIST_ORDERS)[number];
/**
 * An order by a search attribute: `attr:<name>:asc` or `attr:<name>:desc`, then by createdAt and
 * id in the same direction. It lists only the entries that have the attribute; the value can
 * change under a walk (like updatedAt), so a walk is exact only while values stay put.
 */
export type AttributeOrder = `attr:${string}:${'asc' | 'desc'}`;
export type ListOrder = TimeOrder | AttributeOrder;
export const DEFAULT_ORDER: ListOrder = 'createdAt';

/** The attribute and direction of an attribute order; undefined for a time order. */
export function attributeOrder(order: ListOrder): { name: string; direction: 'asc' | 'desc' } | undefined {
	if (!order.startsWith('attr:')) return undefined;
	const direction = order.endsWith(':asc') ? 'asc' : 'desc';
	return { name: order.slice(5, order.length - direction.length - 1), direction };
}

/**
 * A position in a listing order: the order's timestamp (createdAt for an attribute order),
 * then the id (timestamps are not unique); for an attribute order, the attribute's value first.
 */
export interface ListPosition {
	at: number;
	id: string;
	value?: StoredAttributeValue;
}

/** What one shard is asked: rows strictly after `after` in `order`, at most `limit`. */
export interface ShardListQuery extends ListFilters {
	order: ListOrder;
	limit: number;
	after?: ListPosition;
}

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 1000;

type Positioned = Pick<IndexEntry, 'id' | 'createdAt' | 'updatedAt' | 'attributes'>;

export function positionOf(entry: Positioned, order: ListOrder): ListPosition {
	const byAttribute = attributeOrder(order);
	if (!byAttribute) return { at: entry[order as TimeOrder], id: entry.id };
	return { at: entry.createdAt, id: entry.id, value: entry.attributes?.[byAttribute.name]! };
}

/**
 * Compares two strings as SQLite's BINARY collation does (UTF-8 bytes, which is code point order):
 * JavaScript's `<` compares UTF-16 units, which puts U+E000-U+FFFF after the surrogate pairs.
 */
export function compareText(a: string, b: string): number {
	if (a === b) return 0;
	const n = Math.min(a.length, b.length);
	for (let i = 0; i < n; i++) {
		let x = a.charCodeAt(i);
		let y = b.charCodeAt(i);
		if (x === y) continue;
		if (x >= 0xd800) x += x < 0xe000 ? 0x2000 : -0x800;
		if (y >= 0xd800) y += y < 0xe000 ? 0x2000 : -0x800;
		return x < y ? -1 : 1;
	}
	return a.length - b.length < 0 ? -1 : 1;
}

/** Compares two values of one attribute as the shard's SQL does (booleans as 0 and 1). */
export function compareValues(a: StoredAttributeValue, b: StoredAttributeValue): number {
	const x = toSqlValue(a);
	const y = toSqlValue(b);
	if (typeof x === 'string' && typeof y === 'string') return compareText(x, y);
	// Numbers sort before text in SQLite (a kind changed under stored values: they never mix in one result otherwise).
	if (typeof x === 'number' && typeof y === 'number') return Math.sign(x - y);
	return typeof x === 'number' ? -1 : 1;
}

/** A sort comparator for entries in a listing order (the order the shards answer in). */
export function compareIn(order: ListOrder) {
	const byAttribute = attributeOrder(order);
	if (!byAttribute) {
		const key = order as TimeOrder;
		return (a: Positioned, b: Positioned): number => (a[key] !== b[key] ? b[key] - a[key] : -compareText(a.id, b.id));
	}
	const sign = byAttribute.direction === 'asc' ? 1 : -1;
	const { name } = byAttribute;
	return (a: Positioned, b: Positioned): number => {
		const byValue = compareValues(a.attributes![name]!, b.attributes![name]!);
		if (byValue !== 0) return sign * byValue;
		return sign * (a.createdAt !== b.createdAt ? Math.sign(a.createdAt - b.createdAt) : compareText(a.id, b.id));
	};
}

const ATTRIBUTE_ORDER = /^attr:[A-Za-z][A-Za-z0-9_]{0,63}:(asc|desc)$/;

export function assertValidOrder(order: unknown): asserts order is ListOrder {
	if (!(LIST_ORDERS as readonly unknown[]).includes(order) && !(typeof order === 'string' && ATTRIBUTE_ORDER.test(order))) {
		throw new ValidationError(ErrorCode.InvalidQuery, `unknown order ${JSON.stringify(order)}; use one of ${LIST_ORDERS.join(', ')}, or attr:<name>:asc|desc`);
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
	// `~`: the ids of a group other than the default start with their group part (engine/groups/group-id.ts).
	if (filters.idPrefix !== undefined && (typeof filters.idPrefix !== 'string' || !/^[A-Za-z0-9_.:~-]{1,100}$/.test(filters.idPrefix))) {
		throw new ValidationError(ErrorCode.InvalidQuery, 'idPrefix must be 1-100 characters of A-Z a-z 0-9 _ . : - ~');
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

/** What a shard is asked for a count grouped by an attribute: its name and kind, and the listing's filters. */
export interface AttributeCountRequest {
	attribute: string;
	kind: AttributeKind;
	filters: ListFilters;
}

/** Entries per value of one attribute, in value order; `more`: values past the first MAX_GROUPS were cut. */
export interface AttributeCounts {
	groups: { value: StoredAttributeValue; count: number }[];
	more: boolean;
}

/** An index entry tagged with the shard that answered it. */
export interface ShardRow extends IndexEntry {
	shard: number;
}
