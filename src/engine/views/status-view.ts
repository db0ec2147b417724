import { parseAttributes } from '../index/search-attributes';
import { REDACTED_STEP_OUTPUT } from '../definition/sensitive-output';
import { decodeBase64UrlJson, encodeBase64UrlJson } from '../support/base64url-json';
import { ErrorCode, ValidationError } from '../support/errors';
import { fromStoredJson } from '../support/json';
import { MAX_SHOWN_ERROR_CHARS, STATUS_STEP_WINDOW, STEP_PAGE_DEFAULT, STEP_PAGE_MAX, STEP_RESULT_BUDGET_BYTES } from '../support/limits';
import type { InstanceRow, InstanceStore, StepMeta } from '../storage/store';
import { readRollbackState } from '../steps/rollback-state';
import type { StepPage, StepSummary, WorkflowStatusInfo } from '../definition/types';
import { FINISHED_STATUSES, type StepStatus } from '../support/statuses';
import { readWebhookRecord } from '../webhooks/webhook';

/**
 * What one status call returns, bounded whatever the history holds: step counts,
 * the most recent `STATUS_STEP_WINDOW` steps, and their results newest first
 * while they fit `STEP_RESULT_BUDGET_BYTES` (the others say `resultOmitted`).
 * Every step, with its result, is available from `stepPage`.
 */
export function statusView(row: InstanceRow, store: InstanceStore): WorkflowStatusInfo {
	const counts: Partial<Record<StepStatus, number>> = {};
	let total = 0;
	let waitingWebhooks = 0;
	let completedRollbacks = 0;
	for (const { kind, status, n } of store.countSteps()) {
		counts[status] = (counts[status] ?? 0) + n;
		total += n;
		if (kind === 'webhook' && status === 'waiting') waitingWebhooks += n;
		if (kind === 'rollback' && status === 'completed') completedRollbacks += n;
	}
	const window = store.readStepMeta({ last: STATUS_STEP_WINDOW });
	let budget = STEP_RESULT_BUDGET_BYTES;
	// Newest first, so the budget goes to the steps a reader most likely wants; then one query for those not read yet.
	const shown = new Set<string>();
	for (let i = window.length - 1; i >= 0; i--) {
		const meta = window[i]!;
		if (hasResult(meta) && meta.resultBytes <= budget) {
			budget -= meta.resultBytes;
			shown.add(meta.key);
		}
	}
	const results = readResults(store, window.filter((meta) => shown.has(meta.key)));
	const steps: StepSummary[] = window.map((meta) =>
		summarizeStep(meta, !hasResult(meta) ? null : shown.has(meta.key) ? (results.get(meta.key) ?? null) : undefined),
	);
	const events = store.eventCounts();
	const rollback = readRollbackState(row);
	// A finished instance's waiting webhooks can only answer 410: it offers none.
	const offersWebhooks = waitingWebhooks > 0 && !FINISHED_STATUSES.includes(row.status);
	const webhooks = (offersWebhooks ? store.readStepsOfKind('webhook', 'waiting') : []).map((step) => {
		const { url, expiresAt } = readWebhookRecord(step.result);
		return { step: step.name, url, expiresAt };
	});
	return {
		id: row.id,
		type: row.type,
		status: row.status,
		payload: fromStoredJson(row.payload),
		...(row.output !== null ? { output: fromStoredJson(row.output) } : {}),
		...(row.errorName !== null ? { error: shownError(row) } : {}),
		createdAt: row.createdAt,
		updatedAt: row.updatedAt,
		version: row.version,
		generation: row.generation,
		...(row.codeVersion ? { codeVersion: row.codeVersion } : {}),
		...(row.lastCodeVersion ? { lastCodeVersion: row.lastCodeVersion } : {}),
		...(row.parentId ? { parentId: row.parentId } : {}),
		...(row.attributes ? { attributes: parseAttributes(row.attributes) } : {}),
		stepCounts: { total, ...counts },
		stepsBefore: total - window.length,
		steps,
		bufferedEvents: events.buffered,
		droppedEvents: events.dropped,
		...(rollback ? { rollback: { ...rollback, completed: completedRollbacks } } : {}),
		...(webhooks.length > 0 ? { webhooks } : {}),
	};
}

/**
 * One page of the step history in first-reached order, every step with its
 * result. A page ends early rather than pass `STEP_RESULT_BUDGET_BYTES` (it
 * always holds at least one step; a result is at most 1 MiB).
 */
export function stepPage(store: InstanceStore, options: { cursor?: string | null; limit?: number }): StepPage {
	const limit = options.limit ?? STEP_PAGE_DEFAULT;
	if (!Number.isInteger(limit) || limit < 1 || limit > STEP_PAGE_MAX) {
		throw new ValidationError(ErrorCode.InvalidQuery, `limit must be a whole number from 1 to ${STEP_PAGE_MAX}, got ${String(limit)}`);
	}
	const afterSeq = options.cursor ? decodeStepCursor(options.cursor) : 0;
	const metas = store.readStepMeta({ afterSeq, limit: limit + 1 });
	let budget = STEP_RESULT_BUDGET_BYTES;
	const page: StepMeta[] = [];
	for (const meta of metas.slice(0, limit)) {
		const bytes = hasResult(meta) ? meta.resultBytes : 0;
		if (page.length > 0 && bytes > budget) break;
		budget -= bytes;
		page.push(meta);
	}
	const results = readResults(store, page.filter(hasResult));
	const items = page.map((meta) => summarizeStep(meta, hasResult(meta) ? (results.get(meta.key) ?? null) : null));
	const last = page.at(-1);
	const more = last !== undefined && items.length < metas.length;
	return { items, nextCursor: more ? encodeBase64UrlJson(['steps', last!.seq]) : null };
}

function decodeStepCursor(cursor: string): number {
	let parts: unknown;
	if (cursor.length > 200) throw new ValidationError(ErrorCode.InvalidCursor, 'this steps cursor was not issued by GET /workflows/:id/steps; start again without a cursor');
	try {
		parts = decodeBase64UrlJson(cursor);
	} catch {
		parts = undefined;
	}
	if (!Array.isArray(parts) || parts.length !== 2 || parts[0] !== 'steps' || !Number.isSafeInteger(parts[1]) || (parts[1] as number) < 0) {
		throw new ValidationError(ErrorCode.InvalidCursor, 'this steps cursor was not issued by GET /workflows/:id/steps; start again without a cursor');
	}
	return parts[1] as number;
}

/** The results of these steps: the small ones came with their rows, the others take one query. */
function readResults(store: InstanceStore, metas: StepMeta[]): Map<string, string | null> {
	const results = new Map<string, string | null>();
	const missing: StepMeta[] = [];
	for (const meta of metas) {
		if (meta.smallResult !== undefined) results.set(meta.key, meta.smallResult);
		else missing.push(meta);
	}
	for (const [key, result] of store.readStepResults(missing)) results.set(key, result);
	return results;
}

/** A result to read: a sensitive step's is never read, it shows the marker (see `summarizeStep`). */
function hasResult(meta: StepMeta): boolean {
	return meta.status === 'completed' && meta.kind !== 'sleep' && !meta.sensitive;
}

/** `result`: the stored JSON, null for none, undefined when it did not fit the budget. */
function summarizeStep(row: StepMeta, result: string | null | undefined): StepSummary {
	return {
		name: row.name,
		kind: row.kind,
		status: row.status,
		attempts: row.attempts,
		startedAt: row.startedAt,
		finishedAt: row.finishedAt,
		wakeAt: row.wakeAt,
		...(row.sensitive && row.status === 'completed' ? { result: REDACTED_STEP_OUTPUT } : {}),
		...(result !== null && result !== undefined ? { result: fromStoredJson(result) } : {}),
		...(result === undefined ? { resultOmitted: true as const } : {}),
		...(row.errorName !== null ? { error: shownError(row) } : {}),
	};
}

/** The stored error with its bounded stack (the last error of a step or of the workflow). */
function shownError(row: { errorName: string | null; errorMessage: string | null; errorStack: string | null; errorCode: string | null }) {
	return {
		name: row.errorName ?? 'Error',
		message: clip(row.errorMessage ?? ''),
		...(row.errorCode ? { code: row.errorCode } : {}),
		...(row.errorStack ? { stack: row.errorStack } : {}),
	};
}

function clip(message: string): string {
	return message.length > MAX_SHOWN_ERROR_CHARS ? `${message.slice(0, MAX_SHOWN_ERROR_CHARS)}… (${message.length - MAX_SHOWN_ERROR_CHARS} more characters)` : message;
}
