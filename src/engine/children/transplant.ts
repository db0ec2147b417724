import { ErrorCode, ValidationError } from '../support/errors';
import { historyError, historyRow, type HistoryKind, type NewHistoryRow } from '../history/history';
import type { StepKind } from '../support/step-kinds';
import { WORKFLOW_STATUSES, type StepStatus, type WorkflowStatus } from '../support/statuses';
import type { InlineRow, InstanceRow, InstanceStore, StepRow } from '../storage/store';
import { REDACTED_STEP_OUTPUT_JSON } from '../definition/sensitive-output';

/**
 * What a child's inline run left in its parent (inline-child.ts), sent to the child's own
 * object when it is published: the child then holds exactly what it would hold had it run
 * there, and goes on from it (a handed-over child) or answers its outcome (a finished one).
 */
export interface ChildTransplant {
	/** The child's row as its run left it: status, output or error, times, attributes. */
	row: InstanceRow;
	steps: StepRow[];
	wakeups: { key: string; at: number }[];
	/**
	 * Its history, in order. A record with `resultOf` takes its value from that step's row when
	 * it arrives: a step's result travels once, in its row.
	 */
	history: TransplantRecord[];
}

export type TransplantRecord = NewHistoryRow & { resultOf?: string };

/** Writes a transplant's history (each step's result filled in from its row), steps and wake-ups; the caller writes its row. */
export function writeTransplantRows(store: InstanceStore, transplant: ChildTransplant): void {
	const results = new Map(transplant.steps.map((step) => [step.key, step.result]));
	for (const { resultOf, ...record } of transplant.history) store.appendHistory(resultOf === undefined ? record : { ...record, value: results.get(resultOf) ?? null });
	for (const step of transplant.steps) store.writeStep(step);
	for (const { key, at } of transplant.wakeups) store.setWakeup(key, at);
}

/** The header of an inline child (its row '' in the parent): the transplant without its steps, which have rows of their own. */
export type TransplantHeader = Omit<ChildTransplant, 'steps'>;

/** The header stored for a transplant: each completed step's record points at its row instead of repeating the result. */
export function transplantHeader(row: InstanceRow, steps: readonly StepRow[], wakeups: ReadonlyMap<string, number>, history: readonly NewHistoryRow[]): TransplantHeader {
	const resultKey = new Map<string, StepRow>();
	for (const step of steps) if (step.kind === 'do' && step.status === 'completed' && !step.sensitive) resultKey.set(step.name, step);
	return {
		row,
		wakeups: [...wakeups].map(([key, at]) => ({ key, at })),
		history: history.map(({ generation, at, kind, step, attempt, value, detail }) => {
			const record: TransplantRecord = { generation, at, kind, step, attempt, value, detail };
			const done = kind === 'step.completed' && step !== null ? resultKey.get(step) : undefined;
			return done && done.result === value ? { ...record, value: null, resultOf: done.key } : record;
		}),
	};
}

/**
 * What an inline run's first step row carries beside the row in its parent (`inlineRequest` in its
 * body): the child's type and payload, so that the parent can rebuild a run its isolate lost without
 * the code that invoked it (a terminate before the next pass; a read by the child's id). In a row the
 * run writes anyway: no row more.
 */
export interface StoredInlineRequest {
	type: string;
	payload: unknown;
}

/**
 * A transplant from an inline child's rows in its parent: its header, one row per step, and the run's
 * request if a row carries it. A finished run's header may carry its last steps (`steps`, written with
 * it instead of rows of their own: `SHARDFLOW_INLINE_ONE_ROW`); each is newer than a row of its key.
 */
export function transplantOf(rows: readonly InlineRow[]): { transplant: ChildTransplant | undefined; steps: StepRow[]; request?: StoredInlineRequest } {
	const byKey = new Map<string, StepRow>();
	let header: TransplantHeader | undefined;
	let request: StoredInlineRequest | undefined;
	let carried: StepRow[] = [];
	for (const row of rows) {
		if (row.key === '') {
			const { steps: inHeader, ...rest } = JSON.parse(row.body) as TransplantHeader & { steps?: StepRow[] };
			header = rest;
			carried = inHeader ?? [];
		} else {
			const { inlineRequest, ...step } = JSON.parse(row.body) as Omit<StepRow, 'result'> & { inlineRequest?: StoredInlineRequest };
			if (inlineRequest) request = inlineRequest;
			byKey.set(step.key, { ...step, result: row.result });
		}
	}
	for (const step of carried) byKey.set(step.key, step);
	const steps = [...byKey.values()].sort((a, b) => a.seq - b.seq);
	return { transplant: header ? { ...header, steps } : undefined, steps, ...(request ? { request } : {}) };
}

/**
 * The transplant of an inline child whose run was cut short (its parent's isolate died): only
 * its step rows were kept, so its row is a running one and its history the records those rows
 * stand for (one `step.started` per step, with its attempt count, and its outcome). The child's
 * object runs it on from there, as after an eviction; a step whose attempt was under way is
 * tried again.
 */
export function transplantFromSteps(
	child: { id: string; type: string; payloadJson: string | null; parentId: string; parent: unknown; codeVersion: string | null },
	steps: readonly StepRow[],
	now: number,
): ChildTransplant {
	const createdAt = Math.min(now, ...steps.map((s) => s.startedAt ?? now));
	const record = (kind: HistoryKind, at: number, fields: Partial<TransplantRecord> = {}): TransplantRecord => ({
		...historyRow({ kind }, 0, at), ...fields,
	});
	const history: TransplantRecord[] = [
		record('workflow.created', createdAt, { value: child.payloadJson, detail: JSON.stringify({ ...(child.codeVersion !== null ? { codeVersion: child.codeVersion } : {}), parent: child.parent }) }),
	];
	const wakeups: { key: string; at: number }[] = [];
	for (const step of steps) {
		const attempt = Math.max(1, step.attempts);
		history.push(record('step.started', step.startedAt ?? createdAt, { step: step.name, attempt }));
		const error = () => JSON.stringify({ error: historyError({ name: step.errorName ?? 'Error', message: step.errorMessage ?? '', code: step.errorCode }) });
		const at = step.finishedAt ?? step.startedAt ?? createdAt;
		if (step.status === 'completed' && step.kind === 'do') {
			history.push(step.sensitive
				? record('step.completed', at, { step: step.name, attempt, value: REDACTED_STEP_OUTPUT_JSON, detail: JSON.stringify({ redacted: true }) })
				: record('step.completed', at, { step: step.name, attempt, resultOf: step.key }));
		} else if (step.status === 'failed') history.push(record('step.failed', at, { step: step.name, attempt, detail: error() }));
		else if (step.status === 'retrying') history.push(record('step.attempt_failed', at, { step: step.name, attempt, detail: error() }));
		if (step.wakeAt !== null) wakeups.push({ key: step.key, at: step.wakeAt });
	}
	return {
		row: {
			id: child.id, type: child.type, status: 'running', payload: child.payloadJson, output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
			createdAt, updatedAt: now, version: 1, generation: 0, codeVersion: child.codeVersion, lastCodeVersion: child.codeVersion, parentId: child.parentId, attributes: null,
		},
		steps: [...steps],
		wakeups,
		history,
	};
}

const STEP_KINDS: readonly StepKind[] = ['do', 'sleep', 'wait', 'patch', 'rollback', 'webhook', 'child', 'attributes'];
const STEP_STATUSES: readonly StepStatus[] = ['running', 'retrying', 'completed', 'failed', 'sleeping', 'waiting', 'timed_out', 'cancelled'];
/** What a transplant can hold at most: an inline run is bounded far below (inline-child.ts). */
const MAX_TRANSPLANT_ROWS = 10_000;

/**
 * Checks a transplant that came with a create (RPC input: only a parent's invoke sends one, but
 * never trusted): the shapes the store writes, a status a run can leave, nothing about another
 * instance. Throws INVALID_OPTIONS; the create then writes nothing.
 */
export function checkTransplant(input: unknown, id: string): ChildTransplant {
	const fail = (what: string): never => {
		throw new ValidationError(ErrorCode.InvalidOptions, `transplant of "${id}": ${what}`);
	};
	const t = input as Partial<ChildTransplant> | null;
	if (!t || typeof t !== 'object' || !t.row || typeof t.row !== 'object' || !Array.isArray(t.steps) || !Array.isArray(t.wakeups) || !Array.isArray(t.history)) {
		return fail('must be {row, steps, wakeups, history}');
	}
	if (t.steps.length + t.wakeups.length + t.history.length > MAX_TRANSPLANT_ROWS) fail('too many rows');
	const row = t.row;
	if (row.id !== id) fail('its row is another instance\'s');
	if (!WORKFLOW_STATUSES.includes(row.status as WorkflowStatus) || row.status === 'queued' || row.status === 'paused' || row.status === 'diverged') fail(`status ${String(row.status)} cannot be transplanted`);
	const str = (v: unknown) => v === null || typeof v === 'string';
	const num = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
	if (!num(row.createdAt) || !num(row.version) || row.generation !== 0) fail('bad row');
	for (const f of ['output', 'errorName', 'errorMessage', 'errorStack', 'errorCode', 'rollback', 'attributes'] as const) if (row[f] !== undefined && !str(row[f])) fail(`bad row.${f}`);
	const keys = new Set<string>();
	for (const s of t.steps) {
		if (!s || typeof s !== 'object' || typeof s.key !== 'string' || typeof s.name !== 'string' || !STEP_KINDS.includes(s.kind) || !STEP_STATUSES.includes(s.status)) fail('bad step');
		if (!num(s.attempts) || !num(s.seq) || !str(s.result) || typeof s.sensitive !== 'boolean' || keys.has(s.key)) fail(`bad step "${String(s.key)}"`);
		for (const f of ['errorName', 'errorMessage', 'errorStack', 'errorCode'] as const) if (!str(s[f])) fail(`bad step "${s.key}"`);
		for (const f of ['startedAt', 'finishedAt', 'wakeAt'] as const) if (s[f] !== null && !num(s[f])) fail(`bad step "${s.key}"`);
		keys.add(s.key);
	}
	for (const w of t.wakeups) if (!w || typeof w.key !== 'string' || !num(w.at)) fail('bad wake-up');
	for (const r of t.history) {
		if (!r || typeof r.kind !== 'string' || r.generation !== 0 || !num(r.at) || !str(r.step) || !str(r.value) || !str(r.detail) || (r.attempt !== null && !num(r.attempt))) fail('bad history record');
		if (r.resultOf !== undefined && !keys.has(r.resultOf)) fail('a record points at no step');
	}
	return t as ChildTransplant;
}
