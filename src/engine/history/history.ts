import type { RestartFromType } from '../support/step-kinds';
import { ErrorCode, ValidationError } from '../support/errors';
import { fromStoredJson } from '../support/json';
import { HISTORY_PAGE_DEFAULT, HISTORY_PAGE_MAX } from '../support/limits';
import type { ThrownDescription } from '../support/thrown-value';

/**
 * The instance history: one append-only record per thing that happened, in
 * order. It is the contract that the export (`GET /workflows/:id/history`),
 * the dashboard timeline, the test kit's replayer and the archive read; its
 * format is documented in docs/history-format.md and versioned by
 * `HISTORY_FORMAT_VERSION`. A record is written in the same transaction as the
 * state it describes (the instance row, the step row), and never rewritten.
 */
export const HISTORY_FORMAT_VERSION = 1;

/** An error as the history keeps it: bounded (see thrown-value.ts). */
export interface HistoryError {
	name: string;
	message: string;
	code?: string;
	stack?: string;
}

/** The kind-specific fields of each record. */
export interface HistoryEventFields {
	/** `codeVersion`: the registry's version of the type, when it has one. */
	'workflow.created': { payload: unknown; codeVersion?: string; parent?: { id: string; type: string; step: string } };
	/** A pass ran (and wrote) under another code version than the last one: a deploy reached this instance. */
	'workflow.code_changed': { previous: string | null; current: string | null };
	'workflow.paused': {};
	'workflow.resumed': {};
	/** `rollback`: present when the terminate came at the end of rollbacks (or abandoned them). */
	'workflow.terminated': { rollback?: RollbackSummary };
	/**
	 * First record of a new generation; the previous generation's records stay. With
	 * `from` (a restart from a step), `keptSteps` completed steps recorded before it were kept.
	 */
	/** `droppedEvents`: events the old run had buffered and never consumed (a diverged run), dropped by the restart. */
	'workflow.restarted': { previousGeneration: number; from?: string; fromType?: RestartFromType; keptSteps?: number; droppedEvents?: number };
	'workflow.completed': { output: unknown };
	/** `rollback`: present when the rollbacks of the failed run ran first. */
	'workflow.errored': { error: HistoryError; rollback?: RollbackSummary };
	/** Rollbacks begin: `run()` failed for good (`error`) or a terminate asked for them. Status `rolling_back`. */
	'workflow.rolling_back': { reason: 'failed' | 'terminated'; error?: HistoryError };
	/** The code asked for something the recorded steps do not have; nothing new ran (see docs/history-format.md). */
	'workflow.diverged': {
		position: number;
		recorded: { kind: string; name: string } | null;
		requested: { kind: string; name: string };
		/** The code version (the registry's `version` of the type) whose pass diverged; null when the type has none. */
		codeVersion: string | null;
	};
	/** The type's concurrency limit for `key` was reached at create (or restart): the instance waits, status `queued`. */
	'workflow.queued': { key: string };
	/** The limiter granted a slot of `key`: the instance starts (status `created`); `waitedMs` since it queued (0: a slot was free). */
	'slot.acquired': { key: string; waitedMs: number };
	/** The limiter acknowledged the release of the slot (after the instance finished, was terminated or is being deleted). */
	'slot.released': { key: string };
	/** `step.patched` / `step.deprecatePatch` recorded its marker: this run takes the new branch. */
	'patch.recorded': { step: string };
	/** `step.setAttributes` changed the search attributes: `set` what it asked (null clears), `attributes` all of them after it. */
	'attributes.set': { step: string; set: Record<string, unknown>; attributes: Record<string, unknown> };
	/** Buffered events nobody consumed, dropped when the instance finished. */
	'events.dropped': { count: number };
	/** An attempt of `step.do` is about to run (written before the step function runs). */
	'step.started': { step: string; attempt: number };
	'step.completed': { step: string; attempt: number; result: unknown; /** A `sensitive: 'output'` step: `result` is the marker '[REDACTED]'. */ redacted?: true };
	/** The attempt failed and the step retries at `retryAt`. */
	'step.attempt_failed': { step: string; attempt: number; error: HistoryError; retryAt: number };
	/** The step failed for good: retries exhausted, a NonRetryableError, or its last attempt was interrupted. */
	'step.failed': { step: string; attempt: number; error: HistoryError };
	'sleep.started': { step: string; until: number };
	'sleep.finished': { step: string };
	/** A `waitForEvent` found no buffered event and suspended. */
	'wait.started': { step: string; event: string; timeoutAt: number | null };
	'wait.timed_out': { step: string; event: string };
	/** An attempt of a step's rollback is about to run (written before it runs); `step` is the rolled-back step. */
	'rollback.started': { step: string; attempt: number };
	'rollback.completed': { step: string; attempt: number };
	'rollback.attempt_failed': { step: string; attempt: number; error: HistoryError; retryAt: number };
	/** The rollback failed for good; the rollbacks after it do not run. */
	'rollback.failed': { step: string; attempt: number; error: HistoryError };
	/** `step.webhook` issued its URL (stored before `run()` sees it). */
	'webhook.created': { step: string; url: string; expiresAt: number | null };
	/** The one accepted POST to the webhook's URL, with its JSON body. */
	'webhook.received': { step: string; payload: unknown };
	/** `hook.wait()` found the timeout passed before any POST. */
	'webhook.timed_out': { step: string };
	/** `step.invoke` / `step.start` is about to create its child (written before the create is sent). */
	'child.started': { step: string; childId: string; childType: string; mode: 'invoke' | 'start' };
	/** The invoked child completed; `output` is what `invoke` returns (and replays return). */
	'child.completed': { step: string; childId: string; output: unknown };
	/**
	 * The invoked child errored or was terminated (`invoke` throws `ChildWorkflowError`), or its
	 * create was refused (`refused`: a payload its schema rejects, an id of another type; the
	 * step throws `StepFailedError`).
	 */
	'child.failed': { step: string; childId: string; status: 'errored' | 'terminated' | 'refused'; error: { name: string; message: string; code?: string } | null };
	/**
	 * `step.emit` published a custom message on the instance's stream (docs/streams.md). `index`:
	 * 1 for the run's first message, 2 for its second, …; a replay skips the indexes already recorded.
	 */
	'stream.message': { topic: string; data: unknown; index: number };
	/** An event was accepted (and buffered until a wait consumes it). */
	'event.received': { event: string; payload: unknown };
	/** A wait took the oldest buffered event of its name. */
	'event.consumed': { step: string; event: string; payload: unknown };
}

export type HistoryKind = keyof HistoryEventFields;

/** How rollbacks ended, on the record that finishes the instance. */
export interface RollbackSummary {
	state: 'completed' | 'failed' | 'abandoned';
	completed: number;
	failedStep?: string;
}

/** Every record carries these, whatever its kind. */
export interface HistoryEventBase<K extends HistoryKind = HistoryKind> {
	/** Grows by one per record over the instance's whole life (all generations). */
	seq: number;
	/** Milliseconds since the epoch, from the engine's clock. */
	at: number;
	kind: K;
	/** 0 for the first run; a restart starts the next one. */
	generation: number;
}

/** One exported record: a discriminated union on `kind`. */
export type HistoryEvent = { [K in HistoryKind]: HistoryEventBase<K> & HistoryEventFields[K] }[HistoryKind];

/** One page of `GET /workflows/:id/history`. */
export interface HistoryPage {
	id: string;
	type: string;
	generation: number;
	formatVersion: typeof HISTORY_FORMAT_VERSION;
	events: HistoryEvent[];
	/** Pass it as `after` for the next page; null after the last record written so far. */
	nextCursor: string | null;
	/** Present when the instance was deleted and this page is read from its archived record. */
	archived?: true;
}

/**
 * The stored form of a record. `value` holds the one large JSON field of the
 * kinds that have one (payload, result, output) as stored JSON text, so it is
 * written as is; `detail` holds the other fields as a JSON object.
 */
export interface HistoryRow {
	seq: number;
	generation: number;
	at: number;
	kind: HistoryKind;
	step: string | null;
	attempt: number | null;
	value: string | null;
	detail: string | null;
}
export type NewHistoryRow = Omit<HistoryRow, 'seq'>;

/** Characters of a record's `value` and `detail`: what a read bounded by bytes counts. */
export function historyRowChars(row: Pick<HistoryRow, 'value' | 'detail'>): number {
	return (row.value?.length ?? 0) + (row.detail?.length ?? 0);
}

/**
 * The first of `rows` until they hold `maxBytes` characters of `value` and `detail` (the record
 * that reaches it included, and always the first): a read bounded by bytes as well as by count,
 * taken lazily so that a cursor is read no further.
 */
export function takeWithinBytes<R extends Pick<HistoryRow, 'value' | 'detail'>>(rows: Iterable<R>, maxBytes: number | undefined): R[] {
	const taken: R[] = [];
	let chars = 0;
	for (const row of rows) {
		if (maxBytes !== undefined && taken.length > 0 && chars >= maxBytes) break;
		taken.push(row);
		chars += historyRowChars(row);
	}
	return taken;
}
/** A record's size, for paging within a byte budget. */
export interface HistoryMeta {
	seq: number;
	bytes: number;
}

/** The field that `value` holds, per kind. */
const VALUE_FIELD: Partial<Record<HistoryKind, 'payload' | 'result' | 'output' | 'data'>> = {
	'stream.message': 'data',
	'workflow.created': 'payload',
	'step.completed': 'result',
	'event.received': 'payload',
	'event.consumed': 'payload',
	'webhook.received': 'payload',
	'workflow.completed': 'output',
	'child.completed': 'output',
};

/** What the engine appends: the kind, its step and attempt, the stored JSON value, the other fields. */
export interface HistoryRecord {
	kind: HistoryKind;
	step?: string;
	attempt?: number;
	/** Stored JSON text (see `toStoredJson`) of the kind's payload/result/output. */
	value?: string | null;
	detail?: Record<string, unknown>;
	/** When it happened, when that is not the time it is written (a step's `step.started` written once its attempt settled). */
	at?: number;
}

export function historyRow(record: HistoryRecord, generation: number, at: number): NewHistoryRow {
	return {
		generation,
		at: record.at ?? at,
		kind: record.kind,
		step: record.step ?? null,
		attempt: record.attempt ?? null,
		value: record.value ?? null,
		detail: record.detail === undefined ? null : JSON.stringify(record.detail),
	};
}

/** The history form of an error description (its code and stack only when known). */
export function historyError(error: ThrownDescription | { name: string; message: string; code?: string | null; stack?: string | null }): HistoryError {
	return {
		name: error.name,
		message: error.message,
		...(error.code ? { code: error.code } : {}),
		...(error.stack ? { stack: error.stack } : {}),
	};
}

export function toHistoryEvent(row: HistoryRow): HistoryEvent {
	const event: Record<string, unknown> = { seq: row.seq, at: row.at, kind: row.kind, generation: row.generation };
	// A stream message keeps its topic in the step column and its index in the attempt column.
	const message = row.kind === 'stream.message';
	if (row.step !== null) event[message ? 'topic' : 'step'] = row.step;
	if (row.attempt !== null) event[message ? 'index' : 'attempt'] = row.attempt;
	if (row.detail !== null) Object.assign(event, JSON.parse(row.detail));
	const field = VALUE_FIELD[row.kind];
	if (field) event[field] = fromStoredJson(row.value);
	return event as unknown as HistoryEvent;
}

export interface HistoryQuery {
	/** Records after this seq (a previous page's `nextCursor`). */
	after?: string | number | null;
	limit?: number;
	/** Which run; the current one by default. */
	generation?: number;
}

/** A history query's limit, generation (the last one by default) and `after`, checked: the same rules for a live and an archived history. */
export function checkHistoryQuery(query: HistoryQuery, id: string, lastGeneration: number): { limit: number; generation: number; afterSeq: number } {
	const limit = query.limit ?? HISTORY_PAGE_DEFAULT;
	if (!Number.isInteger(limit) || limit < 1 || limit > HISTORY_PAGE_MAX) {
		throw new ValidationError(ErrorCode.InvalidQuery, `limit must be a whole number from 1 to ${HISTORY_PAGE_MAX}, got ${String(limit)}`);
	}
	const generation = query.generation ?? lastGeneration;
	if (!Number.isInteger(generation) || generation < 0 || generation > lastGeneration) {
		throw new ValidationError(
			ErrorCode.InvalidQuery,
			`generation must be a whole number from 0 to ${lastGeneration} (the last run of workflow "${id}"), got ${String(generation)}`,
		);
	}
	return { limit, generation, afterSeq: parseHistoryAfter(query.after) };
}

/** `after` is a record's seq: a whole number, given as a number or as the cursor string. */
export function parseHistoryAfter(after: string | number | null | undefined): number {
	if (after === undefined || after === null || after === '') return 0;
	const n = typeof after === 'number' ? after : /^\d{1,15}$/.test(after) ? Number(after) : NaN;
	if (!Number.isSafeInteger(n) || n < 0) {
		throw new ValidationError(ErrorCode.InvalidCursor, `after must be the seq of a history record (a whole number, as in nextCursor), got ${JSON.stringify(typeof after === 'string' && after.length > 40 ? `${after.slice(0, 40)}…` : after)}`);
	}
	return n;
}

