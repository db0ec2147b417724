/**
 * The part of an R2 bucket the archive uses, in memory, measuring what passes
 * through it: the largest body handed to one `put` and every object read (key
 * and bytes). Bodies are copied, as R2 does, so a writer that reuses a buffer
 * after `put` resolves is not caught out by the fake.
 */
export class FakeR2Bucket {
	readonly objects = new Map<string, Uint8Array>();
	/** The largest single body one `put` was handed, in bytes. */
	largestPut = 0;
	/** Bytes put in all. */
	bytesPut = 0;
	/** Every object read, in order. */
	reads: { key: string; bytes: number }[] = [];
	/** A write of a key this answers true for fails (a bucket that gives out part way). */
	failPut: (key: string) => boolean = () => false;

	async put(key: string, value: string | ArrayBuffer | ArrayBufferView): Promise<{ key: string }> {
		if (this.failPut(key)) throw new Error('archive bucket unavailable');
		const body = typeof value === 'string' ? new TextEncoder().encode(value) : value instanceof ArrayBuffer ? new Uint8Array(value.slice(0)) : new Uint8Array(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength));
		this.largestPut = Math.max(this.largestPut, body.byteLength);
		this.bytesPut += body.byteLength;
		this.objects.set(key, body);
		return { key };
	}

	async get(key: string) {
		const body = this.objects.get(key);
		if (!body) return null;
		this.reads.push({ key, bytes: body.byteLength });
		const text = () => new TextDecoder().decode(body);
		return { key, size: body.byteLength, text: async () => text(), json: async <T>() => JSON.parse(text()) as T, arrayBuffer: async () => body.slice().buffer };
	}

	async head(key: string) {
		const body = this.objects.get(key);
		return body ? { key, size: body.byteLength } : null;
	}

	async delete(keys: string | string[]): Promise<void> {
		for (const key of typeof keys === 'string' ? [keys] : keys) this.objects.delete(key);
	}

	async list(options: { prefix?: string; cursor?: string; limit?: number } = {}) {
		const limit = options.limit ?? 1000;
		const keys = [...this.objects.keys()].filter((k) => k.startsWith(options.prefix ?? '')).sort();
		const start = options.cursor ? Number(options.cursor) : 0;
		const page = keys.slice(start, start + limit);
		const truncated = start + limit < keys.length;
		return { objects: page.map((key) => ({ key, size: this.objects.get(key)!.byteLength })), truncated, ...(truncated ? { cursor: String(start + limit) } : {}), delimitedPrefixes: [] };
	}

	/** Bytes read since `reads` was last cleared. */
	bytesRead(): number {
		return this.reads.reduce((sum, r) => sum + r.bytes, 0);
	}
}
