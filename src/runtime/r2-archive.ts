import type { ArchiveBucket } from '../engine/lifecycle/archive';
import { eraseArchive as eraseArchived } from '../engine/lifecycle/archive-erasure';
import { readLatestArchive, type ArchivedInstance } from '../engine/lifecycle/archive-reader';

/** The optional binding that turns the archive on: an R2 bucket (docs/operations.md "Retention and deletion"). */
export interface ArchiveEnv {
	ARCHIVE?: R2Bucket;
}

/** R2 deletes at most this many keys per call. */
const R2_DELETE_BATCH = 1000;

/**
 * The archive's object store over an R2 bucket. The format (manifest, chunks,
 * pointer) is the engine's (engine/lifecycle/archive.ts); this only moves bounded bodies.
 */
export function r2Archive(bucket: R2Bucket): ArchiveBucket {
	return {
		async put(key, body, { contentType, metadata }) {
			await bucket.put(key, body, { httpMetadata: { contentType }, ...(metadata ? { customMetadata: metadata } : {}) });
		},
		async getText(key) {
			const object = await bucket.get(key);
			return object ? object.text() : undefined;
		},
		async listKeys(prefix) {
			const keys: string[] = [];
			for (let cursor: string | undefined; ; ) {
				const listing = await bucket.list({ prefix, ...(cursor !== undefined ? { cursor } : {}) });
				keys.push(...listing.objects.map((o) => o.key));
				if (!listing.truncated) return keys;
				cursor = listing.cursor;
			}
		},
		async delete(keys) {
			for (let i = 0; i < keys.length; i += R2_DELETE_BATCH) await bucket.delete(keys.slice(i, i + R2_DELETE_BATCH));
		},
	};
}

/** The latest archived incarnation of an id, or undefined: its status read, its history read page by page on demand. */
export function readArchive(bucket: R2Bucket, id: string): Promise<ArchivedInstance | undefined> {
	return readLatestArchive(r2Archive(bucket), id);
}

/** Deletes every archived incarnation of an id and its pointer; false if there was none. */
export function eraseArchive(bucket: R2Bucket, id: string): Promise<boolean> {
	return eraseArchived(r2Archive(bucket), id);
}
