/**
 * The engine's structured log lines: one JSON object per line on the
 * console, so `wrangler dev` shows them and Workers Logs / `wrangler tail`
 * carry them in production. Quiet by default for what goes well.
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

export interface EngineLogRecord {
	severity: LogSeverity;
	/** What happened, e.g. `workflow.status`, `step.attempt_failed`, `step.failed`, `step.completed`. */
	event: string;
	instanceId: string;
	type: string;
	[field: string]: unknown;
}

/** Where log records go; the shell writes them to the console, tests collect them. */
export type EngineLogger = (record: EngineLogRecord) => void;

const RANK: Record<LogLevel, number> = { off: 0, error: 1, info: 2, debug: 3 };
const NEEDS: Record<LogSeverity, number> = { error: 1, warn: 2, info: 2, debug: 3 };

/** Reads a level from configuration; anything unknown falls back to the default. */
export function parseLogLevel(value: unknown): LogLevel {
	return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value.toLowerCase())
		? (value.toLowerCase() as LogLevel)
		: DEFAULT_LOG_LEVEL;
}

/** A logger that prints records at or above `level` as one JSON line each. */
export function consoleLogger(level: LogLevel): EngineLogger {
	const rank = RANK[level];
	return (record) => {
		if (NEEDS[record.severity] > rank) return;
		const line = JSON.stringify({ source: 'shardflow', ...record });
		if (record.severity === 'error') console.error(line);
		else if (record.severity === 'warn') console.warn(line);
		else console.log(line);
	};
}
