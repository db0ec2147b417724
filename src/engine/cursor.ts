import { decodeBase64UrlJson, encodeBase64UrlJson } from './base64url-json';
import { ErrorCode, ValidationError } from './errors';
import type { ListFilters, ListOrder, ListPosition } from './index-query';
import { fnv1a32 } from './shard';

/**
 * The one owner of the listing cursor format: base64url JSON of
 * `[version, order, at, id, filterHash, check]`. `at` is the entry's timestamp
 * in `order`, so a cursor only makes sense in the order that issued it. The
 * filter hash ties a cursor to the query that issued it; the check rejects
 * cursors edited by hand.
 */
const VERSION = 2;

function filterHash(type: string | undefined, filters: ListFilters): number {
	const status = [...(filters.status ?? [])].sort().join(',');
	return fnv1a32(
		JSON.stringify([type ?? '*', status, filters.createdAfter, filters.createdBefore, filters.updatedAfter, filters.updatedBefore]),
	);
}

function check(parts: unknown[]): number {
	return fnv1a32(`shardflow-cursor:${JSON.stringify(parts)}`);
}

export function encodeCursor(position: ListPosition, order: ListOrder, type: string | undefined, filters: ListFilters): string {
	const parts = [VERSION, order, position.at, position.id, filterHash(type, filters)];
	return encodeBase64UrlJson([...parts, check(parts)]);
}

export function decodeCursor(cursor: string, order: ListOrder, type: string | undefined, filters: ListFilters): ListPosition {
	const invalid = (why: string) =>
		new ValidationError(ErrorCode.InvalidCursor, `invalid cursor: ${why}; pass the nextCursor of the previous page, with the same filters and order`);
	if (typeof cursor !== 'string' || cursor.length > 600 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid('malformed');
	let parts: unknown;
	try {
		parts = decodeBase64UrlJson(cursor);
	} catch {
		throw invalid('malformed');
	}
	if (!Array.isArray(parts) || parts.length !== 6) throw invalid('malformed');
	const [version, cursorOrder, at, id, hash, sum] = parts;
	if (version !== VERSION || typeof cursorOrder !== 'string' || typeof at !== 'number' || !Number.isSafeInteger(at) || typeof id !== 'string') {
		throw invalid('malformed');
	}
	if (sum !== check(parts.slice(0, 5))) throw invalid('not issued by this API');
	if (cursorOrder !== order) throw invalid(`it belongs to a listing in ${cursorOrder} order`);
	if (hash !== filterHash(type, filters)) throw invalid('it belongs to a query with other filters');
	return { at, id };
}
