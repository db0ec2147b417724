import { archivePointerKey, type ArchiveBucket } from './archive';

/**
 * The pointer object `shardflow/ids/<id>.json`: the manifest keys of every
 * archived incarnation of an id, oldest first, so a read by id needs no listing.
 */
interface StoredPointer {
	keys: string[];
}

/** The manifest keys of an id's archived incarnations, oldest first (none: an empty list). */
export async function readArchivePointer(bucket: ArchiveBucket, id: string): Promise<string[]> {
	const text = await bucket.getText(archivePointerKey(id));
	if (text === undefined) return [];
	const stored = JSON.parse(text) as Partial<StoredPointer>;
	return Array.isArray(stored.keys) ? stored.keys.filter((k): k is string => typeof k === 'string') : [];
}

/** Adds a manifest key to its id's pointer; a key already there is not added again (a repeated write). */
export async function addToArchivePointer(bucket: ArchiveBucket, id: string, key: string): Promise<void> {
	const keys = await readArchivePointer(bucket, id);
	if (keys.includes(key)) return;
	await bucket.put(archivePointerKey(id), JSON.stringify({ keys: [...keys, key] } satisfies StoredPointer), { contentType: 'application/json' });
}

/** Deletes the pointer (the last step of an erasure). */
export async function deleteArchivePointer(bucket: ArchiveBucket, id: string): Promise<void> {
	await bucket.delete([archivePointerKey(id)]);
}
