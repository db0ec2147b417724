/**
 * `step.do(name, fn, {sensitive: 'output'})`: the step's result is stored for
 * replay (the run, a restart from a later step and its rollback get the real
 * value) but never shown. Every reader outside the run sees this marker
 * instead: the status, the step pages, the history export (which never stores
 * the value: its record is written with the marker), the archive built from
 * them, the dashboard and the test kit's inspection. Errors are not redacted.
 * Cloudflare Workflows uses the same option and marker.
 */
export const SENSITIVE_STEP_OUTPUT = 'output';

/** What a sensitive step's result reads as, outside the run. */
export const REDACTED_STEP_OUTPUT = '[REDACTED]';

/** The marker as stored JSON (a history record's value). */
export const REDACTED_STEP_OUTPUT_JSON = JSON.stringify(REDACTED_STEP_OUTPUT);
