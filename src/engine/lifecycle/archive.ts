import type { HistoryEvent, HISTORY_FORMAT_VERSION } from '../history/history';
import type { DeletionReason } from '../storage/store';
import type { WorkflowStatusInfo } from '../definition/types';

/**
 * The archive of a deleted instance: what `GET /workflows/:id` and its history
 * answer once the instance's own storage is gone (docs/history-format.md
 * "Archive"). This module owns its format and its keys; `archive-writer.ts`
 * writes it, `archive-reader.ts` reads it, `archive-pointer.ts` finds it by id.
 *
 * Version 2 is written in bounded parts, so that neither writing nor reading
 * holds a whole history (up to 1 GiB) in an isolate's 128 MiB: a manifest per
 * incarnation (the status and an index of the chunks) and the history as
 * numbered JSON Lines chunks of at most `ARCHIVE_CHUNK_BYTES`. Version 1 (one
 * JSON object with the whole history) is still read.
 *
 * Every key depends only on the instance (type, creation date, id, creation
 * time) and the chunking only on the history, so a write repeated after a
 * crash replaces itself.
 */
export const ARCHIVE_FORMAT_VERSION = 2;

/**
 * The largest chunk: a chunk ends before a record that would take it past this
 * many bytes (a record larger than that, which the 1 MiB value limit rules
 * out today, would get a chunk of its own). A page of history (4 MiB at most)
 * lies in at most two or three chunks.
 */
export const ARCHIVE_CHUNK_BYTES = 4 * 1024 * 1024;

/** One chunk of an archived history: records of one generation, `firstSeq` to `lastSeq`, in seq order. */
export interface ArchiveChunk {
	generation: number;
	firstSeq: number;
	lastSeq: number;
	/** Records in the chunk. */
	records: number;
	/** The chunk object's size (UTF-8 JSON Lines). */
	bytes: number;
}

/** What both versions keep of an incarnation besides its history. */
export interface ArchiveHeader {
	/** The version of the history records' format (docs/history-format.md). */
	historyFormatVersion: typeof HISTORY_FORMAT_VERSION;
	id: string;
	type: string;
	/** The generation that was current (the last run). */
	generation: number;
	/** The status as it was when the deletion began (the latest 100 steps; the history has them all). */
	status: WorkflowStatusInfo;
	deletedAt: number;
	reason: DeletionReason;
}

/** Version 2: the object under `archiveKey`; the history is in the chunks it lists (`archiveChunkKey`). */
export interface ArchiveManifest extends ArchiveHeader {
	formatVersion: 2;
	/** The chunks in seq order; chunk `i` is the object `archiveChunkKey(key, i)`. */
	chunks: ArchiveChunk[];
}

/** Version 1: one object with every record of every generation in seq order (read, no longer written). */
export interface ArchiveRecordV1 extends ArchiveHeader {
	formatVersion: 1;
	history: HistoryEvent[];
}

/**
 * The few object-store calls the archive makes (an R2 bucket in workerd, see
 * runtime/r2-archive.ts). Each body is one bounded part: a chunk, a manifest
 * or a pointer.
 */
export interface ArchiveBucket {
	/** Writes (or replaces) one object. */
	put(key: string, body: string | Uint8Array, options: { contentType: string; metadata?: Record<string, string> }): Promise<void>;
	/** One object's text, or undefined when there is none. */
	getText(key: string): Promise<string | undefined>;
	/** Every key under a prefix, in key order. */
	listKeys(prefix: string): Promise<string[]>;
	/** Deletes these objects (missing ones are no error). */
	delete(keys: string[]): Promise<void>;
}

/** Everything under this prefix is shardflow's. */
export const ARCHIVE_PREFIX = 'shardflow/';

/** How an incarnation is named in every key. */
export interface ArchivedIncarnation {
	type: string;
	id: string;
	createdAt: number;
}

/**
 * `shardflow/workflows/<type>/<yyyy-mm-dd>/<id>/<createdAt>.json`: the manifest
 * (the whole record in version 1). Lists by type, then creation date (UTC),
 * then id; one object per incarnation.
 */
export function archiveKey({ type, id, createdAt }: ArchivedIncarnation): string {
	return `${ARCHIVE_PREFIX}workflows/${incarnationPath({ type, id, createdAt })}.json`;
}

/**
 * `shardflow/history/<type>/<yyyy-mm-dd>/<id>/<createdAt>/`: the chunks of the
 * incarnation whose manifest is `key`. Apart from the manifests, so a listing
 * by type still finds one object per incarnation.
 */
export function archiveChunkPrefix(key: string): string {
	const manifests = `${ARCHIVE_PREFIX}workflows/`;
	if (!key.startsWith(manifests) || !key.endsWith('.json')) throw new Error(`not an archive key: ${key}`);
	return `${ARCHIVE_PREFIX}history/${key.slice(manifests.length, -'.json'.length)}/`;
}

/** Chunk `index` (from 0) of the incarnation whose manifest is `key`: `<prefix>/000000.jsonl`, in key order. */
export function archiveChunkKey(key: string, index: number): string {
	return `${archiveChunkPrefix(key)}${String(index).padStart(6, '0')}.jsonl`;
}

/** `shardflow/ids/<id>.json`: the archived incarnations of an id. */
export function archivePointerKey(id: string): string {
	return `${ARCHIVE_PREFIX}ids/${id}.json`;
}

function incarnationPath({ type, id, createdAt }: ArchivedIncarnation): string {
	const day = new Date(createdAt).toISOString().slice(0, 10);
	return `${type}/${day}/${id}/${createdAt}`;
}
