import { checkHistoryQuery, HISTORY_FORMAT_VERSION, toHistoryEvent, type HistoryEvent, type HistoryPage, type HistoryQuery } from './history';
import { utf8Bytes } from './json';
import { STEP_RESULT_BUDGET_BYTES } from './limits';
import { statusView } from './status-view';
import type { DeletionReason, InstanceRow, InstanceStore } from './store';
import type { WorkflowStatusInfo } from './types';

/**
 * The archive of a deleted instance: what `GET /workflows/:id` and its history
 * answer once the instance's own storage is gone. One JSON object per
 * incarnation, written before the storage is deleted (docs/history-format.md
 * "Archive"). Its key depends only on the instance (type, creation date, id,
 * creation time), so a write repeated after a crash replaces itself.
 */
export const ARCHIVE_FORMAT_VERSION = 1;

export interface ArchiveRecord {
	formatVersion: typeof ARCHIVE_FORMAT_VERSION;
	/** The version of the history records' format (docs/history-format.md). */
	historyFormatVersion: typeof HISTORY_FORMAT_VERSION;
	id: string;
	type: string;
	/** The generation that was current (the last run). */
	generation: number;
	/** The status as it was when the deletion began (the latest 100 steps; the history has them all). */
	status: WorkflowStatusInfo;
	/** Every record of every generation, in seq order. */
	history: HistoryEvent[];
	deletedAt: number;
	reason: DeletionReason;
}

/** What an archive keeps under an id, so a read by id needs no listing. */
export interface ArchivePointer {
	key: string;
	type: string;
	createdAt: number;
}

/** Writes and reads archive records (an R2 bucket in workerd). */
export interface ArchivePort {
	/** Writes the record and its pointer by id (overwriting an earlier write of the same incarnation); answers the record's key. */
	put(record: ArchiveRecord): Promise<string>;
}

/** Everything under this prefix is shardflow's. */
export const ARCHIVE_PREFIX = 'shardflow/';

/**
 * `shardflow/workflows/<type>/<yyyy-mm-dd>/<id>/<createdAt>.json`: lists by
 * type, then creation date (UTC), then id; one object per incarnation.
 */
export function archiveKey(record: { type: string; id: string; status: { createdAt: number } }): string {
	const day = new Date(record.status.createdAt).toISOString().slice(0, 10);
	return `${ARCHIVE_PREFIX}workflows/${record.type}/${day}/${record.id}/${record.status.createdAt}.json`;
}

/** `shardflow/ids/<id>.json`: the latest archived incarnation of an id. */
export function archivePointerKey(id: string): string {
	return `${ARCHIVE_PREFIX}ids/${id}.json`;
}

/** Pages of history read at once while building a record. */
const BUILD_PAGE = 500;

/** The record of an instance about to be deleted: its status and its whole history. */
export function buildArchiveRecord(row: InstanceRow, store: InstanceStore, deletedAt: number, reason: DeletionReason): ArchiveRecord {
	const history: HistoryEvent[] = [];
	for (let generation = 0; generation <= row.generation; generation++) {
		for (let afterSeq = 0; ; ) {
			const rows = store.readHistory({ generation, afterSeq, limit: BUILD_PAGE });
			history.push(...rows.map(toHistoryEvent));
			if (rows.length < BUILD_PAGE) break;
			afterSeq = rows.at(-1)!.seq;
		}
	}
	return {
		formatVersion: ARCHIVE_FORMAT_VERSION,
		historyFormatVersion: HISTORY_FORMAT_VERSION,
		id: row.id,
		type: row.type,
		generation: row.generation,
		status: statusView(row, store),
		history,
		deletedAt,
		reason,
	};
}

/** A page of an archived history, with the same query and paging rules as a live one. */
export function archivedHistoryPage(record: ArchiveRecord, query: HistoryQuery = {}): HistoryPage & { archived: true } {
	const { limit, generation, afterSeq } = checkHistoryQuery(query, record.id, record.generation);
	const matching = record.history.filter((e) => e.generation === generation && e.seq > afterSeq);
	// The same byte budget as a live page (at least one record), so an answer always fits RPC.
	let budget = STEP_RESULT_BUDGET_BYTES;
	let take = 0;
	for (const event of matching.slice(0, limit)) {
		const bytes = utf8Bytes(JSON.stringify(event));
		if (take > 0 && bytes > budget) break;
		budget -= bytes;
		take++;
	}
	const events = matching.slice(0, take);
	const last = events.at(-1);
	return {
		id: record.id,
		type: record.type,
		generation,
		formatVersion: HISTORY_FORMAT_VERSION,
		events,
		nextCursor: last !== undefined && matching.length > take ? String(last.seq) : null,
		archived: true,
	};
}
