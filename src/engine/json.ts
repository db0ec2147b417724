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

/** Deepest nesting accepted in payloads and events; deeper values overflow serialisers' stacks. */
export const MAX_JSON_DEPTH = 64;

/** Refuses values nested deeper than `MAX_JSON_DEPTH` (checked without recursion). */
export function assertJsonDepth(value: unknown, what: string): void {
	const stack: [unknown, number][] = [[value, 1]];
	while (stack.length) {
		const [current, depth] = stack.pop()!;
		if (typeof current !== 'object' || current === null) continue;
		if (depth > MAX_JSON_DEPTH) {
			throw new ValidationError(ErrorCode.NotSerializable, `${what} is nested deeper than ${MAX_JSON_DEPTH} levels`);
		}
		for (const child of Object.values(current)) stack.push([child, depth + 1]);
	}
}
