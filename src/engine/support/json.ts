import { ErrorCode, ValidationError } from './errors';

/** Largest step result, payload or event accepted, as UTF-8 JSON. */
export const MAX_JSON_BYTES = 1024 * 1024;

const utf8 = new TextEncoder();

/**
 * Serialises a value the engine must store, refusing what JSON would not give
 * back unchanged (see `assertJsonCompatible`) and anything over 1 MiB.
 * Returns null for `undefined`, which is stored as "no value".
 */
export function toStoredJson(value: unknown, what: string): string | null {
	if (value === undefined) return null;
	// Strings, booleans and finite numbers (most step results) need no walk.
	if (typeof value !== 'string' && typeof value !== 'boolean' && !(typeof value === 'number' && Number.isFinite(value))) {
		assertJsonCompatible(value, what);
	}
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

/**
 * Refuses values that a JSON round trip would silently change, so a replay sees
 * what the first run saw: a `Date` would come back as a string, a `Map`, `Set`
 * or class instance as `{}`, `undefined` in an array and NaN/Infinity as null,
 * and functions, symbols, bigints and cycles do not survive at all. Plain
 * objects (also without a prototype), arrays, strings, finite numbers, booleans
 * and null pass; an object property that is `undefined` passes too (JSON leaves
 * it out, and reading it gives `undefined` either way). Nesting is limited to
 * `MAX_JSON_DEPTH` levels, as for payloads.
 */
export function assertJsonCompatible(value: unknown, what: string): void {
	// Both stacks only serve the message: a path string per node would triple the cost, and a
	// cycle is found by the depth limit it always runs into.
	const trail: (string | number)[] = [];
	const ancestors: object[] = [];
	const refuse = (why: string): never => {
		const path = trail
			.map((part) => (typeof part === 'number' ? `[${part}]` : /^[A-Za-z_$][\w$]*$/.test(part) ? `.${part}` : `[${JSON.stringify(part)}]`))
			.join('');
		throw new ValidationError(
			ErrorCode.NotSerializable,
			`${what} is not JSON-compatible: $${path} is ${why}; return plain objects, arrays, strings, finite numbers, booleans or null`,
		);
	};
	const visit = (current: unknown, depth: number): void => {
		switch (typeof current) {
			case 'string':
			case 'boolean':
				return;
			case 'number':
				if (!Number.isFinite(current)) refuse(`${current} (JSON stores it as null)`);
				return;
			case 'object':
				break;
			case 'undefined':
				return refuse('undefined (JSON stores it as null)');
			default:
				return refuse(`a ${typeof current}`);
		}
		if (current === null) return;
		if (depth > MAX_JSON_DEPTH) {
			if (new Set(ancestors).size < ancestors.length || ancestors.includes(current)) refuse('part of a cycle (an object that contains itself)');
			refuse(`nested deeper than ${MAX_JSON_DEPTH} levels`);
		}
		ancestors.push(current);
		if (Array.isArray(current)) {
			if (Object.getPrototypeOf(current) !== Array.prototype) refuse(`an instance of ${current.constructor?.name ?? 'an Array subclass'}`);
			for (let i = 0; i < current.length; i++) {
				trail.push(i);
				visit(current[i], depth + 1);
				trail.pop();
			}
		} else {
			const proto = Object.getPrototypeOf(current);
			if (proto !== Object.prototype && proto !== null) refuse(`a ${(current as object).constructor?.name || 'class instance'} (not a plain object)`);
			for (const key in current) {
				const child = (current as Record<string, unknown>)[key];
				if (child === undefined) continue;
				trail.push(key);
				visit(child, depth + 1);
				trail.pop();
			}
		}
		ancestors.pop();
	};
	visit(value, 1);
}

/** JSON with object keys sorted, so equal values compare equal as text whatever their key order. */
export function canonicalJson(json: string | null): string | null {
	if (json === null) return null;
	return JSON.stringify(JSON.parse(json), (_key, value: unknown) =>
		value !== null && typeof value === 'object' && !Array.isArray(value)
			? Object.fromEntries(Object.keys(value).sort().map((k) => [k, (value as Record<string, unknown>)[k]]))
			: value,
	);
}

/** UTF-8 bytes of stored JSON text (0 for none). */
export function utf8Bytes(json: string | null): number {
	return json === null ? 0 : utf8.encode(json).byteLength;
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
