import { MAX_ERROR_MESSAGE_CHARS } from './thrown-value';

/**
 * Per-instance limits on what an instance keeps and what one call returns.
 * They exist so that no instance grows without bound and no answer crosses the
 * 32 MiB Durable Object RPC limit (a status call must never fail). docs/deploying.md "Limits".
 */

/** Events buffered for a wait not reached yet, per instance and event name; one more is EVENT_BUFFER_FULL (429). */
export const MAX_BUFFERED_EVENTS = 1000;
/** Bytes of buffered event payloads (UTF-8 JSON) per instance and event name. */
export const MAX_BUFFERED_EVENT_BYTES = 16 * 1024 * 1024;
/** Idempotency keys of event sends remembered per instance: the most recent ones. */
export const MAX_EVENT_KEYS = 1000;
/** Longest idempotency key (visible ASCII). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/**
 * Characters of children's outcomes (outputs and errors, with their ids) a parent keeps from
 * their notices until its next pass; a notice past that only wakes the parent, whose pass asks
 * the child (one call). Four outputs of the largest size (1 MiB) fit.
 */
export const MAX_NOTICED_OUTCOME_CHARS = 4 * 1024 * 1024;

/** Most recent steps shown by a status. */
export const STATUS_STEP_WINDOW = 100;
/** Step results one status or one step page carries at most (UTF-8 JSON); the others are omitted or paged. */
export const STEP_RESULT_BUDGET_BYTES = 4 * 1024 * 1024;
/** Results up to this many bytes come along with a status's or a page's step rows (see `StepMeta`); larger ones take a second read. */
export const SMALL_RESULT_BYTES = 1024;
/** Steps per page of `steps()`: default and maximum. */
export const STEP_PAGE_DEFAULT = 50;
export const STEP_PAGE_MAX = 100;
/**
 * Longest error message a status shows: what `describeThrown` stores (8 KiB);
 * rows stored before that bound existed are cut here too.
 */
export const MAX_SHOWN_ERROR_CHARS = MAX_ERROR_MESSAGE_CHARS;
/** History records per page of `history()`: default and maximum. */
export const HISTORY_PAGE_DEFAULT = 100;
export const HISTORY_PAGE_MAX = 1000;

/**
 * The most an instance row may hold, all its text columns together: production's SQLite
 * stores rows of at most 2 MB (`wrangler dev` more), and the payload (up to 1 MiB) and
 * the output (up to 1 MiB) share the instance's row. An output that does not fit beside
 * its payload ends the instance `errored` with TOO_LARGE instead of a write that fails.
 */
export const MAX_INSTANCE_ROW_BYTES = 2_000_000 - 16 * 1024;
