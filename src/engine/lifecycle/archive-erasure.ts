import { archiveChunkPrefix, type ArchiveBucket } from './archive';
import { deleteArchivePointer, readArchivePointer } from './archive-pointer';

/**
 * Deletes every archived incarnation of an id (manifests, their chunks, the
 * pointer); false if there was none. The manifests go first, so readers find
 * nothing from then on; the chunks are found by listing, so chunks a crashed
 * write left without a manifest go too; the pointer goes last, so a crash in
 * between leaves it and a repeated erase finds the rest again.
 */
export async function eraseArchive(bucket: ArchiveBucket, id: string): Promise<boolean> {
	const keys = await readArchivePointer(bucket, id);
	if (keys.length === 0) return false;
	await bucket.delete(keys);
	for (const key of keys) await bucket.delete(await bucket.listKeys(archiveChunkPrefix(key)));
	await deleteArchivePointer(bucket, id);
	return true;
}
