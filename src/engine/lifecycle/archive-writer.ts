import { ARCHIVE_CHUNK_BYTES, ARCHIVE_FORMAT_VERSION, archiveChunkKey, archiveKey, type ArchiveBucket, type ArchiveChunk, type ArchiveManifest } from './archive';
import { addToArchivePointer } from './archive-pointer';
import { HISTORY_FORMAT_VERSION, toHistoryEvent, type HistoryRow } from '../history/history';
import { statusView } from '../views/status-view';
import type { DeletionReason, InstanceRow, InstanceStore } from '../storage/store';

/** Stored bytes (values and details) of history read from the store at once while writing. */
const READ_BATCH_BYTES = 2 * 1024 * 1024;
/** Records read from the store at once while writing, at most. */
const READ_BATCH_RECORDS = 500;
/** The first buffer of a chunk; it doubles up to the chunk size, so a small history costs little. */
const FIRST_BUFFER_BYTES = 64 * 1024;

const utf8 = new TextEncoder();

/**
 * Writes the archive (format version 2, see archive.ts) of an instance about
 * to be deleted and answers its key: the history's chunks first, read from the
 * store a bounded batch at a time, then the manifest with the status, then the
 * id's pointer. At most one chunk (`ARCHIVE_CHUNK_BYTES`), one batch of stored
 * records (`READ_BATCH_BYTES`) and one record's forms are held at once, then
 * the status alone: a few MiB whatever the history's size.
 *
 * A crash part way leaves chunks no manifest lists yet; the retry writes the
 * same keys again (the history of a finished instance only grows at its end,
 * so the chunking is the same up to there), and readers find an incarnation
 * only through its manifest, which is written after its chunks.
 */
export async function writeArchive(bucket: ArchiveBucket, row: InstanceRow, store: InstanceStore, deletedAt: number, reason: DeletionReason): Promise<string> {
	const key = archiveKey(row);
	const writer = new ChunkWriter(bucket, key);
	for (let generation = 0; generation <= row.generation; generation++) {
		for (let afterSeq = 0; ; ) {
			const rows = readBatch(store, generation, afterSeq);
			if (rows.length === 0) break;
			for (const record of rows) await writer.add(record);
			afterSeq = rows.at(-1)!.seq;
		}
	}
	const chunks = await writer.finish();
	const status = statusView(row, store);
	const manifest: ArchiveManifest = {
		formatVersion: ARCHIVE_FORMAT_VERSION,
		historyFormatVersion: HISTORY_FORMAT_VERSION,
		id: row.id,
		type: row.type,
		generation: row.generation,
		status,
		deletedAt,
		reason,
		chunks,
	};
	await bucket.put(key, JSON.stringify(manifest), {
		contentType: 'application/json',
		metadata: { id: row.id, type: row.type, status: status.status, reason, formatVersion: String(ARCHIVE_FORMAT_VERSION) },
	});
	await addToArchivePointer(bucket, row.id, key);
	return key;
}

/** The next records of one generation: as many as fit `READ_BATCH_BYTES` (at least one). */
function readBatch(store: InstanceStore, generation: number, afterSeq: number): HistoryRow[] {
	const metas = store.readHistoryMeta({ generation, afterSeq, limit: READ_BATCH_RECORDS });
	let budget = READ_BATCH_BYTES;
	let take = 0;
	for (const meta of metas) {
		if (take > 0 && meta.bytes > budget) break;
		budget -= meta.bytes;
		take++;
	}
	return take === 0 ? [] : store.readHistory({ generation, afterSeq, limit: take });
}

/**
 * Cuts the history into chunks of at most `ARCHIVE_CHUNK_BYTES` of JSON Lines,
 * one generation per chunk, and writes each once it is full. Records are
 * encoded straight into the chunk's buffer, so a chunk is never held twice.
 */
class ChunkWriter {
	private readonly written: ArchiveChunk[] = [];
	private buffer: Uint8Array | undefined;
	private used = 0;
	private open: Omit<ArchiveChunk, 'bytes'> | undefined;

	constructor(
		private readonly bucket: ArchiveBucket,
		private readonly key: string,
		private readonly chunkBytes = ARCHIVE_CHUNK_BYTES,
	) {}

	async add(row: HistoryRow): Promise<void> {
		if (this.open && this.open.generation !== row.generation) await this.flush();
		const line = `${JSON.stringify(toHistoryEvent(row))}\n`;
		if (this.append(line, row)) return;
		await this.flush();
		if (this.append(line, row)) return;
		// Larger than a whole chunk: a chunk of its own.
		const body = utf8.encode(line);
		await this.put(body, { generation: row.generation, firstSeq: row.seq, lastSeq: row.seq, records: 1, bytes: body.byteLength });
	}

	/** Writes the last chunk; answers every chunk written, in order. */
	async finish(): Promise<ArchiveChunk[]> {
		await this.flush();
		return this.written;
	}

	/** Appends a record to the open chunk; false if the chunk cannot take it. */
	private append(line: string, row: HistoryRow): boolean {
		for (;;) {
			this.buffer ??= new Uint8Array(Math.min(this.chunkBytes, FIRST_BUFFER_BYTES));
			const { read, written } = utf8.encodeInto(line, this.buffer.subarray(this.used));
			if (read === line.length) {
				this.used += written;
				break;
			}
			if (this.buffer.byteLength >= this.chunkBytes) return false;
			// A UTF-16 unit takes at most 3 bytes of UTF-8.
			const grown = new Uint8Array(Math.min(this.chunkBytes, Math.max(this.buffer.byteLength * 2, this.used + line.length * 3)));
			grown.set(this.buffer.subarray(0, this.used));
			this.buffer = grown;
		}
		this.open = this.open
			? { ...this.open, lastSeq: row.seq, records: this.open.records + 1 }
			: { generation: row.generation, firstSeq: row.seq, lastSeq: row.seq, records: 1 };
		return true;
	}

	private async flush(): Promise<void> {
		if (!this.open) return;
		const chunk: ArchiveChunk = { ...this.open, bytes: this.used };
		const body = this.buffer!.subarray(0, this.used);
		this.open = undefined;
		this.buffer = undefined;
		this.used = 0;
		await this.put(body, chunk);
	}

	private async put(body: Uint8Array, chunk: ArchiveChunk): Promise<void> {
		await this.bucket.put(archiveChunkKey(this.key, this.written.length), body, { contentType: 'application/x-ndjson' });
		this.written.push(chunk);
	}
}
