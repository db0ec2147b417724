import { archiveKey, archivePointerKey, type ArchivePort, type ArchiveRecord } from '../engine/archive';

/** The optional binding that turns the archive on: an R2 bucket (README "Retention and deletion"). */
export interface ArchiveEnv {
	ARCHIVE?: R2Bucket;
}

/** Every archived incarnation of an id, oldest first (the pointer object `shardflow/ids/<id>.json`). */
interface StoredPointer {
	keys: string[];
}

/**
 * The archive over an R2 bucket: the record under its key (which lists by type
 * and creation date), then the id's pointer. Both writes are idempotent, so a
 * crash between them, or after them and before the storage is deleted, is
 * repaired by writing both again: the same keys, nothing duplicated.
 */
export function r2Archive(bucket: R2Bucket): ArchivePort {
	return {
		async put(record) {
			const key = archiveKey(record);
			await bucket.put(key, JSON.stringify(record), {
				httpMetadata: { contentType: 'application/json' },
				customMetadata: { id: record.id, type: record.type, status: record.status.status, reason: record.reason },
			});
			const pointer = await readPointer(bucket, record.id);
			if (!pointer.keys.includes(key)) {
				await bucket.put(archivePointerKey(record.id), JSON.stringify({ keys: [...pointer.keys, key] } satisfies StoredPointer), {
					httpMetadata: { contentType: 'application/json' },
				});
			}
			return key;
		},
	};
}

/** The latest archived incarnation of an id, or undefined. */
export async function readArchive(bucket: R2Bucket, id: string): Promise<ArchiveRecord | undefined> {
	const { keys } = await readPointer(bucket, id);
	for (const key of keys.toReversed()) {
		const object = await bucket.get(key);
		if (object) return (await object.json()) as ArchiveRecord;
	}
	return undefined;
}

/** Deletes every archived incarnation of an id and its pointer; false if there was none. */
export async function eraseArchive(bucket: R2Bucket, id: string): Promise<boolean> {
	const { keys } = await readPointer(bucket, id);
	if (keys.length === 0) return false;
	// Records first: a crash in between leaves the pointer, and a repeated erase finds them again.
	await bucket.delete(keys);
	await bucket.delete(archivePointerKey(id));
	return true;
}

async function readPointer(bucket: R2Bucket, id: string): Promise<StoredPointer> {
	const object = await bucket.get(archivePointerKey(id));
	if (!object) return { keys: [] };
	const stored = (await object.json()) as Partial<StoredPointer>;
	return { keys: Array.isArray(stored.keys) ? stored.keys.filter((k): k is string => typeof k === 'string') : [] };
}
