import { SPAN, type TraceSpan, type Tracer } from '../support/tracer';
import { parseDuration, type Duration } from '../support/duration';
import { historyError, type HistoryRecord } from '../history/history';
import { fromStoredJson } from '../support/json';
import { failedAttemptOutcome, resolveRetryPolicy, type ResolvedRetryPolicy, type RetryPolicy } from '../definition/retry-policy';
import { runAttempt, type AttemptAbort } from './attempt';
import { DEFAULT_STEP_TIMEOUT } from '../definition/step-options';
import { stepKey } from './step-key';
import type { InstanceStore, PassStore, StepRow } from '../storage/store';
import { StepRows } from './step-rows';
import { describeThrown } from '../support/thrown-value';
import { ErrorCode, ValidationError } from '../support/errors';
import type { RollbackFunction, StepAttempt, StepConfig } from '../definition/types';

/** The rollback of one completed step, as `step.do` registered it in the pass that reached the step. */
export interface RegisteredRollback {
	name: string;
	fn: RollbackFunction;
	retries: Parameters<typeof resolveRetryPolicy>[0];
	timeout: Duration | undefined;
	/** Reads the step's stored result (JSON text), handed to `fn` parsed: read when the rollback runs, not kept before. */
	result: () => string | null;
}

/** How a run of the rollbacks ended. */
export type RollbackOutcome =
	| { kind: 'completed' }
	/** A rollback waits for its retry (a wake-up is set). */
	| { kind: 'suspended' }
	/** The invocation's budget is spent before the next attempt: the rollbacks continue in a new invocation. */
	| { kind: 'continue' }
	/** A rollback failed for good: the ones after it did not run. */
	| { kind: 'failed'; step: string; error: { name: string; message: string; code?: string } }
	/** The instance stopped rolling back meanwhile (a plain terminate): nothing more was written. */
	| { kind: 'aborted' };

export interface RollbackHooks {
	now(): number;
	record(record: HistoryRecord): void;
	/** Sets a rollback's retry wake-up (see `PassHooks.setWakeup`: the end of the pass spares it, however due). */
	setWakeup(key: string, at: number): void;
	/** False once a terminate abandoned the rollbacks (or a restart or deletion came): stop without writing. */
	stillRollingBack(): boolean;
	/**
	 * Counts a rollback attempt about to start against the invocation's budget, the one forward
	 * steps count against (invocation-budget.ts); true when it must start in a new invocation.
	 */
	invocationSpent(now: number): boolean;
	/** The attempt counted by `invocationSpent` settled without awaiting I/O: it does not count against the step budget. */
	attemptSettledAtOnce(): void;
	log(record: { severity: 'error' | 'warn' | 'info' | 'debug'; event: string; [field: string]: unknown }): void;
	/** Spans for rollback attempts (support/tracer.ts); absent or answering none, nothing is traced. */
	readonly tracer?: Tracer;
}

/**
 * Runs registered rollbacks, newest completion first, each as a checkpointed
 * step of kind `rollback` (row key `rollback:<step>`), with its own attempts,
 * retries and history records (`rollback.started`, `.completed`,
 * `.attempt_failed`, `.failed`). Like `step.do`, an attempt is recorded before
 * it runs, so a crash mid-rollback counts it, and a completed rollback is never
 * run again. The rollback closures themselves come from a replay-only pass
 * (see `StepContext.replayRecorded`): closures do not survive a crash, the
 * recorded results do, and replaying `run()` re-registers them.
 */
export class RollbackRunner {
	private readonly live = new Set<AttemptAbort>();
	private cancelled: unknown;
	private nextSeq: number;

	constructor(
		private readonly store: PassStore,
		private readonly rows: StepRows,
		private readonly hooks: RollbackHooks,
	) {
		this.nextSeq = Math.max(0, ...[...rows.values()].map((row) => row.seq)) + 1;
	}

	/** Aborts the signal of the rollback attempt in flight (a terminate abandons the rollbacks). */
	cancel(reason: unknown): void {
		this.cancelled ??= reason;
		for (const abort of this.live) abort(reason);
	}

	/** How many rollbacks have completed (over every pass). */
	completedCount(): number {
		return [...this.rows.values()].filter((row) => row.kind === 'rollback' && row.status === 'completed').length;
	}

	async run(rollbacks: readonly RegisteredRollback[]): Promise<RollbackOutcome> {
		for (const rollback of rollbacks) {
			const outcome = await this.runOne(rollback);
			if (outcome) return outcome;
		}
		return { kind: 'completed' };
	}

	/** Undefined when this rollback has completed (now or before); else how the run stops here. */
	private async runOne(rollback: RegisteredRollback): Promise<RollbackOutcome | undefined> {
		const key = stepKey('rollback', rollback.name);
		const row = this.rows.get(key);
		if (row?.status === 'completed') return undefined;
		if (row?.status === 'failed') return this.failedOutcome(row);
		const now = this.hooks.now();
		let policy: ReturnType<typeof resolveRetryPolicy>;
		let timeoutMs: number;
		try {
			policy = resolveRetryPolicy(rollback.retries);
			timeoutMs = parseDuration(rollback.timeout ?? DEFAULT_STEP_TIMEOUT);
			// As a step's `timeout` of 0 is refused: an attempt with no time to run always times out.
			if (timeoutMs === 0) throw new ValidationError(ErrorCode.InvalidOptions, `step "${rollback.name}": option "rollbackTimeout" must be more than 0 (a rollback attempt with no time to run always times out)`);
		} catch (error) {
			// Bad rollbackRetries or rollbackTimeout: this rollback can never run, so it fails for good (a retry would not help).
			const { name, message, code } = describeThrown(error);
			const shown = { name, message, ...(code ? { code } : {}) };
			this.fail(row ?? this.newRow(key, rollback.name), row?.attempts ?? 0, shown, now);
			return { kind: 'failed', step: rollback.name, error: shown };
		}
		if (row?.status === 'retrying' && row.wakeAt !== null && row.wakeAt > now) return { kind: 'suspended' };
		const attempts = row?.attempts ?? 0;
		if (row?.status === 'running' && attempts > policy.limit) {
			const error = { name: 'StepInterruptedError', message: 'the last attempt of this rollback was interrupted (crash or eviction) before it finished' };
			this.fail(row, attempts, error, now);
			return { kind: 'failed', step: rollback.name, error };
		}
		// The invocation's budget, as for a step: checked before the attempt's row is written, so a
		// compensation that waits for the next invocation has not begun (nothing to count twice after a crash).
		if (this.hooks.invocationSpent(now)) return { kind: 'continue' };
		const attempt = attempts + 1;
		const { delay } = rollback.retries;
		const config: StepConfig = Object.freeze({
			retries: Object.freeze({ limit: policy.limit, ...(typeof delay === 'function' ? {} : { delay: delay as Duration }), backoff: policy.backoff }),
			timeout: rollback.timeout ?? DEFAULT_STEP_TIMEOUT,
		});
		const about = { step: { name: rollback.name, count: 1 }, config };
		// Read before the attempt, not inside it: a storage failure here fails the pass, not the compensation.
		const result = fromStoredJson(rollback.result());
		const running: StepRow = { ...(row ?? this.newRow(key, rollback.name)), status: 'running', attempts: attempt, startedAt: row?.startedAt ?? now, wakeAt: null };
		this.store.transaction(() => {
			this.write(running);
			this.store.deleteWakeup(key);
			this.hooks.record({ kind: 'rollback.started', step: rollback.name, attempt });
		});
		// Counted from its start; refunded once if it settles within its first microtask turns (it awaited no I/O).
		let pending = false;
		const refundIfAtOnce = () => {
			if (!pending) this.hooks.attemptSettledAtOnce();
		};
		let span: TraceSpan | undefined;
		const tracer = this.hooks.tracer;
		const attrs = { [SPAN.step]: rollback.name, [SPAN.kind]: 'rollback', [SPAN.attempt]: attempt, [SPAN.rollback]: true };
		try {
			try {
				const fn = (context: Parameters<typeof rollback.fn>[1]) => rollback.fn(result, context);
				await runAttempt(tracer ? (context) => tracer.run('shardflow.step', attrs, (s) => ((span = s), fn(context))) : fn, attempt, timeoutMs, `rollback of ${rollback.name}`, this.live, this.cancelled, about, () => (pending = true));
				refundIfAtOnce();
			} catch (error) {
				refundIfAtOnce();
				span?.fail(describeThrown(error));
				if (!this.hooks.stillRollingBack()) return { kind: 'aborted' };
				const outcome = await this.attemptFailed(running, error, attempt, policy, about);
				span?.set({ [SPAN.outcome]: outcome.kind === 'suspended' ? 'retrying' : outcome.kind });
				return outcome;
			}
			if (!this.hooks.stillRollingBack()) return { kind: 'aborted' };
			this.store.transaction(() => {
				this.write({ ...running, status: 'completed', errorName: null, errorMessage: null, errorStack: null, errorCode: null, finishedAt: this.hooks.now() });
				this.hooks.record({ kind: 'rollback.completed', step: rollback.name, attempt });
			});
			span?.set({ [SPAN.outcome]: 'completed' });
			return undefined;
		} finally {
			span?.end();
		}
	}

	private async attemptFailed(running: StepRow, error: unknown, attempt: number, policy: ResolvedRetryPolicy, about: Pick<StepAttempt, 'step' | 'config'>): Promise<RollbackOutcome> {
		const { failure, delayMs } = await failedAttemptOutcome(policy, { attempt, error, ctx: { attempt, ...about } });
		if (!this.hooks.stillRollingBack()) return { kind: 'aborted' };
		const described = describeThrown(failure);
		const shown = { name: described.name, message: described.message, ...(described.code ? { code: described.code } : {}) };
		const now = this.hooks.now();
		if (delayMs === undefined) {
			this.fail(running, attempt, { ...shown, ...(described.stack ? { stack: described.stack } : {}) }, now);
			return { kind: 'failed', step: running.name, error: shown };
		}
		const wakeAt = now + delayMs;
		this.hooks.log({ severity: 'warn', event: 'rollback.attempt_failed', step: running.name, attempt, willRetry: true, retryAt: wakeAt, error: shown });
		this.store.transaction(() => {
			this.write({ ...running, status: 'retrying', errorName: shown.name, errorMessage: shown.message, errorStack: described.stack ?? null, errorCode: shown.code ?? null, wakeAt });
			this.hooks.setWakeup(running.key, wakeAt);
			this.hooks.record({ kind: 'rollback.attempt_failed', step: running.name, attempt, detail: { error: historyError(described), retryAt: wakeAt } });
		});
		return { kind: 'suspended' };
	}

	private fail(row: StepRow, attempt: number, error: { name: string; message: string; code?: string; stack?: string }, now: number): void {
		this.hooks.log({ severity: 'error', event: 'rollback.failed', step: row.name, attempt, willRetry: false, error });
		this.store.transaction(() => {
			this.write({
				...row, status: 'failed', attempts: attempt, errorName: error.name, errorMessage: error.message, errorStack: error.stack ?? null,
				errorCode: error.code ?? null, finishedAt: now, wakeAt: null,
			});
			this.store.deleteWakeup(row.key);
			this.hooks.record({ kind: 'rollback.failed', step: row.name, attempt, detail: { error: historyError(error) } });
		});
	}

	private failedOutcome(row: StepRow): RollbackOutcome {
		return {
			kind: 'failed',
			step: row.name,
			error: { name: row.errorName ?? 'Error', message: row.errorMessage ?? '', ...(row.errorCode ? { code: row.errorCode } : {}) },
		};
	}

	private newRow(key: string, name: string): StepRow {
		return {
			key, name, kind: 'rollback', status: 'running', attempts: 0, result: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
			startedAt: null, finishedAt: null, wakeAt: null, seq: this.nextSeq++, sensitive: false,
		};
	}

	private write(row: StepRow): void {
		this.store.writeStep(row);
		this.rows.set(row.key, row);
	}
}

/**
 * The registered rollbacks in the order they run: the reverse of the order their
 * steps completed in this generation, as the history records it (`step.completed`);
 * parallel steps complete in any order, and only the history knows which.
 */
export function rollbackOrder(store: InstanceStore, generation: number, registered: Iterable<RegisteredRollback>): RegisteredRollback[] {
	// Every generation, oldest first: a step kept by a restart from a step completed in an
	// earlier one (its only `step.completed`), so it is older than anything of this generation.
	const completedAt = new Map<string, number>();
	for (let g = 0; g <= generation; g++) {
		for (let afterSeq = 0; ; ) {
			const page = store.readHistory({ generation: g, afterSeq, limit: 1000 });
			for (const row of page) if (row.kind === 'step.completed' && row.step !== null) completedAt.set(row.step, row.seq);
			if (page.length < 1000) break;
			afterSeq = page[page.length - 1]!.seq;
		}
	}
	return [...registered].sort((a, b) => (completedAt.get(b.name) ?? 0) - (completedAt.get(a.name) ?? 0));
}
