const FNV_OFFSET_BASIS = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const utf8 = new TextEncoder();

/**
 * 32-bit FNV-1a over the UTF-8 bytes of `input`. `Math.imul` keeps the
 * product in 32 bits; a plain `*` would round to a double and lose the low
 * bits, which skews `% n` towards shard 0 (primitives.test.ts checks the spread).
 */
export function fnv1a32(input: string): number {
	let hash = FNV_OFFSET_BASIS;
	// ASCII (every id the engine makes) is its own UTF-8: no encoding, no allocation.
	for (let i = 0; i < input.length; i++) {
		const code = input.charCodeAt(i);
		if (code > 0x7f) return fnv1a32Bytes(utf8.encode(input));
		hash ^= code;
		hash = Math.imul(hash, FNV_PRIME);
	}
	return hash >>> 0;
}

function fnv1a32Bytes(bytes: Uint8Array): number {
	let hash = FNV_OFFSET_BASIS;
	for (const byte of bytes) {
		hash ^= byte;
		hash = Math.imul(hash, FNV_PRIME);
	}
	return hash >>> 0;
}

/** The index shard that owns `workflowId` when its type has `shardCount` shards. */
export function shardIndex(workflowId: string, shardCount: number): number {
	return fnv1a32(workflowId) % shardCount;
}

// Shard names are built and parsed in object-names.ts.

/** Every shard number a read of this type must ask: the current layout and, while resizing, the previous one. */
export function readShards(entry: { shards: number; previousShards?: number | undefined }): number[] {
	return Array.from({ length: Math.max(entry.shards, entry.previousShards ?? 0) }, (_, n) => n);
}
