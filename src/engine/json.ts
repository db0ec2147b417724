import { ErrorCode, ValidationError } from './errors';

/** Largest step result, payload or event accepted, as UTF-8 JSON. */
export const MAX_JSON_BYTES = 1024 * 1024;

const utf8 = new TextEncoder();

/**
 * Serialises a value the engine must store, refusing what JSON cannot carry
 * faithfully (functions, bigint, cycles) and anything over 1 MiB.
 * Returns null for `undefined`, which is stored as "no value".
 */
export function toStoredJson(value: unknown, what: string): string | null {
	if (value === undefined) return null;
	let json: string | undefined;
	try {
		json = JSON.stringify(value);
	} catch (cause) {
		throw new ValidationError(ErrorCode.NotSerializable, `${what} is not JSON-serialisable: ${(cause as Error).message}`, { cause });
	}
	if (json === undefined) {
		throw new ValidationError(ErrorCode.NotSerializable, `${what} is not JSON-serialisable (got ${typeof value})`);
	}
	// Length in UTF-16 units is a cheap lower bound; only encode when it could be near the limit.
	if (json.length * 3 > MAX_JSON_BYTES && utf8.encode(json).byteLength > MAX_JSON_BYTES) {
		throw new ValidationError(ErrorCode.TooLarge, `${what} is larger than the 1 MiB limit`);
	}
	return json;
}

/** The inverse of `toStoredJson`. */
export function fromStoredJson(json: string | null | undefined): unknown {
	return json === null || json === undefined ? undefined : JSON.parse(json);
}
