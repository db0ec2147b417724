/**
 * The bytes a value takes as the key-value storage of a Durable Object keeps it: the runtime stores a value as V8's
 * structured serialization (ValueSerializer), whose size this computes without serializing (workerd offers no way to
 * serialize a value from a Worker). Checked byte for byte against Node's `v8.serialize`, which is the same serializer
 * (test/engine/compact-codec.test.ts), and against the page a record takes in workerd (test/runtime/compact-record-page.test.ts).
 *
 * The instance record rides a step only while it stays within its SQLite page (compact-folded-steps.ts
 * `RECORD_PAGE_BYTES`): JSON characters measured that before, but a JSON character is not a stored byte (a 13-digit
 * time is 9 bytes stored, a small number 2 or 3, every string 2 more than its characters), so the bound in characters
 * had to keep a wide margin.
 */
export function storedBytes(value: unknown): number {
	// The serializer's header: a version tag and its version.
	return 2 + bytesOf(value);
}

function varint(n: number): number {
	let bytes = 1;
	while (n >= 0x80) {
		n = Math.floor(n / 0x80);
		bytes++;
	}
	return bytes;
}

// eslint-disable-next-line no-control-regex
const LATIN1 = /^[\x00-\xff]*$/;

function stringBytes(text: string): number {
	if (LATIN1.test(text)) return 1 + varint(text.length) + text.length;
	// Two bytes a character, and a padding byte when the length's varint leaves the characters unaligned.
	const length = text.length * 2;
	return 1 + varint(length) + length + 1;
}

/** A small integer (a V8 Smi) is a zigzag varint; any other number a double. */
function numberBytes(n: number): number {
	if (Number.isInteger(n) && n >= -(2 ** 30) && n < 2 ** 30 && !Object.is(n, -0)) return 1 + varint(n >= 0 ? n * 2 : -n * 2 - 1);
	return 9;
}

function keyBytes(key: string): number {
	// An array index-like key is serialized as a number.
	return /^(0|[1-9]\d{0,8})$/.test(key) ? numberBytes(Number(key)) : stringBytes(key);
}

function bytesOf(value: unknown): number {
	if (value === null || value === undefined || value === true || value === false) return 1;
	if (typeof value === 'number') return numberBytes(value);
	if (typeof value === 'string') return stringBytes(value);
	if (value instanceof Uint8Array) {
		// The buffer (tag, length, bytes), then the view on it (tag, type, offset, length, flags).
		return 1 + varint(value.buffer.byteLength) + value.buffer.byteLength + 1 + 1 + varint(value.byteOffset) + varint(value.byteLength) + 1;
	}
	if (Array.isArray(value)) {
		// A dense array: tag, length, elements, end tag, properties (0), length.
		let bytes = 1 + varint(value.length) + 1 + 1 + varint(value.length);
		for (const item of value) bytes += bytesOf(item);
		return bytes;
	}
	if (typeof value === 'object') {
		let bytes = 1;
		let count = 0;
		for (const [key, item] of Object.entries(value)) {
			if (item === undefined) {
				// Kept as a property holding undefined.
				bytes += keyBytes(key) + 1;
			} else bytes += keyBytes(key) + bytesOf(item);
			count++;
		}
		return bytes + 1 + varint(count);
	}
	throw new TypeError(`storedBytes: a ${typeof value} is not a stored value`);
}
