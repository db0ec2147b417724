import { archiveChunkKey, type ArchiveBucket, type ArchiveChunk, type ArchiveHeader, type ArchiveManifest, type ArchiveRecordV1 } from './archive';
import { readArchivePointer } from './archive-pointer';
import { checkHistoryQuery, HISTORY_FORMAT_VERSION, type HistoryEvent, type HistoryPage, type HistoryQuery } from '../history/history';
import { utf8Bytes } from '../support/json';
import { STEP_RESULT_BUDGET_BYTES } from '../support/limits';

/** One archived record and its size as a page counts it (its JSON, UTF-8). */
interface ArchivedEvent {
	event: HistoryEvent;
	bytes: number;
}

/**
 * An archived incarnation, opened: its status is read (the manifest), its
 * history is read a chunk at a time, only the chunks a page needs.
 */
export interface ArchivedInstance extends ArchiveHeader {
	/** The history's chunks in seq order (a version-1 record: one per generation, already in memory). */
	chunks: readonly ArchiveChunk[];
	/** The records of chunk `index`. */
	readChunk(index: number): Promise<ArchivedEvent[]>;
}

/** The latest archived incarnation of an id, or undefined. Reads the pointer and one manifest, no history. */
export async function readLatestArchive(bucket: ArchiveBucket, id: string): Promise<ArchivedInstance | undefined> {
	for (const key of (await readArchivePointer(bucket, id)).toReversed()) {
		const archived = await openArchive(bucket, key);
		if (archived) return archived;
	}
	return undefined;
}

/** The incarnation whose manifest (or version-1 record) is `key`, or undefined if there is none. */
export async function openArchive(bucket: ArchiveBucket, key: string): Promise<ArchivedInstance | undefined> {
	const text = await bucket.getText(key);
	if (text === undefined) return undefined;
	const stored = JSON.parse(text) as ArchiveManifest | ArchiveRecordV1;
	switch (stored.formatVersion) {
		case 2:
			return openManifest(bucket, key, stored);
		case 1:
			return openRecordV1(stored);
		default:
			throw new Error(`the archive object ${key} has format version ${String((stored as { formatVersion?: unknown }).formatVersion)}; this shardflow reads versions 1 and 2 (docs/history-format.md "Archive")`);
	}
}

/**
 * A page of an archived history, with the same query and paging rules as a
 * live one (`historyPage`), reading only the chunks that hold it: the first
 * chunk of the generation that ends after `after`, and the next ones while the
 * page is not full.
 */
export async function archivedHistoryPage(archived: ArchivedInstance, query: HistoryQuery = {}): Promise<HistoryPage & { archived: true }> {
	const { limit, generation, afterSeq } = checkHistoryQuery(query, archived.id, archived.generation);
	const events: HistoryEvent[] = [];
	// The same byte budget as a live page (at least one record), so an answer always fits RPC.
	let budget = STEP_RESULT_BUDGET_BYTES;
	let more = false;
	pages: for (const [index, chunk] of archived.chunks.entries()) {
		if (chunk.generation !== generation || chunk.lastSeq <= afterSeq) continue;
		// A full page knows there is more from the index alone: the next chunk is not read.
		if (events.length === limit) {
			more = true;
			break;
		}
		for (const { event, bytes } of await archived.readChunk(index)) {
			if (event.seq <= afterSeq) continue;
			if (events.length === limit || (events.length > 0 && bytes > budget)) {
				more = true;
				break pages;
			}
			budget -= bytes;
			events.push(event);
		}
	}
	const last = events.at(-1);
	return {
		id: archived.id,
		type: archived.type,
		generation,
		formatVersion: HISTORY_FORMAT_VERSION,
		events,
		nextCursor: last !== undefined && more ? String(last.seq) : null,
		archived: true,
	};
}

function openManifest(bucket: ArchiveBucket, key: string, manifest: ArchiveManifest): ArchivedInstance {
	const { formatVersion: _, chunks, ...header } = manifest;
	return {
		...header,
		chunks,
		async readChunk(index) {
			const chunkKey = archiveChunkKey(key, index);
			const text = await bucket.getText(chunkKey);
			if (text === undefined) throw new Error(`the archive chunk ${chunkKey} is missing (its manifest ${key} lists it)`);
			return text
				.split('\n')
				.filter((line) => line !== '')
				.map((line) => ({ event: JSON.parse(line) as HistoryEvent, bytes: utf8Bytes(line) }));
		},
	};
}

/** A version-1 record holds the whole history: one chunk per generation, read from memory. */
function openRecordV1(record: ArchiveRecordV1): ArchivedInstance {
	const { formatVersion: _, history, ...header } = record;
	const generations: ArchivedEvent[][] = [];
	for (const event of history) (generations[event.generation] ??= []).push({ event, bytes: utf8Bytes(JSON.stringify(event)) });
	const present = generations.filter((events) => events !== undefined); // a sparse array: no holes
	return {
		...header,
		chunks: present.map((events) => ({
			generation: events[0]!.event.generation,
			firstSeq: events[0]!.event.seq,
			lastSeq: events.at(-1)!.event.seq,
			records: events.length,
			bytes: events.reduce((sum, e) => sum + e.bytes, 0),
		})),
		readChunk: async (index) => present[index]!,
	};
}
