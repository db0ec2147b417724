import type { SigningKey } from '../support/signing-key';
import { decodeBase64Url, decodeBase64UrlJson, encodeBase64Url, encodeBase64UrlJson } from '../support/base64url-json';
import { ErrorCode, ValidationError } from '../support/errors';
import type { ListFilters, ListOrder, ListPosition } from './index-query';
import { fnv1a32 } from './shard';

/**
 * The one owner of the listing cursor format: `<body>.<signature>`, where the
 * body is base64url JSON of `[version, order, at, id, filterHash]` (plus the
 * attribute's value for an attribute order, `attr:<name>:<direction>`) and the
 * signature is HMAC-SHA256 of the body under the cursor key, base64url.
 * `at` is the entry's timestamp in `order`, so a cursor only makes sense in
 * the order that issued it; the filter hash ties it to the query's filters.
 * The signature is keyed: an unkeyed checksum can be recomputed by anyone who
 * edits a cursor, a MAC cannot without the key.
 */
const VERSION = 2;
const MAX_CURSOR_LENGTH = 600;
const SHAPE = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/;
/** Signed along with the body, so a key used for something else one day cannot mint cursors. */
const DOMAIN = 'shardflow-cursor:';

const utf8 = new TextEncoder();


/** Fresh key material for a generated cursor key: 32 random bytes, base64url. */
export function randomCursorSecret(): string {
	return encodeBase64Url(crypto.getRandomValues(new Uint8Array(32)));
}

/** The HMAC-SHA256 key for a secret (`CURSOR_SECRET`, or generated material). */
export function importCursorKey(secret: string): Promise<SigningKey> {
	return crypto.subtle.importKey('raw', utf8.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
}

function filterHash(type: string | undefined, filters: ListFilters): number {
	const status = [...(filters.status ?? [])].sort().join(',');
	return fnv1a32(
		JSON.stringify([
			type ?? '*', status, filters.createdAfter, filters.createdBefore, filters.updatedAfter, filters.updatedBefore,
			// Only when set, so cursors issued before the filter existed stay valid.
			...(filters.codeVersion !== undefined ? [filters.codeVersion] : []),
			...(filters.parent !== undefined ? [`parent:${filters.parent}`] : []),
			...(filters.idPrefix !== undefined ? [`idPrefix:${filters.idPrefix}`] : []),
			...(filters.attributes !== undefined && Object.keys(filters.attributes).length > 0 ? [`attr:${canonicalJson(filters.attributes)}`] : []),
		]),
	);
}

/** JSON with object keys sorted, so the same conditions hash the same whatever order they were given in. */
function canonicalJson(value: unknown): string {
	if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
	if (typeof value === 'object' && value !== null) {
		return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
	}
	return JSON.stringify(value);
}

export async function encodeCursor(key: SigningKey, position: ListPosition, order: ListOrder, type: string | undefined, filters: ListFilters): Promise<string> {
	// An attribute order adds the attribute's value at the position (a sixth element).
	const parts: unknown[] = [VERSION, order, position.at, position.id, filterHash(type, filters)];
	if (position.value !== undefined) parts.push(position.value);
	const body = encodeBase64UrlJson(parts);
	const signature = new Uint8Array(await crypto.subtle.sign('HMAC', key as CryptoKey, utf8.encode(DOMAIN + body)));
	return `${body}.${encodeBase64Url(signature)}`;
}

export async function decodeCursor(key: SigningKey, cursor: string, order: ListOrder, type: string | undefined, filters: ListFilters): Promise<ListPosition> {
	const invalid = (why: string) =>
		new ValidationError(ErrorCode.InvalidCursor, `invalid cursor: ${why}; pass the nextCursor of the previous page, with the same filters and order`);
	const shape = typeof cursor === 'string' && cursor.length <= MAX_CURSOR_LENGTH ? SHAPE.exec(cursor) : null;
	if (!shape) throw invalid('malformed');
	const [, body, signature] = shape as unknown as [string, string, string];
	// verify() compares in constant time; nothing in the body is trusted before it passes.
	if (!(await crypto.subtle.verify('HMAC', key as CryptoKey, decodeBase64Url(signature), utf8.encode(DOMAIN + body)))) {
		throw invalid('not issued by this API (or signed with another key)');
	}
	let parts: unknown;
	try {
		parts = decodeBase64UrlJson(body);
	} catch {
		throw invalid('malformed');
	}
	const byAttribute = order.startsWith('attr:');
	if (!Array.isArray(parts) || parts.length !== (byAttribute ? 6 : 5)) throw invalid(Array.isArray(parts) && (parts.length === 5 || parts.length === 6) ? 'it belongs to a listing in another order' : 'malformed');
	const [version, cursorOrder, at, id, hash, value] = parts;
	if (byAttribute && !['string', 'number', 'boolean'].includes(typeof value)) throw invalid('malformed');
	if (version !== VERSION || typeof cursorOrder !== 'string' || typeof at !== 'number' || !Number.isSafeInteger(at) || typeof id !== 'string') {
		throw invalid('malformed');
	}
	if (cursorOrder !== order) throw invalid(`it belongs to a listing in ${cursorOrder} order`);
	if (hash !== filterHash(type, filters)) throw invalid('it belongs to a query with other filters');
	return byAttribute ? { at, id, value } : { at, id };
}
