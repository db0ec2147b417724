import { decodeBase64UrlJson, encodeBase64UrlJson } from './base64url-json';
import { ErrorCode, ValidationError } from './errors';
import { fromStoredJson } from './json';
import { MAX_SHOWN_ERROR_CHARS, STATUS_STEP_WINDOW, STEP_PAGE_DEFAULT, STEP_PAGE_MAX, STEP_RESULT_BUDGET_BYTES } from './limits';
import type { InstanceRow, InstanceStore, StepMeta } from './store';
import { readRollbackState } from './rollback-state';
import type { StepPage, StepSummary, WorkflowStatusInfo } from './types';
import { readWebhookRecord } from './webhook';

/**
 * What one status call returns, bounded whatever the history holds: step counts,
 * the most recent `STATUS_STEP_WINDOW` steps, and their results newest first
 * while they fit `STEP_RESULT_BUDGET_BYTES` (the others say `resultOmitted`).
 * Every step, with its result, is available from `stepPage`.
 */
export function statusView(row: InstanceRow, store: InstanceStore): WorkflowStatusInfo {
	const counts = store.countSteps();
	const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
	const window = store.readStepMeta({ last: STATUS_STEP_WINDOW });
	let budget = STEP_RESULT_BUDGET_BYTES;
	// Newest first, so the budget goes to the steps a reader most likely wants; then one query for them.
	const shown = new Set<string>();
	for (let i = window.length - 1; i >= 0; i--) {
		const meta = window[i]!;
		if (hasResult(meta) && meta.resultBytes <= budget) {
			budget -= meta.resultBytes;
			shown.add(meta.key);
		}
	}
	const results = store.readStepResults([...shown]);
	const steps: StepSummary[] = window.map((meta) =>
		summarizeStep(meta, !hasResult(meta) ? null : shown.has(meta.key) ? (results.get(meta.key) ?? null) : undefined),
	);
	const events = store.eventBuffer();
	const rollback = readRollbackState(row);
	const webhooks = store.readStepsOfKind('webhook', 'waiting').map((step) => {
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
		stepCounts: { total, ...counts },
		stepsBefore: total - window.length,
		steps,
		bufferedEvents: events.count,
		droppedEvents: store.droppedEvents(),
		...(rollback ? { rollback: { ...rollback, completed: store.readStepsOfKind('rollback', 'completed').length } } : {}),
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
	const results = store.readStepResults(page.filter(hasResult).map((meta) => meta.key));
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

function hasResult(meta: StepMeta): boolean {
	return meta.status === 'completed' && meta.kind !== 'sleep';
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
