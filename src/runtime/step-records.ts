import type { HistoryKind, HistoryMeta, HistoryRow, NewHistoryRow } from '../engine/history/history';
import type { StepRow } from '../engine/storage/store';

/**
 * The history records a `steps` row stands for (drizzle/0013, docs/decisions.md "A step's
 * records in its row"). A new step's first write keeps its `step.started` (attempt 1), and its
 * `step.completed` when the attempt settled before anything was written, in the row instead
 * of in `history`: `record_seq` is the started record's history seq, `record_count` 1 or 2
 * (the completed record at `record_seq + 1`), `record_generation` their generation. Seqs are
 * allocated from the history's one counter, so `history` and these records together are the
 * history, with no seq missing or twice; the readers below merge them in seq order, and a
 * row's records go into `history` (`materialiseSql`) before the row is deleted. The store puts
 * records in a row only when its `seq` is above every row's (`DrizzleInstanceStore.insertStep`),
 * so the rows' records ascend with `seq`, the rowid: the readers walk the rowid and stop at
 * their limit instead of sorting every row after `afterSeq` (no index on `record_seq`: it
 * would be a third row written per step).
 */

/** The records of a new step's first write that its row can stand for (0, 1 or 2): the rest are appended. */
export function recordsInRow(row: StepRow, records: readonly NewHistoryRow[]): 0 | 1 | 2 {
	const [started, completed] = records;
	if (!started || !isStarted(row, started)) return 0;
	return completed && completed.generation === started.generation && isCompleted(row, completed) ? 2 : 1;
}

function isStarted(row: StepRow, record: NewHistoryRow): boolean {
	return record.kind === 'step.started' && record.step === row.name && record.attempt === 1 && record.at === row.startedAt && record.value === null && record.detail === null;
}

function isCompleted(row: StepRow, record: NewHistoryRow): boolean {
	return (
		record.kind === 'step.completed' && row.status === 'completed' && row.attempts === 1 && record.step === row.name && record.attempt === 1 &&
		record.at === row.finishedAt && record.value === row.result && record.detail === null
	);
}

/** The columns of a record from each source, as `history` has them (`bytes`: what `historyRecordBytes` counts). */
const FROM_HISTORY = 'seq, generation, at, kind, step, attempt, value, detail';
const FROM_STARTED = "record_seq AS seq, record_generation AS generation, started_at AS at, 'step.started' AS kind, name AS step, 1 AS attempt, NULL AS value, NULL AS detail";
const FROM_COMPLETED = "record_seq + 1 AS seq, record_generation AS generation, finished_at AS at, 'step.completed' AS kind, name AS step, 1 AS attempt, result AS value, NULL AS detail";
const META_HISTORY = 'seq, coalesce(octet_length(value), 0) + coalesce(octet_length(detail), 0) AS bytes';
const META_STARTED = 'record_seq AS seq, 0 AS bytes';
const META_COMPLETED = 'record_seq + 1 AS seq, coalesce(octet_length(result), 0) AS bytes';

/** What a merged read asks: records after `afterSeq`, of one generation or of some kinds, at most `limit`. */
interface RecordQuery {
	afterSeq: number;
	limit: number;
	generation?: number;
	kinds?: readonly HistoryKind[];
}

/**
 * One statement that reads records from `history` and from the rows, in seq order: each source
 * is walked in rowid order by its own sub-select that stops at `limit` (`history` from
 * `afterSeq`; `steps` from its first row, skipping the rows whose records are at or before
 * `afterSeq` by their leading columns, never the large values after them), and the union is
 * ordered and cut once more.
 */
function mergedQuery(shape: 'rows' | 'meta', query: RecordQuery): { sql: string; bindings: SqlStorageValue[] } {
	const bindings: SqlStorageValue[] = [];
	const parts: string[] = [];
	const source = (columns: string, table: string, seqColumn: string, where: string[], kind: HistoryKind | undefined) => {
		// Both tables' rowid orders are seq orders (see above): no sort before the limit.
		const rowid = table === 'history' ? 'seq' : 'steps.seq';
		if (kind !== undefined && query.kinds && !query.kinds.includes(kind)) return;
		const conditions = [...where, `${seqColumn} > ?`];
		bindings.push(query.afterSeq);
		if (query.generation !== undefined) {
			conditions.push(`${table === 'history' ? 'generation' : 'record_generation'} = ?`);
			bindings.push(query.generation);
		}
		if (kind === undefined && query.kinds) {
			conditions.push('kind IN (SELECT value FROM json_each(?))');
			bindings.push(JSON.stringify(query.kinds));
		}
		parts.push(`SELECT * FROM (SELECT ${columns} FROM ${table} WHERE ${conditions.join(' AND ')} ORDER BY ${rowid} LIMIT ?)`);
		bindings.push(query.limit);
	};
	const rows = shape === 'rows';
	source(rows ? FROM_HISTORY : META_HISTORY, 'history', 'seq', [], undefined);
	source(rows ? FROM_STARTED : META_STARTED, 'steps', 'record_seq', ['record_seq IS NOT NULL'], 'step.started');
	source(rows ? FROM_COMPLETED : META_COMPLETED, 'steps', 'record_seq + 1', ['record_count = 2'], 'step.completed');
	bindings.push(query.limit);
	return { sql: `${parts.join(' UNION ALL ')} ORDER BY seq LIMIT ?`, bindings };
}

export function recordsQuery(query: RecordQuery): { sql: string; bindings: SqlStorageValue[] } {
	return mergedQuery('rows', query);
}

export function recordMetaQuery(query: RecordQuery): { sql: string; bindings: SqlStorageValue[] } {
	return mergedQuery('meta', query);
}

/** A row of `recordsQuery` as the engine reads it. */
export function toHistoryRow(row: Record<string, SqlStorageValue>): HistoryRow {
	return row as unknown as HistoryRow;
}

export function toHistoryMeta(row: Record<string, SqlStorageValue>): HistoryMeta {
	return row as unknown as HistoryMeta;
}

/** The last seq of the history (records of both sources), and the bytes of the records after `?` (bound twice). */
export const HISTORY_TAIL_SQL =
	'SELECT (SELECT coalesce(sum(coalesce(octet_length(value), 0) + coalesce(octet_length(detail), 0)), 0) FROM history WHERE seq > ?) + ' +
	'(SELECT coalesce(sum(coalesce(octet_length(result), 0)), 0) FROM steps WHERE record_count = 2 AND record_seq + 1 > ?) AS bytes, ' +
	'max(coalesce((SELECT max(seq) FROM history), 0), coalesce((SELECT max(record_seq + record_count - 1) FROM steps), 0)) AS last_seq';

/** A new step's first write when its row stands for records: a plain INSERT (the key has no row: the engine loaded them all). */
export const INSERT_STEP_SQL =
	'INSERT INTO steps (seq, key, name, kind, status, attempts, result, error_name, error_message, error_stack, error_code, started_at, finished_at, wake_at, sensitive, record_seq, record_count, record_generation) ' +
	'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

/**
 * The same INSERT for the common row, a `do` step whose first attempt completed with both its records in the row, nothing
 * about an error, no wake-up: the constant columns are in the text and the key is built from the name, so 7 values are
 * bound instead of 18. Every bound value is a conversion into the runtime's SQLite, and on this path they cost more than
 * the write itself: 2,000 such rows took 0.017-0.020 ms each with 18 bound values against 0.009-0.010 with 5
 * (docs/decisions.md "Hand-written SQL on a step's hot path"). Bound: seq, name, result, started_at, finished_at,
 * record_seq, record_generation.
 */
export const INSERT_COMPLETED_DO_STEP_SQL =
	'INSERT INTO steps (seq, key, name, kind, status, attempts, result, started_at, finished_at, sensitive, record_seq, record_count, record_generation) ' +
	"VALUES (?1, 'do:' || ?2, ?2, 'do', 'completed', 1, ?3, ?4, ?5, 0, ?6, 2, ?7)";

/** Whether `INSERT_COMPLETED_DO_STEP_SQL` writes `row` exactly (its constants and its key built from the name). */
export function isPlainCompletedDoStep(row: StepRow, inRow: number): boolean {
	return (
		inRow === 2 && row.kind === 'do' && row.status === 'completed' && row.attempts === 1 && !row.sensitive && row.key === `do:${row.name}` &&
		row.errorName === null && row.errorMessage === null && row.errorStack === null && row.errorCode === null && row.wakeAt === null
	);
}

/**
 * Copies the records of the rows about to be deleted (`where`, on `steps`) into `history`, at
 * their seqs: a restart deletes the old generation's steps, and its history stays readable.
 */
export function materialiseSql(where: string): string {
	return (
		`INSERT INTO history (seq, generation, at, kind, step, attempt, value, detail) ` +
		`SELECT ${FROM_STARTED} FROM steps WHERE record_seq IS NOT NULL AND (${where}) ` +
		`UNION ALL SELECT ${FROM_COMPLETED} FROM steps WHERE record_count = 2 AND (${where})`
	);
}
