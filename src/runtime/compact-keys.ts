import { MAX_ROW_BYTES, SqlLimitError } from './sql-limits';

/**
 * The keys of the compact instance layout (docs/decisions.md "The compact instance layout"): an
 * instance kept in its object's key-value storage (`ctx.storage.kv`), whose hidden table costs a new
 * object nothing to create, 1 row written per key put or delete. Every key of an instance starts with
 * one of these; a key that orders by a number pads it, so a listing walks it in numeric order.
 */
export const KV = {
	/** The instance record: its row, the pending index entry and the history records folded into it (compact-instance-record.ts). */
	instance: 'i',
	/** The pending index entry written while no instance record exists (the engine always writes the row first; a store's own tests do not). */
	outbox: 'o',
	/** One step per key, by its seq: the step row and the records it stands for. */
	step: 's:',
	/** One history record per key, by its seq: the records nothing else stands for. */
	history: 'h:',
	/** A wake-up per step key. */
	wakeup: 'w:',
	/** A buffered event per key, by its seq. */
	event: 'e:',
	/** An idempotency key of an event send per key. */
	eventKey: 'k:',
	/** The count of events dropped over the instance's life. */
	dropped: 'd',
	/** The deletion in progress. */
	deletion: 'x',
	/** The concurrency slot. */
	slot: 'c',
	/** An inline child's row per key: the child's id (URI-encoded, so ':' separates) and the row's key. */
	inline: 'n:',
} as const;

/** Every seq is a non-negative integer below 10^12: padded, keys order as their numbers do. */
export function seqKey(prefix: string, seq: number): string {
	return prefix + String(seq).padStart(12, '0');
}

export function seqOf(key: string, prefix: string): number {
	return Number(key.slice(prefix.length));
}

export function inlinePrefix(childId: string): string {
	return `${KV.inline}${encodeURIComponent(childId)}:`;
}

/**
 * A string this long or longer is kept as its UTF-8 bytes: the runtime serialises a string with a
 * character outside Latin-1 as UTF-16, two bytes a character, so a 1 MiB result of ASCII and one
 * emoji would take 2 MiB and cross production's 2 MB per key and value. UTF-8 keeps every value
 * within the byte limits the engine checks (docs/deploying.md "Production limits").
 */
const PACK_CHARS = 16 * 1024;
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

export type Packed = string | Uint8Array | null;

export function pack(text: string | null): Packed {
	return text !== null && text.length >= PACK_CHARS ? utf8.encode(text) : text;
}

export function unpack(value: Packed | undefined): string | null {
	if (value === undefined || value === null) return null;
	return typeof value === 'string' ? value : fromUtf8.decode(value);
}

/** UTF-8 bytes of a packed value, without decoding a packed one. */
export function packedBytes(value: Packed | undefined): number {
	if (value === undefined || value === null) return 0;
	if (typeof value !== 'string') return value.byteLength;
	// eslint-disable-next-line no-control-regex
	return /^[\x00-\x7f]*$/.test(value) ? value.length : utf8.encode(value).byteLength;
}

/**
 * The most a value may take as the runtime serialises it, bounded from above: strings at two bytes a
 * character (UTF-16; packed ones are bytes), a few bytes of framing per field. Production refuses a
 * key and value above 2 MB (Durable Objects limits, SQLite backend), `wrangler dev` does not: a value
 * that could cross it is refused here first, as runtime/sql-limits.ts does for a statement.
 */
export function checkValue(key: string, value: unknown): void {
	const bytes = upperBytes(value, 0);
	if (bytes + key.length > MAX_ROW_BYTES) {
		throw new SqlLimitError(`a stored value of up to ${bytes} bytes under "${key.slice(0, 40)}" could exceed the ${MAX_ROW_BYTES} bytes a Durable Object stores per key in production`);
	}
}

function upperBytes(value: unknown, depth: number): number {
	if (typeof value === 'string') return value.length * 2 + 8;
	if (value === null || value === undefined || typeof value !== 'object') return 9;
	if (ArrayBuffer.isView(value)) return value.byteLength + 16;
	if (depth > 4) return 0;
	let bytes = 8;
	if (Array.isArray(value)) for (const item of value) bytes += upperBytes(item, depth + 1);
	else {
		// Every put's value is walked: `for...in` reads the same own fields as `Object.entries` (a stored value is a plain object) without an array per field.
		const fields = value as Record<string, unknown>;
		for (const field in fields) bytes += field.length * 2 + upperBytes(fields[field], depth + 1);
	}
	return bytes;
}
