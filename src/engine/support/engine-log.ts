/**
 * The engine's structured log lines: one JSON object per record on the console,
 * so Workers Logs extracts every field (its query builder filters on `type`,
 * `instanceId`, `step`, `eventName`, `level`, `errorCode`), `wrangler tail
 * --search` matches them, and `wrangler dev` shows them. Quiet by default for
 * what goes well.
 *
 * Levels (the `SHARDFLOW_LOG` variable): `off`; `error` (workflows that
 * errored or diverged, steps that failed for good); `info`, the default (adds
 * operator actions — terminations, pauses, resumes, restarts, deletions — and
 * every failed attempt that will be retried); `debug` (adds what a run does on
 * its own — created, running, sleeping, waiting, completed, deleted when its
 * retention ran out — and every completed step).
 */
export type LogLevel = 'off' | 'error' | 'info' | 'debug';
export const LOG_LEVELS: readonly LogLevel[] = ['off', 'error', 'info', 'debug'];
export const DEFAULT_LOG_LEVEL: LogLevel = 'info';

export type LogSeverity = 'error' | 'warn' | 'info' | 'debug';

/** A record from anywhere in shardflow: the engine, a role, the API. */
export interface LogRecord {
	severity: LogSeverity;
	/** What happened, e.g. `workflow.status`, `step.attempt_failed`, `step.failed`, `step.completed`. */
	event: string;
	instanceId?: string;
	type?: string;
	[field: string]: unknown;
}

/** A record about one instance: what the engine core writes. */
export interface EngineLogRecord extends LogRecord {
	instanceId: string;
	type: string;
}

/** Where log records go; the shell writes them to the console, tests collect them. */
export type EngineLogger = (record: EngineLogRecord) => void;

/**
 * What is printed: `object` hands the console the object itself (what Workers Logs turns into
 * queryable fields; a string would be one opaque `message`), `line` one JSON string (what a
 * terminal under `wrangler dev` shows on one line).
 */
export type LogForm = 'object' | 'line';

/** A printed line: the record's own fields, with the ones every query filters on named alike. */
export interface LogLine {
	source: 'shardflow';
	level: LogSeverity;
	/** A sentence for people and for full-text search (`wrangler tail --search`). */
	msg: string;
	event: string;
	type?: string;
	instanceId?: string;
	step?: string;
	eventName?: string;
	/** The failure's stable code (`error.code`), lifted to the top so a filter needs no nesting. */
	errorCode?: string;
	[field: string]: unknown;
}

const RANK: Record<LogLevel, number> = { off: 0, error: 1, info: 2, debug: 3 };
const NEEDS: Record<LogSeverity, number> = { error: 1, warn: 2, info: 2, debug: 3 };

/** Reads a level from configuration; anything unknown falls back to the default. */
export function parseLogLevel(value: unknown): LogLevel {
	return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value.toLowerCase())
		? (value.toLowerCase() as LogLevel)
		: DEFAULT_LOG_LEVEL;
}

/**
 * How records are printed in a deployment: one JSON line under `wrangler dev`
 * (`SHARDFLOW_ENV=development`), where a terminal shows them; the object itself elsewhere.
 */
export function logFormOf(env: unknown): LogForm {
	return (env as { SHARDFLOW_ENV?: unknown } | undefined)?.SHARDFLOW_ENV === 'development' ? 'line' : 'object';
}

/** Whether a record of `severity` is printed at `level`. */
export function logs(level: LogLevel, severity: LogSeverity): boolean {
	return NEEDS[severity] <= RANK[level];
}

/** The line printed for a record: `level` for `severity`, a `msg`, and `errorCode` beside `error`. */
export function logLine(record: LogRecord): LogLine {
	const { severity, event, ...fields } = record;
	const error = fields.error as { name?: unknown; message?: unknown; code?: unknown } | string | undefined;
	const code = typeof error === 'object' && error !== null && typeof error.code === 'string' ? error.code : undefined;
	return { source: 'shardflow', level: severity, msg: sentence(record, error), event, ...fields, ...(code !== undefined && fields.errorCode === undefined ? { errorCode: code } : {}) };
}

/** `step.attempt_failed payment/pay-1 step "charge" attempt 1: TypeError: upstream 503`. */
function sentence(record: LogRecord, error: { name?: unknown; message?: unknown } | string | undefined): string {
	let text = record.event;
	if (record.type !== undefined || record.instanceId !== undefined) text += ` ${record.type ?? '?'}/${record.instanceId ?? '?'}`;
	if (typeof record.step === 'string') text += ` step ${JSON.stringify(record.step)}`;
	if (typeof record.eventName === 'string') text += ` event ${JSON.stringify(record.eventName)}`;
	if (typeof record.status === 'string') text += ` ${record.status}`;
	if (typeof record.attempt === 'number') text += ` attempt ${record.attempt}`;
	if (typeof error === 'string') text += `: ${error}`;
	else if (typeof error === 'object' && error !== null) text += `: ${String(error.name ?? 'Error')}: ${String(error.message ?? '')}`;
	return text;
}

/** Prints one record, on the console method of its level (Workers Logs reads its level from it). */
export function printLog(record: LogRecord, form: LogForm = 'object'): void {
	const line = logLine(record);
	const printed = form === 'line' ? JSON.stringify(line) : line;
	if (record.severity === 'error') console.error(printed);
	else if (record.severity === 'warn') console.warn(printed);
	else if (record.severity === 'info') console.info(printed);
	else console.debug(printed);
}

/** A logger that prints records at or above `level`, one JSON object each. */
export function consoleLogger(level: LogLevel, form: LogForm = 'object'): EngineLogger {
	return (record) => {
		if (logs(level, record.severity)) printLog(record, form);
	};
}

