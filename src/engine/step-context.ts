import { parseDuration } from './duration';
import {
	DeterminismError,
	ErrorCode,
	EventTimeoutError,
	HistoryLimitExceededError,
	StepLimitExceededError,
	NonRetryableError,
	WebhookExpiredError,
	ShardflowError,
	StepFailedError,
	StepTimeoutError,
	ValidationError,
} from './errors';
import { MAX_DURATION_MS } from './duration';
import { runChildStep, type ChildStepAccess, type ChildStepHooks } from './child-step';
import { childFailure, readChildRef, type ChildClass, type ChildOptions, type ChildRef } from './child-workflows';
import { historyError, type HistoryRecord } from './history';
import { limitExceeded, resultExceedsHistoryLimit } from './instance-limits';
import { fromStoredJson, toStoredJson } from './json';
import type { ResolvedEntry } from './registry';
import { DEFAULT_RETRY_POLICY, retryAfterFailure, type ResolvedRetryPolicy, type RetryPolicy } from './retry-policy';
import { checkKnownOptions, resolveStepDoOptions } from './step-options';
import { REDACTED_STEP_OUTPUT_JSON } from './sensitive-output';
import type { RegisteredRollback } from './rollback-runner';
import { newWebhookNonce, readWebhookRecord, storedWebhookRecord } from './webhook';
import { AbortSignal_, SuspendSignal, isSignal } from './signals';
import { stepKey } from './step-key';
import type { StepFunctionWrapper } from './step-function-wrapper';
import type { PassStore, StepRow } from './store';
import { StepRows } from './step-rows';
import { describeThrown, isInstance } from './thrown-value';
import type { Step, StepAttempt, StepDoOptions, StepKind, WaitForEventOptions, WebhookHandle, WebhookOptions } from './types';
import { YieldPacer, type YieldReport } from './yield-pacer';
import { checkMessageSize, checkTopic } from './stream';
import { validateWith } from './schema-validation';

/** What a pass of the replay loop lends its step context. */
export interface PassHooks {
	now(): number;
	/** Throws a signal when the instance was paused, terminated or restarted since the pass began. */
	checkBoundary(): void;
	/** Gives other requests of the isolate a turn; called every few steps. */
	/** Lets other work of the isolate run; reports whether any did (see yield-pacer.ts). */
	yieldToEventLoop(): Promise<YieldReport>;
	/**
	 * Called before every durable write of the pass (outside any transaction):
	 * the engine marks the instance `running` on the first one, so a pass that
	 * only replays and suspends again changes nothing.
	 */
	willWrite(): void;
	/** Appends a history record (with the pass's generation and the clock's time); called inside the write's transaction. */
	record(record: HistoryRecord): void;
	/**
	 * Sets a wake-up (store.setWakeup), inside the write's transaction. The end of the pass
	 * deletes the wake-ups that were due when it began, but never one set through here,
	 * however due: a retry delay, sleep or timeout of 0 sets one at the pass's own time.
	 */
	setWakeup(key: string, at: number): void;
	/** Writes a step row and appends its history record together (store.writeStepWithRecord); the hot path of a step. */
	writeStepWithRecord(row: StepRow, record: HistoryRecord): void;
	/** The instance's history size in bytes so far (a running total: no query). */
	historyBytes(): number;
	/** Counts a step attempt about to start; true when the pass must continue in a new invocation (invocation-budget.ts). */
	invocationSpent?(now: number): boolean;
	/** The host's test seam (see step-function-wrapper.ts); undefined outside the test kit. */
	readonly wrapStepFunction: StepFunctionWrapper | undefined;
	/** Whether completed steps are logged (debug level): checked first, so the hot path builds no record. */
	readonly logsStepCompletions: boolean;
	/** A step's failed attempt, final failure or (at debug level) completion; the engine adds the instance's id and type. */
	log(record: { severity: 'error' | 'warn' | 'info' | 'debug'; event: string; [field: string]: unknown }): void;
	/**
	 * The pass only replays, to learn the rollbacks of completed steps (see rollback-runner.ts):
	 * recorded outcomes answer as usual, anything else never settles and nothing is written.
	 */
	readonly replayOnly?: boolean;
	/** Signs a webhook token bound to this instance, its generation, the step and `nonce`, and answers its URL (see webhook.ts). */
	issueWebhook?(step: string, nonce: string): Promise<string>;
	/** What `step.invoke` and `step.start` need (see child-workflows.ts); absent, they are refused. */
	readonly children?: ChildStepHooks;
	/**
	 * Applies a `step.setAttributes` (checked against the declaration; throws INVALID_SEARCH_ATTRIBUTES)
	 * and writes the step's row, its history record, the instance row and the index outbox in one
	 * transaction; absent, `setAttributes` is refused.
	 */
	setAttributes?(update: Record<string, unknown>, row: StepRow, stepName: string): void;
	/** What `step.emit` needs (see stream.ts); absent (a rollback's replay), it publishes nothing. */
	readonly streams?: EmitHooks;
}

/** The instance's side of `step.emit`. */
export interface EmitHooks {
	/** The index of the last message this generation recorded before the pass (read once, on the pass's first emit). */
	recordedBefore(): number;
	/** Takes one message from the instance's rate, or throws STREAM_RATE_LIMITED. */
	take(now: number, topic: string): void;
}

/** Where the code and the recorded steps parted: the engine stores it with status `diverged`. */
export interface Divergence {
	/** How many recorded steps the code reached, in order, before it parted (0-based position of `recorded`). */
	position: number;
	/** The first recorded step the code did not reach; null if every recorded step was reached. */
	recorded: { kind: StepKind; name: string } | null;
	/** What the code asked for instead: a step, or `end` when `run()` settled first. */
	requested: { kind: StepKind | 'end'; name: string };
}

/**
 * Replayed (cached) steps between two yields. A replayed step costs a lookup and a
 * JSON.parse, about a tenth of a new one, but a replay of thousands of them used to run
 * without ever yielding and held every other request of the isolate meanwhile.
 */
export const REPLAYED_STEPS_PER_YIELD = 256;

/**
 * The `step` object of one replay pass. Completed steps answer from the rows
 * loaded at the start of the pass; new outcomes are written through to the
 * store and to that in-memory copy.
 */
export class StepContext implements Step<any, any> {
	private readonly claimed = new Set<string>();
	/** Attempts started and not yet stored; the pass waits for them before it ends. */
	private running = 0;
	private whenIdle: (() => void) | undefined;
	/** Set once `run()` has settled: steps called after that (orphaned branches) do not run. */
	private closed = false;
	private nextSeq: number;
	private readonly pacer: YieldPacer;
	private replayedSinceYield = 0;
	/** `step.emit` calls so far in this pass (the n-th is the run's n-th message), and how many the run had recorded before it. */
	private emits = 0;
	private emitsRecorded: number | undefined;
	/** A suspension or abort already signalled in this pass; sticks even if `run()` catches it. */
	signal: SuspendSignal | AbortSignal_ | undefined;
	/** A determinism error or an exceeded limit; fails the workflow even if `run()` catches it. */
	fatal: DeterminismError | StepLimitExceededError | HistoryLimitExceededError | undefined;
	/** Steps of this run (patch markers aside): the rows loaded plus those begun in this pass. */
	private stepCount = 0;
	/** Set when the code asked for something the recorded steps do not have; the pass stops there. */
	divergence: Divergence | undefined;
	/** Abort handles of the attempts in flight, and why they were cancelled (terminate, restart). */
	private readonly liveAttempts = new Set<AttemptAbort>();
	private cancelled: unknown;
	/** Steps recorded before this pass (patch markers aside), and how many of them this pass reached. */
	private readonly recorded: ReadonlySet<string>;
	private readonly recordedBefore: readonly StepRow[];
	private reachedRecorded = 0;
	/** The rollbacks of the completed steps this pass reached, by step name (see rollback-runner.ts). */
	readonly rollbacks = new Map<string, RegisteredRollback>();
	/** Keys of the completed `do` steps recorded before this pass: a replay-only pass is done once it reached them all. */
	private readonly completedDo: ReadonlySet<string>;

	constructor(
		private readonly store: PassStore,
		private readonly rows: StepRows,
		private readonly entry: ResolvedEntry,
		private readonly hooks: PassHooks,
	) {
		this.pacer = new YieldPacer(hooks.now());
		let max = 0;
		const recorded = new Set<string>();
		for (const row of rows.values()) {
			max = Math.max(max, row.seq);
			if (row.kind !== 'patch') recorded.add(row.key);
		}
		this.stepCount = recorded.size;
		this.nextSeq = max + 1;
		this.recorded = recorded;
		this.recordedBefore = [...rows.values()];
		this.completedDo = new Set([...rows.values()].filter((row) => row.kind === 'do' && row.status === 'completed').map((row) => row.key));
	}

	/**
	 * Lets a replay-only pass's `run()` go as far as the recorded outcomes take it:
	 * resolves once it settled, reached every completed `do` step, or a turn of the
	 * event loop passed with no step reached (every branch waits on a step that
	 * has no outcome: those never settle in a replay-only pass).
	 */
	async replayRecorded(run: Promise<unknown>): Promise<void> {
		let settled = false;
		void run.then(
			() => (settled = true),
			() => (settled = true),
		);
		const reachedAll = () => [...this.completedDo].every((key) => this.claimed.has(key));
		for (;;) {
			const before = this.claimed.size;
			await this.hooks.yieldToEventLoop();
			if (settled || reachedAll() || this.claimed.size === before) return;
		}
	}

	/** A write made outside the pass (a webhook's POST): later reads of the pass see it. */
	noteStepRow(row: StepRow): void {
		if (this.rows.has(row.key)) this.rows.set(row.key, row);
	}

	/** What a replay-only pass answers for a step without a recorded outcome: nothing, ever. */
	private parked<T>(): Promise<T> {
		return new Promise<T>(() => {});
	}

	/** Remembers a completed step's rollback; its result is read again (from storage when large) only if the rollback runs. */
	private registerRollback(name: string, key: string, options: StepDoOptions | undefined): void {
		const fn = options?.rollback;
		if (typeof fn !== 'function') return;
		const retries = options?.rollbackRetries ?? this.entry.workflow.defaults?.retries ?? DEFAULT_RETRY_POLICY;
		this.rollbacks.set(name, { name, fn, retries, timeout: options?.rollbackTimeout, result: () => this.rows.get(key)?.result ?? null });
	}

	/**
	 * Stops new steps and resolves once every attempt in flight has stored its
	 * outcome. Parallel steps (Promise.all/allSettled/race) can leave an attempt
	 * running after run() has settled; waiting for it means no later pass starts
	 * the same step again. Completions that arrive after a terminate or restart
	 * are dropped by the boundary check, so the engine need not wait for them.
	 */
	/**
	 * Aborts the signal of every attempt in flight (and of any attempt this pass still
	 * starts): a terminate or restart reaches a `fetch(url, {signal})` that is running.
	 */
	cancel(reason: unknown): void {
		this.cancelled ??= reason;
		for (const abort of this.liveAttempts) abort(reason);
	}

	async settle(): Promise<void> {
		this.closed = true;
		if (this.running > 0) await new Promise<void>((resolve) => (this.whenIdle = resolve));
	}

	async do<T>(name: string, fn: (attempt: StepAttempt) => Promise<T> | T, options?: StepDoOptions): Promise<T> {
		const key = this.enter('do', name);
		// Checked on replays too: a config the engine does not understand fails the run wherever it is met.
		const { policy, timeoutMs, config } = resolveStepDoOptions(name, options, this.entry.workflow.defaults?.retries as RetryPolicy | undefined);
		const row = this.rows.get(key);
		if (row?.status === 'completed') {
			this.registerRollback(name, key, options);
			if (++this.replayedSinceYield >= REPLAYED_STEPS_PER_YIELD) {
				this.replayedSinceYield = 0;
				await this.hooks.yieldToEventLoop();
			}
			return fromStoredJson(row.result) as T;
		}
		if (row?.status === 'failed') throw this.failure(row);
		if (this.hooks.replayOnly) return this.parked();
		if (!row && this.behindRecord()) await this.assertOnRecord('do', name);

		const now = this.hooks.now();
		if (row?.status === 'retrying' && row.wakeAt !== null && row.wakeAt > now) throw this.suspend('sleeping');

		const attempts = row?.attempts ?? 0;
		if (row?.status === 'running' && attempts > policy.limit) {
			// The last allowed attempt started and never recorded an outcome: the isolate died mid-step.
			const message = 'the last attempt was interrupted (crash or eviction) before it finished';
			this.hooks.log({ severity: 'error', event: 'step.failed', step: name, attempt: attempts, willRetry: false, error: { name: 'StepInterruptedError', message } });
			this.transact(() => {
				this.write(this.failedRow(row, attempts, 'StepInterruptedError', message, now));
				this.hooks.record({ kind: 'step.failed', step: name, attempt: attempts, detail: { error: { name: 'StepInterruptedError', message } } });
			});
			throw this.failure(this.rows.get(key)!);
		}

		// The invocation's budget: the attempt starts in a new invocation, the pass replaying up to here.
		if (this.hooks.invocationSpent?.(now)) throw this.suspend('running');
		// A retry of a step begun earlier: a new step is checked by newRow.
		if (row) this.assertWithinLimits(name);
		// Record the attempt before running fn: a crash mid-step still counts it.
		const attempt = attempts + 1;
		const running: StepRow = {
			...(row ?? this.newRow(key, name, 'do')),
			status: 'running',
			attempts: attempt,
			startedAt: row?.startedAt ?? now,
			wakeAt: null,
		};
		// No explicit transaction on the hot path (one costs more than the two writes): writes with
		// no await between them commit together in Durable Object storage (one implicit transaction).
		this.writeWithRecord(running, { kind: 'step.started', step: name, attempt });

		// Only started attempts are counted: a replayed step returns above without this cost.
		this.running++;
		let json: string | null;
		try {
			try {
				const run = this.hooks.wrapStepFunction === undefined ? fn : (this.hooks.wrapStepFunction({ name, attempt, timeoutMs }, fn) as typeof fn);
				const value = await runAttempt(run, attempt, timeoutMs, name, this.liveAttempts, this.cancelled, { step: { name, count: 1 }, config });
				json = toStoredJson(value, `result of step "${name}"`);
			} catch (error) {
				if (isSignal(error)) throw error;
				return await this.attemptFailed(running, error, attempt, policy, { step: { name, count: 1 }, config });
			}
			this.checkAbort();
			const tooBig = resultExceedsHistoryLimit(this.entry.limits, this.hooks.historyBytes(), json, name);
			if (tooBig) {
				this.fatal ??= tooBig;
				throw this.fatal;
			}
			const completed: StepRow = { ...running, status: 'completed', result: json, errorName: null, errorMessage: null, errorStack: null, errorCode: null, finishedAt: this.hooks.now() };
			if (config.sensitive === undefined) this.writeWithRecord(completed, { kind: 'step.completed', step: name, attempt, value: json });
			// The history keeps the marker, never the value: the row alone holds it, for replays.
			else this.writeWithRecord({ ...completed, sensitive: true }, { kind: 'step.completed', step: name, attempt, value: REDACTED_STEP_OUTPUT_JSON, detail: { redacted: true } });
			this.registerRollback(name, key, options);
		} finally {
			if (--this.running === 0) this.whenIdle?.();
		}
		if (this.hooks.logsStepCompletions) this.hooks.log({ severity: 'debug', event: 'step.completed', step: name, attempt });
		if (this.pacer.stepDone()) this.pacer.yielded(await this.hooks.yieldToEventLoop(), this.hooks.now());
		return fromStoredJson(json) as T;
	}

	/** Starts a child workflow and waits durably for its output (see child-workflows.ts). */
	invoke(name: string, Child: ChildClass, options: ChildOptions<unknown>): Promise<any> {
		return this.child('invoke', name, Child, options);
	}

	/** Starts a child workflow and returns its id at once (fire and forget). */
	start(name: string, Child: ChildClass, options: ChildOptions<unknown>): Promise<string> {
		return this.child('start', name, Child, options) as Promise<string>;
	}

	/** A child step: replays answer here, a new or unfinished one runs in child-step.ts. */
	private async child(mode: ChildRef['mode'], name: string, Child: ChildClass, options: ChildOptions<unknown>): Promise<unknown> {
		const key = this.enter('child', name);
		const row = this.rows.get(key);
		if (row?.status === 'completed') return mode === 'start' ? readChildRef(row).childId : fromStoredJson(row.result);
		if (row?.status === 'failed') throw row.errorCode === ErrorCode.ChildWorkflowFailed ? childFailure(row) : this.failure(row);
		// A rollback pass only learns closures: an unfinished child step is not started or awaited.
		if (this.hooks.replayOnly) return this.parked();
		if (!row && this.behindRecord()) await this.assertOnRecord('child', name);
		const children = this.hooks.children;
		if (!children) throw new ValidationError(ErrorCode.InvalidOptions, `step.${mode}("${name}") needs a host that reaches other instances`);
		return runChildStep(this.childAccess, children, key, mode, name, Child, options);
	}

	/** What child-step.ts may do to this pass's steps (built per new or unfinished child step). */
	private get childAccess(): ChildStepAccess {
		return {
			store: this.store,
			hooks: this.hooks,
			row: (key) => this.rows.get(key),
			newRow: (key, name) => this.newRow(key, name, 'child'),
			write: (row) => this.write(row),
			transact: (fn) => this.transact(fn),
			suspend: (status) => this.suspend(status),
			checkAbort: () => this.checkAbort(),
			failedRow: (row, attempts, errorName, errorMessage, now) => this.failedRow(row, attempts, errorName, errorMessage, now),
			failure: (row) => this.failure(row),
		};
	}

	async sleep(name: string, duration: string | number): Promise<void> {
		const key = this.enter('sleep', name);
		const row = this.rows.get(key);
		if (row?.status === 'completed') return;
		if (this.hooks.replayOnly) return this.parked();
		if (!row && this.behindRecord()) await this.assertOnRecord('sleep', name);
		const ms = row ? 0 : parseDuration(duration);
		return this.sleepStep(key, name, row, row?.wakeAt ?? this.hooks.now() + ms);
	}

	async sleepUntil(name: string, until: Date | number): Promise<void> {
		const key = this.enter('sleep', name);
		const row = this.rows.get(key);
		if (row?.status === 'completed') return;
		if (this.hooks.replayOnly) return this.parked();
		if (row) return this.sleepStep(key, name, row, row.wakeAt ?? this.hooks.now());
		if (this.behindRecord()) await this.assertOnRecord('sleep', name);
		const at = until instanceof Date ? until.getTime() : until;
		if (typeof at !== 'number' || !Number.isFinite(at)) {
			throw new ValidationError(ErrorCode.InvalidDuration, `sleepUntil("${name}") needs a finite Date or epoch milliseconds, got ${String(until)}`);
		}
		if (at - this.hooks.now() > MAX_DURATION_MS) {
			throw new ValidationError(
				ErrorCode.InvalidDuration,
				`sleepUntil("${name}") asks for ${at} ms since the epoch, more than the maximum of 365 days ahead`,
			);
		}
		return this.sleepStep(key, name, row, at);
	}

	async waitForEvent(event: string, options?: WaitForEventOptions): Promise<any> {
		checkKnownOptions('waitForEvent', options?.name ?? event, options, ['timeout', 'name']);
		const stepName = options?.name ?? event;
		const key = this.enter('wait', stepName);
		const row = this.rows.get(key);
		if (row?.status === 'completed') return fromStoredJson(row.result);
		if (row?.status === 'timed_out') throw new EventTimeoutError(stepName, event);
		if (this.hooks.replayOnly) return this.parked();
		if (!row && this.behindRecord()) await this.assertOnRecord('wait', stepName);
		if (!this.entry.workflow.events || !Object.hasOwn(this.entry.workflow.events, event)) {
			throw new ValidationError(ErrorCode.UnknownEvent, `workflow type "${this.entry.type}" does not declare event "${event}" in static events`);
		}
		const timeoutMs = options?.timeout === undefined ? undefined : parseDuration(options.timeout);
		const now = this.hooks.now();
		const base = row ?? this.newRow(key, stepName, 'wait');

		const buffered = this.store.oldestEvent(event);
		if (buffered) {
			// Consuming the event and completing the wait are one transaction: never lost, never twice.
			const done: StepRow = { ...base, status: 'completed', result: buffered.payload, startedAt: base.startedAt ?? now, finishedAt: now, wakeAt: null };
			this.transact(() => {
				this.store.deleteEvent(buffered.seq);
				this.store.deleteWakeup(key);
				this.write(done);
				this.hooks.record({ kind: 'event.consumed', step: stepName, value: buffered.payload, detail: { event } });
			});
			return fromStoredJson(buffered.payload);
		}
		if (!row) {
			const wakeAt = timeoutMs === undefined ? null : now + timeoutMs;
			this.transact(() => {
				this.write({ ...base, status: 'waiting', startedAt: now, wakeAt });
				if (wakeAt !== null) this.hooks.setWakeup(key, wakeAt);
				this.hooks.record({ kind: 'wait.started', step: stepName, detail: { event, timeoutAt: wakeAt } });
			});
			throw this.suspend('waiting');
		}
		if (row.wakeAt !== null && row.wakeAt <= now) {
			this.transact(() => {
				this.store.deleteWakeup(key);
				this.write({ ...row, status: 'timed_out', finishedAt: now, errorName: 'EventTimeoutError', errorMessage: `timed out waiting for "${event}"`, errorCode: ErrorCode.EventTimeout });
				this.hooks.record({ kind: 'wait.timed_out', step: stepName, detail: { event } });
			});
			throw new EventTimeoutError(stepName, event);
		}
		throw this.suspend('waiting');
	}

	async setAttributes(name: string, attributes: Record<string, unknown>): Promise<void> {
		const key = this.enter('attributes', name);
		if (this.rows.get(key)?.status === 'completed') return;
		if (this.hooks.replayOnly) return this.parked();
		if (this.behindRecord()) await this.assertOnRecord('attributes', name);
		if (!this.hooks.setAttributes) throw new ValidationError(ErrorCode.InvalidOptions, 'step.setAttributes needs a host that indexes instances');
		const now = this.hooks.now();
		const row: StepRow = { ...this.newRow(key, name, 'attributes'), status: 'completed', attempts: 1, startedAt: now, finishedAt: now, result: JSON.stringify(attributes ?? null) };
		this.hooks.willWrite();
		this.hooks.setAttributes(attributes, row, name);
		this.rows.set(key, row);
	}

	async patched(id: string): Promise<boolean> {
		const key = this.enter('patch', id);
		if (this.rows.has(key)) return true;
		if (this.hooks.replayOnly) return this.parked();
		// A history that passed this point without the marker keeps the old branch.
		if (!(await this.atFrontier())) return false;
		this.recordPatch(key, id);
		return true;
	}

	async deprecatePatch(id: string): Promise<void> {
		const key = this.enter('patch', id);
		if (this.rows.has(key)) return;
		if (this.hooks.replayOnly) return this.parked();
		if (await this.atFrontier()) this.recordPatch(key, id);
	}

	async webhook<Body = unknown>(name: string, options?: WebhookOptions): Promise<WebhookHandle<Body>> {
		const key = this.enter('webhook', name);
		checkKnownOptions('webhook', name, options, ['timeout']);
		let row = this.rows.get(key);
		if (!row) {
			if (this.hooks.replayOnly) return this.parked();
			if (this.behindRecord()) await this.assertOnRecord('webhook', name);
			const timeoutMs = options?.timeout === undefined ? undefined : parseDuration(options.timeout);
			if (!this.hooks.issueWebhook) throw new ValidationError(ErrorCode.InvalidOptions, 'step.webhook needs a host that signs webhook tokens (the workerd runner, or the test kit)');
			const nonce = newWebhookNonce();
			const url = await this.hooks.issueWebhook(name, nonce);
			this.checkAbort();
			const now = this.hooks.now();
			const expiresAt = timeoutMs === undefined ? null : now + timeoutMs;
			const created: StepRow = {
				...this.newRow(key, name, 'webhook'),
				status: 'waiting',
				result: storedWebhookRecord({ url, expiresAt, nonce }),
				startedAt: now,
				wakeAt: expiresAt,
			};
			// The URL is durable before run() sees it: what the author sends out always works.
			this.transact(() => {
				this.write(created);
				if (expiresAt !== null) this.hooks.setWakeup(key, expiresAt);
				this.hooks.record({ kind: 'webhook.created', step: name, detail: { url, expiresAt } });
			});
			row = created;
		}
		const { url, expiresAt } = readWebhookRecord(row.result);
		return { url, expiresAt, wait: () => this.waitForWebhook<Body>(key, name) };
	}

	/** `hook.wait()`: the POSTed body once it came; suspends until then; WEBHOOK_EXPIRED after the timeout. */
	private async waitForWebhook<Body>(key: string, name: string): Promise<Body> {
		const row = this.rows.get(key)!;
		if (row.status === 'completed') return readWebhookRecord(row.result).body as Body;
		if (row.status === 'timed_out') throw new WebhookExpiredError(`webhook "${name}" expired before it was called`);
		if (this.hooks.replayOnly) return this.parked();
		if (this.signal) throw this.signal;
		if (this.closed) throw new AbortSignal_('finished');
		const now = this.hooks.now();
		if (row.wakeAt !== null && row.wakeAt <= now) {
			this.transact(() => {
				this.store.deleteWakeup(key);
				this.write({ ...row, status: 'timed_out', finishedAt: now, errorName: 'WebhookExpiredError', errorMessage: `webhook "${name}" expired before it was called`, errorCode: ErrorCode.WebhookExpired });
				this.hooks.record({ kind: 'webhook.timed_out', step: name });
			});
			throw new WebhookExpiredError(`webhook "${name}" expired before it was called`);
		}
		throw this.suspend('waiting');
	}

	/**
	 * The steps `run()` never reached although they were recorded, when it settled
	 * without a suspension: the code dropped a step the history has.
	 */
	async unreachedAtEnd(): Promise<Divergence | undefined> {
		if (!this.behindRecord() || this.signal || this.fatal) return undefined;
		// Branches still replaying (say, the losers of a Promise.race) get their turn first.
		if (await this.atFrontier()) return undefined;
		return { ...this.firstUnreached(), requested: { kind: 'end', name: 'run() settled' } };
	}

	private recordPatch(key: string, id: string): void {
		const now = this.hooks.now();
		this.write({ ...this.newRow(key, id, 'patch'), status: 'completed', startedAt: now, finishedAt: now });
		this.hooks.record({ kind: 'patch.recorded', step: id });
	}

	/** Some recorded steps are not reached yet in this pass. */
	private behindRecord(): boolean {
		return this.reachedRecorded < this.recorded.size;
	}

	/**
	 * Whether this pass has reached every recorded step. Parallel branches replay in
	 * microtask rounds, so a branch may ask for a new step while a sibling has yet to
	 * reach its recorded ones: turns of the event loop let every cached step answer first.
	 */
	private async atFrontier(): Promise<boolean> {
		while (this.behindRecord()) {
			const reached = this.reachedRecorded;
			await this.hooks.yieldToEventLoop();
			// A sibling that moved (a long replay yields every REPLAYED_STEPS_PER_YIELD steps) gets
			// another turn; once a turn passes with no recorded step reached, the rest is not coming.
			if (this.reachedRecorded === reached) return !this.behindRecord();
		}
		return true;
	}

	/**
	 * A step with no record while recorded steps remain unreached: the code changed
	 * under this instance (or a step name is not deterministic). Nothing new runs.
	 */
	private async assertOnRecord(kind: StepKind, name: string): Promise<void> {
		if (await this.atFrontier()) return;
		if (this.signal) throw this.signal;
		this.divergence ??= { ...this.firstUnreached(), requested: { kind, name } };
		this.signal = new AbortSignal_('diverged');
		throw this.signal;
	}

	/**
	 * The first recorded step (by seq) this pass did not reach, and its position: its index
	 * among every step recorded before the pass, patch markers included (as `replayHistory`
	 * and `GET /workflows/:id/steps` count).
	 */
	private firstUnreached(): { position: number; recorded: { kind: StepKind; name: string } | null } {
		const before = [...this.recordedBefore].sort((a, b) => a.seq - b.seq);
		const index = before.findIndex((row) => this.recorded.has(row.key) && !this.claimed.has(row.key));
		if (index < 0) return { position: before.length, recorded: null };
		const row = before[index]!;
		return { position: index, recorded: { kind: row.kind, name: row.name } };
	}

	private sleepStep(key: string, name: string, row: StepRow | undefined, wakeAt: number): Promise<void> {
		const now = this.hooks.now();
		const base = row ?? this.newRow(key, name, 'sleep');
		if (wakeAt <= now) {
			this.transact(() => {
				this.store.deleteWakeup(key);
				if (!row) this.hooks.record({ kind: 'sleep.started', step: name, detail: { until: wakeAt } });
				this.write({ ...base, status: 'completed', startedAt: base.startedAt ?? now, finishedAt: now, wakeAt });
				this.hooks.record({ kind: 'sleep.finished', step: name });
			});
			return Promise.resolve();
		}
		if (!row) {
			this.transact(() => {
				this.write({ ...base, status: 'sleeping', startedAt: now, wakeAt });
				this.hooks.setWakeup(key, wakeAt);
				this.hooks.record({ kind: 'sleep.started', step: name, detail: { until: wakeAt } });
			});
		}
		throw this.suspend('sleeping');
	}

	async emit(topic: string, data: unknown): Promise<void> {
		if (this.signal) throw this.signal;
		if (this.closed) throw new AbortSignal_('finished');
		// Numbered at the call, before any await, so the numbering is the same in every pass.
		const index = ++this.emits;
		const declaration = checkTopic(this.entry.workflow.streams, topic);
		const streams = this.hooks.streams;
		if (!streams || this.hooks.replayOnly) return;
		if (index <= (this.emitsRecorded ??= streams.recordedBefore())) return; // published by an earlier pass
		const value = await validateWith(declaration, data, ErrorCode.StreamMessageInvalid, `message on topic "${topic}"`);
		if (this.signal) throw this.signal;
		let json: string | null;
		try {
			json = toStoredJson(value, `the message on topic "${topic}"`);
		} catch (error) {
			throw new ValidationError(ErrorCode.StreamMessageInvalid, (error as Error).message, { cause: error });
		}
		checkMessageSize(topic, json ?? 'null');
		const exceeded = limitExceeded(this.entry.limits, this.stepCount, this.hooks.historyBytes(), `emit ${topic}`);
		if (exceeded) throw (this.fatal ??= exceeded);
		this.checkAbort();
		streams.take(this.hooks.now(), topic);
		this.transact(() => this.hooks.record({ kind: 'stream.message', step: topic, attempt: index, value: json ?? 'null' }));
	}

	/** Every step starts here: replay rules, then pause/terminate checks. */
	private enter(kind: StepKind, name: string): string {
		if (this.signal) throw this.signal;
		if (typeof name !== 'string' || name.length === 0 || name.length > 256) {
			throw new ValidationError(ErrorCode.InvalidOptions, `step names must be 1-256 characters, got ${JSON.stringify(name)}`);
		}
		const key = stepKey(kind, name);
		if (this.closed) {
			// Not run, but reached: a recorded step asked for after run() settled is no divergence.
			if (this.recorded.has(key) && !this.claimed.has(key)) {
				this.claimed.add(key);
				this.reachedRecorded++;
			}
			throw new AbortSignal_('finished');
		}
		if (this.claimed.has(key)) {
			this.fatal = new DeterminismError(
				`step name "${name}" (${kind}) is used twice in one run; step names must be unique and deterministic (no Date.now() or random values in names)`,
			);
			throw this.fatal;
		}
		this.claimed.add(key);
		if (this.recorded.has(key)) this.reachedRecorded++;
		try {
			this.hooks.checkBoundary();
		} catch (signal) {
			if (signal instanceof SuspendSignal || signal instanceof AbortSignal_) this.signal = signal;
			throw signal;
		}
		return key;
	}

	private checkAbort(): void {
		try {
			this.hooks.checkBoundary();
		} catch (signal) {
			// A pause that arrived mid-step lets the step checkpoint; terminate/restart do not.
			if (signal instanceof AbortSignal_) {
				this.signal = signal;
				throw signal;
			}
		}
	}

	private async attemptFailed(running: StepRow, error: unknown, attempt: number, policy: ResolvedRetryPolicy, about: Pick<StepAttempt, 'step' | 'config'>): Promise<never> {
		this.checkAbort();
		const permanent =
			isInstance(error, NonRetryableError) ||
			(isInstance(error, ShardflowError) && (error.code === ErrorCode.NotSerializable || error.code === ErrorCode.TooLarge));
		let failure = error;
		let delayMs: number | undefined;
		if (!permanent && attempt <= policy.limit) {
			// A delay function that fails schedules no retry: the step fails for good with its error, naming the attempt's.
			const next = await retryAfterFailure(policy, { attempt, error, ctx: { attempt, ...about } });
			if ('failure' in next) failure = next.failure;
			else delayMs = next.delayMs;
			// A terminate or restart that came while the delay function ran wins.
			this.checkAbort();
		}
		const { name: errorName, message, stack, code } = describeThrown(failure);
		const errorStack = stack ?? null;
		const errorCode = code ?? null;
		const now = this.hooks.now();
		const described = { name: errorName, message, ...(code ? { code } : {}), ...(stack ? { stack } : {}) };
		if (delayMs === undefined) {
			this.hooks.log({ severity: 'error', event: 'step.failed', step: running.name, attempt, willRetry: false, error: described });
			this.transact(() => {
				this.write({ ...this.failedRow(running, attempt, errorName, message, now), errorStack, errorCode });
				this.hooks.record({ kind: 'step.failed', step: running.name, attempt, detail: { error: historyError(described) } });
			});
			throw this.failure(this.rows.get(running.key)!);
		}
		const wakeAt = now + delayMs;
		this.hooks.log({ severity: 'warn', event: 'step.attempt_failed', step: running.name, attempt, willRetry: true, retryAt: wakeAt, error: described });
		this.transact(() => {
			this.write({ ...running, status: 'retrying', errorName, errorMessage: message, errorStack, errorCode, wakeAt });
			this.hooks.setWakeup(running.key, wakeAt);
			this.hooks.record({ kind: 'step.attempt_failed', step: running.name, attempt, detail: { error: historyError(described), retryAt: wakeAt } });
		});
		throw this.suspend('sleeping');
	}

	private failedRow(row: StepRow, attempts: number, errorName: string, errorMessage: string, now: number): StepRow {
		return { ...row, status: 'failed', attempts, errorName, errorMessage, errorStack: null, errorCode: null, finishedAt: now, wakeAt: null };
	}

	private failure(row: StepRow): StepFailedError {
		return new StepFailedError(row.name, row.attempts, row.errorName ?? 'Error', row.errorMessage ?? '');
	}

	private suspend(status: SuspendSignal['status']): SuspendSignal {
		this.signal = new SuspendSignal(status);
		return this.signal;
	}

	/** A transaction of step writes; the pass is marked running before it opens. */
	private transact(fn: () => void): void {
		this.hooks.willWrite();
		this.store.transaction(fn);
	}

	/**
	 * Fails the run for good (even if `run()` catches the error) when one more step, or one
	 * more attempt, would pass the type's limits. Called before anything of the step is written.
	 */
	private assertWithinLimits(name: string): void {
		const exceeded = limitExceeded(this.entry.limits, this.stepCount, this.hooks.historyBytes(), name);
		if (!exceeded) return;
		this.fatal ??= exceeded;
		throw this.fatal;
	}

	private newRow(key: string, name: string, kind: StepKind): StepRow {
		if (kind !== 'patch') {
			this.stepCount++;
			this.assertWithinLimits(name);
		}
		return {
			key, name, kind, status: 'running', attempts: 0, result: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
			startedAt: null, finishedAt: null, wakeAt: null, seq: this.nextSeq++, sensitive: false,
		};
	}

	private write(row: StepRow): void {
		this.hooks.willWrite();
		this.store.writeStep(row);
		this.rows.set(row.key, row);
	}

	private writeWithRecord(row: StepRow, record: HistoryRecord): void {
		this.hooks.willWrite();
		this.hooks.writeStepWithRecord(row, record);
		this.rows.set(row.key, row);
	}
}

/**
 * Runs one attempt. With a timeout, a late attempt is abandoned: JavaScript
 * cannot stop a running function, so `fn` gets an AbortSignal that aborts at
 * the deadline and should stop on it; whatever it returns later is dropped.
 */
export async function runAttempt<T>(
	fn: (attempt: StepAttempt) => Promise<T> | T,
	attempt: number,
	timeoutMs: number,
	name: string,
	live: Set<AttemptAbort>,
	cancelled: unknown,
	about: Pick<StepAttempt, 'step' | 'config'>,
): Promise<T> {
	// The AbortController is made only if `fn` reads the signal: creating one per step is a
	// measurable share of a step's cost, and most steps never look at it.
	let controller: AbortController | undefined;
	let reason: unknown = cancelled;
	const abort: AttemptAbort = (why) => {
		reason ??= why;
		if (controller && !controller.signal.aborted) controller.abort(reason);
	};
	const context: StepAttempt = {
		attempt,
		step: about.step,
		config: about.config,
		get signal() {
			controller ??= new AbortController();
			if (reason !== undefined && !controller.signal.aborted) controller.abort(reason);
			return controller.signal;
		},
	};
	live.add(abort);
	try {
		return await raceTimeout(fn, context, timeoutMs, name, abort);
	} finally {
		live.delete(abort);
	}
}

/** Aborts one attempt's signal (if `fn` ever read it) with a reason. */
export type AttemptAbort = (reason: unknown) => void;

/**
 * Microtask turns an attempt gets to settle before its timeout timer is armed. An attempt
 * that does no I/O (an `async () => value`) settles within them, and a timer it can never
 * meet (the timeout is more than 0 ms and no time passes without I/O) costs a setTimeout and
 * a clearTimeout: measured at 8% of a trivial step's CPU in workerd (docs/decisions.md
 * "No timer for an attempt that settles at once").
 */
const SETTLE_TURNS = 4;

async function raceTimeout<T>(fn: (attempt: StepAttempt) => Promise<T> | T, context: StepAttempt, timeoutMs: number, name: string, abort: AttemptAbort): Promise<T> {
	const attempt = Promise.resolve().then(() => fn(context));
	let settled = false;
	attempt.then(
		() => (settled = true),
		() => (settled = true),
	);
	for (let turn = 0; turn < SETTLE_TURNS && !settled; turn++) await undefined;
	if (settled) return attempt;
	let timer: ReturnType<typeof setTimeout> | undefined;
	const timeout = new Promise<never>((_, reject) => {
		timer = setTimeout(() => {
			const timedOut = new StepTimeoutError(name, timeoutMs);
			abort(timedOut);
			reject(timedOut);
		}, timeoutMs);
	});
	try {
		return await Promise.race([attempt, timeout]);
	} finally {
		if (timer !== undefined) clearTimeout(timer);
	}
}
