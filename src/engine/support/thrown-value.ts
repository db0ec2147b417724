/**
 * Turns anything `run()` or a step throws into a description the engine can
 * always store: a name, a message and a stack, each bounded. Whatever is
 * thrown (a BigInt, a cyclic object, a Symbol, an Error with a 20 MB message,
 * an object whose getters throw), describing it never throws, so the failure
 * path itself cannot fail and leave an instance `running` forever.
 */

/** Longest stored error message; longer ones are cut and marked `… [truncated, N chars]`. */
export const MAX_ERROR_MESSAGE_CHARS = 8 * 1024;
/** Longest stored stack trace. */
export const MAX_ERROR_STACK_CHARS = 16 * 1024;
const MAX_NAME_CHARS = 200;

export interface ThrownDescription {
	name: string;
	message: string;
	stack?: string;
	/** The stable code of a typed error (`NOT_SERIALIZABLE`, `INVALID_DURATION`, …), so clients can match on it. */
	code?: string;
}
const MAX_CODE_CHARS = 100;

/**
 * `value instanceof type`, false where the check itself throws: a thrown
 * Proxy whose `getPrototypeOf` trap throws, or a revoked Proxy, makes a plain
 * `instanceof` throw inside the engine's own failure handling.
 */
export function isInstance<T>(value: unknown, type: abstract new (...args: never[]) => T): value is T {
	try {
		return value instanceof type;
	} catch {
		return false;
	}
}

export function describeThrown(thrown: unknown): ThrownDescription {
	try {
		if (isInstance(thrown, Error)) {
			const name = safeString(() => thrown.name) || 'Error';
			const message = safeString(() => thrown.message);
			const stack = safeString(() => thrown.stack);
			const code = safeString(() => { const c = (thrown as { code?: unknown }).code; return typeof c === 'string' ? c : undefined; });
			return {
				name: truncate(name, MAX_NAME_CHARS),
				message: truncate(message, MAX_ERROR_MESSAGE_CHARS),
				...(stack ? { stack: truncate(stack, MAX_ERROR_STACK_CHARS) } : {}),
				...(code ? { code: truncate(code, MAX_CODE_CHARS) } : {}),
			};
		}
		return { name: 'Error', message: truncate(`thrown value: ${describeValue(thrown)}`, MAX_ERROR_MESSAGE_CHARS) };
	} catch {
		return { name: 'Error', message: 'a thrown value that could not be described' };
	}
}

/** A readable rendering of a non-Error value: JSON where it can be, a tagged form where not. */
function describeValue(value: unknown): string {
	switch (typeof value) {
		case 'string':
			return value;
		case 'bigint':
			return `${value}n`;
		case 'symbol':
			return value.toString();
		case 'undefined':
			return 'undefined';
		case 'function':
			return `[function ${value.name || 'anonymous'}]`;
	}
	// JSON.stringify throws on cycles and BigInt members, and getters may throw: the replacer
	// marks repeated objects and BigInts, and any other failure falls back to a tag.
	const seen = new WeakSet<object>();
	const json = safeString(() =>
		JSON.stringify(value, (_key, member: unknown) => {
			if (typeof member === 'bigint') return `${member}n`;
			if (typeof member === 'object' && member !== null) {
				if (seen.has(member)) return '[Circular]';
				seen.add(member);
			}
			return member;
		}),
	);
	return json || safeString(() => Object.prototype.toString.call(value)) || 'unknown value';
}

function safeString(read: () => unknown): string {
	try {
		const value = read();
		return typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
	} catch {
		return '';
	}
}

function truncate(text: string, max: number): string {
	if (text.length <= max) return text;
	const note = ` … [truncated, ${text.length} chars]`;
	return text.slice(0, max - note.length) + note;
}
