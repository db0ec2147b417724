import { checkHistoryQuery, HISTORY_FORMAT_VERSION, toHistoryEvent, type HistoryPage, type HistoryQuery } from '../history/history';
import type { InstanceRow, InstanceStore } from '../storage/store';
import { STEP_RESULT_BUDGET_BYTES } from '../support/limits';

/**
 * One page of the history of one generation, in sequence order. A page ends
 * early rather than pass `STEP_RESULT_BUDGET_BYTES` (it always holds at least
 * one record; a value is at most 1 MiB), so an answer always fits RPC.
 */
export function historyPage(row: InstanceRow, store: InstanceStore, query: HistoryQuery = {}): HistoryPage {
	const { limit, generation, afterSeq } = checkHistoryQuery(query, row.id, row.generation);
	const metas = store.readHistoryMeta({ generation, afterSeq, limit: limit + 1 });
	let budget = STEP_RESULT_BUDGET_BYTES;
	let take = 0;
	for (const meta of metas.slice(0, limit)) {
		if (take > 0 && meta.bytes > budget) break;
		budget -= meta.bytes;
		take++;
	}
	const events = take === 0 ? [] : store.readHistory({ generation, afterSeq, limit: take }).map(toHistoryEvent);
	const last = events.at(-1);
	const more = last !== undefined && take < metas.length;
	return {
		id: row.id,
		type: row.type,
		generation,
		formatVersion: HISTORY_FORMAT_VERSION,
		events,
		nextCursor: more ? String(last.seq) : null,
	};
}
