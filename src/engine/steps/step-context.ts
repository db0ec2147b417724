import { parseDuration } from '../support/duration';
import {
	DeterminismError,
	ErrorCode,
	EventTimeoutError,
	HistoryLimitExceededError,
	StepLimitExceededError,
	NonRetryableError,
	WebhookExpiredError,
	ShardflowError,
	StepTimeoutError,
	ValidationError,
} from '../support/errors';
import { MAX_DURATION_MS } from '../support/duration';
import { runChildStep, type ChildStepHooks } from './child-step';
import { ReplayFrontier, type Divergence } from './divergence';
import { PassJournal } from './pass-journal';
import { childFailure, readChildRef, type ChildClass, type ChildOptions, type ChildRef } from '../children/child-workflows';
import { historyError, type HistoryRecord } from '../history/history';
import { resultExceedsHistoryLimit } from '../instance/instance-limits';
import { fromStoredJson, toStoredJson } from '../support/json';
import type { ResolvedEntry } from '../definition/registry';
import { DEFAULT_RETRY_POLICY, retryAfterFailure, type ResolvedRetryPolicy, type RetryPolicy } from './retry-policy';
import { checkKnownOptions, resolveStepDoOptions } from './step-options';
import { REDACTED_STEP_OUTPUT_JSON } from './sensitive-output';
import type { RegisteredRollback } from './rollback-runner';
import { newWebhookNonce, readWebhookRecord, storedWebhookRecord } from '../webhooks/webhook';
import { AbortSignal_, SuspendSignal, isSignal } from './signals';
import { stepKey } from './step-key';
import type { StepFunctionWrapper } from './step-function-wrapper';
import type { PassStore, StepRow } from '../storage/store';
import { StepRows } from './step-rows';
import { describeThrown, isInstance } from '../support/thrown-value';
import type { Step, StepAttempt, StepDoOptions, StepKind, WaitForEventOptions, WebhookHandle, WebhookOptions } from '../definition/types';
import { YieldPacer, type YieldReport } from './yield-pacer';
import { checkMessageSize, checkTopic } from '../streams/stream';
import { validateWith } from '../definition/schema-validation';

/** What a pass of the replay loop lends its step context. */
export interface PassHooks {
	now(): number;
	/** Throws a signal when the instance was paused, terminated or restarted since the pass began. */
	checkBoundary(): void;
	/** Lets other work of the isolate run (called every few steps); reports whether any did (see yield-pacer.ts). */
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
	/** A new step's first write with its records (store.insertStep): a step whose first attempt settled at once writes only this. */
	insertStep(row: StepRow, records: readonly HistoryRecord[]): void;
	/**
	 * Write every attempt's `step.started` before its function runs, also a new step's first
	 * attempt: set for a pass that follows one cut short (a crash, an eviction, a limit), so an
	 * attempt that kills the isolate before it settles is counted (docs/decisions.md "A step's
	 * records in its row").
	 */
	readonly startsFirst?: boolean;
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
	/** Which steps this pass reached, against those recorded before it (divergence tracking). */
	private readonly frontier: ReplayFrontier;
	/** The pass's step rows and how they are written (shared with child-step.ts). */
	private readonly journal: PassJournal;
	/** Attempts started and not yet stored; the pass waits for them before it ends. */
	private running = 0;
	private whenIdle: (() => void) | undefined;
	/** Set once `run()` has settled: steps called after that (orphaned branches) do not run. */
	private closed = false;
	private readonly pacer: YieldPacer;
	private replayedSinceYield = 0;
	/** `step.emit` calls so far in this pass (the n-th is the run's n-th message), and how many the run had recorded before it. */
	private emits = 0;
	private emitsRecorded: number | undefined;
	/** Set when the code asked for something the recorded steps do not have; the pass stops there. */
	divergence: Divergence | undefined;
	/** Abort handles of the attempts in flight, and why they were cancelled (terminate, restart). */
	private readonly liveAttempts = new Set<AttemptAbort>();
	private cancelled: unknown;
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
		this.frontier = new ReplayFrontier(rows.values(), () => hooks.yieldToEventLoop());
		this.journal = new PassJournal(store, rows, hooks, entry.limits, this.frontier.recordedCount);
		this.completedDo = new Set([...rows.values()].filter((row) => row.kind === 'do' && row.status === 'completed').map((row) => row.key));
	}

	/** A suspension or abort already signalled in this pass; sticks even if `run()` catches it. */
	get signal(): SuspendSignal | AbortSignal_ | undefined {
		return this.journal.signal;
	}

	/** A determinism error or an exceeded limit; fails the workflow even if `run()` catches it. */
	get fatal(): DeterminismError | StepLimitExceededError | HistoryLimitExceededError | undefined {
		return this.journal.fatal;
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
		const reachedAll = () => [...this.completedDo].every((key) => this.frontier.has(key));
		for (;;) {
			const before = this.frontier.claimedCount;
			await this.hooks.yieldToEventLoop();
			if (settled || reachedAll() || this.frontier.claimedCount === before) return;
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
	 * Aborts the signal of every attempt in flight (and of any attempt this pass still
	 * starts): a terminate or restart reaches a `fetch(url, {signal})` that is running.
	 */
	cancel(reason: unknown): void {
		this.cancelled ??= reason;
		for (const abort of this.liveAttempts) abort(reason);
	}

	/**
	 * Stops new steps and resolves once every attempt in flight has stored its
	 * outcome. Parallel steps (Promise.all/allSettled/race) can leave an attempt
	 * running after run() has settled; waiting for it means no later pass starts
	 * the same step again. Completions that arrive after a terminate or restart
	 * are dropped by the boundary check, so the engine need not wait for them.
	 */
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
		if (row?.status === 'failed') throw this.journal.failure(row);
		if (this.hooks.replayOnly) return this.parked();
		if (!row && this.frontier.behind()) await this.assertOnRecord('do', name);

		const now = this.hooks.now();
		if (row?.status === 'retrying' && row.wakeAt !== null && row.wakeAt > now) throw this.journal.suspend('sleeping');

		const attempts = row?.attempts ?? 0;
		if (row?.status === 'running' && attempts > policy.limit) {
			// The last allowed attempt started and never recorded an outcome: the isolate died mid-step.
			const message = 'the last attempt was interrupted (crash or eviction) before it finished';
			this.hooks.log({ severity: 'error', event: 'step.failed', step: name, attempt: attempts, willRetry: false, error: { name: 'StepInterruptedError', message } });
			this.journal.transact(() => {
				this.journal.write(this.journal.failedRow(row, attempts, 'StepInterruptedError', message, now));
				this.hooks.record({ kind: 'step.failed', step: name, attempt: attempts, detail: { error: { name: 'StepInterruptedError', message } } });
			});
			throw this.journal.failure(this.rows.get(key)!);
		}

		// The invocation's budget: the attempt starts in a new invocation, the pass replaying up to here.
		if (this.hooks.invocationSpent?.(now)) throw this.journal.suspend('running');
		// A retry of a step begun earlier: a new step is checked by newRow.
		if (row) this.journal.assertWithinLimits(name);
		const attempt = attempts + 1;
		const running: StepRow = {
			...(row ?? this.journal.newRow(key, name, 'do')),
			status: 'running',
			attempts: attempt,
			startedAt: row?.startedAt ?? now,
			wakeAt: null,
		};
		// Record the attempt before it can do I/O, so that a crash mid-step still counts it. A new
		// step's first attempt that settles at once (within runAttempt's SETTLE_TURNS: it did no
		// I/O) writes its row once, completed, with both records (docs/decisions.md "A step's
		// records in its row"); one still pending after them writes the started row first. No
		// explicit transaction on the hot path (one costs more than the writes): writes with no
		// await between them commit together in Durable Object storage (one implicit transaction).
		const start = this.journal.beginAttempt(running, { kind: 'step.started', step: name, attempt, at: running.startedAt! }, { first: !row, defer: !row && this.hooks.startsFirst !== true });
		const writeStart = () => this.journal.writeStart(start);

		// Only started attempts are counted: a replayed step returns above without this cost.
		this.running++;
		let json: string | null;
		try {
			try {
				const run = this.hooks.wrapStepFunction === undefined ? fn : (this.hooks.wrapStepFunction({ name, attempt, timeoutMs }, fn) as typeof fn);
				const value = await runAttempt(run, attempt, timeoutMs, name, this.liveAttempts, this.cancelled, { step: { name, count: 1 }, config }, writeStart);
				json = toStoredJson(value, `result of step "${name}"`);
			} catch (error) {
				// An attempt that failed (or suspended) keeps the records it always had: started, then its outcome.
				writeStart();
				if (isSignal(error)) throw error;
				return await this.attemptFailed(running, error, attempt, policy, { step: { name, count: 1 }, config });
			}
			this.journal.checkAbort();
			const tooBig = resultExceedsHistoryLimit(this.entry.limits, this.hooks.historyBytes(), json, name);
			if (tooBig) {
				writeStart();
				this.journal.fatal ??= tooBig;
				throw this.journal.fatal;
			}
			const finishedAt = this.hooks.now();
			const completed: StepRow = { ...running, status: 'completed', result: json, errorName: null, errorMessage: null, errorStack: null, errorCode: null, finishedAt };
			// The history of a sensitive step keeps the marker, never the value: the row alone holds it, for replays.
			const [done, record]: [StepRow, HistoryRecord] =
				config.sensitive === undefined
					? [completed, { kind: 'step.completed', step: name, attempt, value: json, at: finishedAt }]
					: [{ ...completed, sensitive: true }, { kind: 'step.completed', step: name, attempt, value: REDACTED_STEP_OUTPUT_JSON, detail: { redacted: true }, at: finishedAt }];
			this.journal.completeAttempt(start, done, record);
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
		if (row?.status === 'failed') throw row.errorCode === ErrorCode.ChildWorkflowFailed ? childFailure(row) : this.journal.failure(row);
		// A rollback pass only learns closures: an unfinished child step is not started or awaited.
		if (this.hooks.replayOnly) return this.parked();
		if (!row && this.frontier.behind()) await this.assertOnRecord('child', name);
		const children = this.hooks.children;
		if (!children) throw new ValidationError(ErrorCode.InvalidOptions, `step.${mode}("${name}") needs a host that reaches other instances`);
		return runChildStep(this.journal, children, key, mode, name, Child, options);
	}

	async sleep(name: string, duration: string | number): Promise<void> {
		const key = this.enter('sleep', name);
		const row = this.rows.get(key);
		if (row?.status === 'completed') return;
		if (this.hooks.replayOnly) return this.parked();
		if (!row && this.frontier.behind()) await this.assertOnRecord('sleep', name);
		const ms = row ? 0 : parseDuration(duration);
		return this.sleepStep(key, name, row, row?.wakeAt ?? this.hooks.now() + ms);
	}

	async sleepUntil(name: string, until: Date | number): Promise<void> {
		const key = this.enter('sleep', name);
		const row = this.rows.get(key);
		if (row?.status === 'completed') return;
		if (this.hooks.replayOnly) return this.parked();
		if (row) return this.sleepStep(key, name, row, row.wakeAt ?? this.hooks.now());
		if (this.frontier.behind()) await this.assertOnRecord('sleep', name);
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
		if (!row && this.frontier.behind()) await this.assertOnRecord('wait', stepName);
		if (!this.entry.workflow.events || !Object.hasOwn(this.entry.workflow.events, event)) {
			throw new ValidationError(ErrorCode.UnknownEvent, `workflow type "${this.entry.type}" does not declare event "${event}" in static events`);
		}
		const timeoutMs = options?.timeout === undefined ? undefined : parseDuration(options.timeout);
		const now = this.hooks.now();
		const base = row ?? this.journal.newRow(key, stepName, 'wait');

		const buffered = this.store.oldestEvent(event);
		if (buffered) {
			// Consuming the event and completing the wait are one transaction: never lost, never twice.
			const done: StepRow = { ...base, status: 'completed', result: buffered.payload, startedAt: base.startedAt ?? now, finishedAt: now, wakeAt: null };
			this.journal.transact(() => {
				this.store.deleteEvent(buffered.seq);
				this.store.deleteWakeup(key);
				this.journal.write(done);
				this.hooks.record({ kind: 'event.consumed', step: stepName, value: buffered.payload, detail: { event } });
			});
			return fromStoredJson(buffered.payload);
		}
		if (!row) {
			const wakeAt = timeoutMs === undefined ? null : now + timeoutMs;
			this.journal.transact(() => {
				this.journal.write({ ...base, status: 'waiting', startedAt: now, wakeAt });
				if (wakeAt !== null) this.hooks.setWakeup(key, wakeAt);
				this.hooks.record({ kind: 'wait.started', step: stepName, detail: { event, timeoutAt: wakeAt } });
			});
			throw this.journal.suspend('waiting');
		}
		if (row.wakeAt !== null && row.wakeAt <= now) {
			this.journal.transact(() => {
				this.store.deleteWakeup(key);
				this.journal.write({ ...row, status: 'timed_out', finishedAt: now, errorName: 'EventTimeoutError', errorMessage: `timed out waiting for "${event}"`, errorCode: ErrorCode.EventTimeout });
				this.hooks.record({ kind: 'wait.timed_out', step: stepName, detail: { event } });
			});
			throw new EventTimeoutError(stepName, event);
		}
		throw this.journal.suspend('waiting');
	}

	async setAttributes(name: string, attributes: Record<string, unknown>): Promise<void> {
		const key = this.enter('attributes', name);
		if (this.rows.get(key)?.status === 'completed') return;
		if (this.hooks.replayOnly) return this.parked();
		if (this.frontier.behind()) await this.assertOnRecord('attributes', name);
		if (!this.hooks.setAttributes) throw new ValidationError(ErrorCode.InvalidOptions, 'step.setAttributes needs a host that indexes instances');
		const now = this.hooks.now();
		const row: StepRow = { ...this.journal.newRow(key, name, 'attributes'), status: 'completed', attempts: 1, startedAt: now, finishedAt: now, result: JSON.stringify(attributes ?? null) };
		this.journal.willWrite();
		this.hooks.setAttributes(attributes, row, name);
		this.rows.set(key, row);
	}

	async patched(id: string): Promise<boolean> {
		const key = this.enter('patch', id);
		if (this.rows.has(key)) return true;
		if (this.hooks.replayOnly) return this.parked();
		// A history that passed this point without the marker keeps the old branch.
		if (!(await this.frontier.atFrontier())) return false;
		this.recordPatch(key, id);
		return true;
	}

	async deprecatePatch(id: string): Promise<void> {
		const key = this.enter('patch', id);
		if (this.rows.has(key)) return;
		if (this.hooks.replayOnly) return this.parked();
		if (await this.frontier.atFrontier()) this.recordPatch(key, id);
	}

	async webhook<Body = unknown>(name: string, options?: WebhookOptions): Promise<WebhookHandle<Body>> {
		const key = this.enter('webhook', name);
		checkKnownOptions('webhook', name, options, ['timeout']);
		let row = this.rows.get(key);
		if (!row) {
			if (this.hooks.replayOnly) return this.parked();
			if (this.frontier.behind()) await this.assertOnRecord('webhook', name);
			const timeoutMs = options?.timeout === undefined ? undefined : parseDuration(options.timeout);
			if (!this.hooks.issueWebhook) throw new ValidationError(ErrorCode.InvalidOptions, 'step.webhook needs a host that signs webhook tokens (the workerd runner, or the test kit)');
			const nonce = newWebhookNonce();
			const url = await this.hooks.issueWebhook(name, nonce);
			this.journal.checkAbort();
			const now = this.hooks.now();
			const expiresAt = timeoutMs === undefined ? null : now + timeoutMs;
			const created: StepRow = {
				...this.journal.newRow(key, name, 'webhook'),
				status: 'waiting',
				result: storedWebhookRecord({ url, expiresAt, nonce }),
				startedAt: now,
				wakeAt: expiresAt,
			};
			// The URL is durable before run() sees it: what the author sends out always works.
			this.journal.transact(() => {
				this.journal.write(created);
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
			this.journal.transact(() => {
				this.store.deleteWakeup(key);
				this.journal.write({ ...row, status: 'timed_out', finishedAt: now, errorName: 'WebhookExpiredError', errorMessage: `webhook "${name}" expired before it was called`, errorCode: ErrorCode.WebhookExpired });
				this.hooks.record({ kind: 'webhook.timed_out', step: name });
			});
			throw new WebhookExpiredError(`webhook "${name}" expired before it was called`);
		}
		throw this.journal.suspend('waiting');
	}

	/**
	 * The steps `run()` never reached although they were recorded, when it settled
	 * without a suspension: the code dropped a step the history has.
	 */
	unreachedAtEnd(): Promise<Divergence | undefined> {
		if (!this.frontier.behind() || this.signal || this.fatal) return Promise.resolve(undefined);
		return this.frontier.unreachedAtEnd();
	}

	private recordPatch(key: string, id: string): void {
		const now = this.hooks.now();
		this.journal.write({ ...this.journal.newRow(key, id, 'patch'), status: 'completed', startedAt: now, finishedAt: now });
		this.hooks.record({ kind: 'patch.recorded', step: id });
	}

	/**
	 * A step with no record while recorded steps remain unreached: the code changed
	 * under this instance (or a step name is not deterministic). Nothing new runs.
	 */
	private async assertOnRecord(kind: StepKind, name: string): Promise<void> {
		const divergence = await this.frontier.divergenceAt(kind, name);
		if (!divergence) return;
		if (this.signal) throw this.signal;
		this.divergence ??= divergence;
		throw (this.journal.signal = new AbortSignal_('diverged'));
	}

	private sleepStep(key: string, name: string, row: StepRow | undefined, wakeAt: number): Promise<void> {
		const now = this.hooks.now();
		const base = row ?? this.journal.newRow(key, name, 'sleep');
		if (wakeAt <= now) {
			this.journal.transact(() => {
				this.store.deleteWakeup(key);
				if (!row) this.hooks.record({ kind: 'sleep.started', step: name, detail: { until: wakeAt } });
				this.journal.write({ ...base, status: 'completed', startedAt: base.startedAt ?? now, finishedAt: now, wakeAt });
				this.hooks.record({ kind: 'sleep.finished', step: name });
			});
			return Promise.resolve();
		}
		if (!row) {
			this.journal.transact(() => {
				this.journal.write({ ...base, status: 'sleeping', startedAt: now, wakeAt });
				this.hooks.setWakeup(key, wakeAt);
				this.hooks.record({ kind: 'sleep.started', step: name, detail: { until: wakeAt } });
			});
		}
		throw this.journal.suspend('sleeping');
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
		this.journal.assertWithinLimits(`emit ${topic}`);
		this.journal.checkAbort();
		streams.take(this.hooks.now(), topic);
		this.journal.transact(() => this.hooks.record({ kind: 'stream.message', step: topic, attempt: index, value: json ?? 'null' }));
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
			this.frontier.reachAfterClose(key);
			throw new AbortSignal_('finished');
		}
		if (!this.frontier.claim(key)) {
			this.journal.fatal = new DeterminismError(
				`step name "${name}" (${kind}) is used twice in one run; step names must be unique and deterministic (no Date.now() or random values in names)`,
			);
			throw this.journal.fatal;
		}
		try {
			this.hooks.checkBoundary();
		} catch (signal) {
			if (signal instanceof SuspendSignal || signal instanceof AbortSignal_) this.journal.signal = signal;
			throw signal;
		}
		return key;
	}

	private async attemptFailed(running: StepRow, error: unknown, attempt: number, policy: ResolvedRetryPolicy, about: Pick<StepAttempt, 'step' | 'config'>): Promise<never> {
		this.journal.checkAbort();
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
			this.journal.checkAbort();
		}
		const { name: errorName, message, stack, code } = describeThrown(failure);
		const errorStack = stack ?? null;
		const errorCode = code ?? null;
		const now = this.hooks.now();
		const described = { name: errorName, message, ...(code ? { code } : {}), ...(stack ? { stack } : {}) };
		if (delayMs === undefined) {
			this.hooks.log({ severity: 'error', event: 'step.failed', step: running.name, attempt, willRetry: false, error: described });
			this.journal.transact(() => {
				this.journal.write({ ...this.journal.failedRow(running, attempt, errorName, message, now), errorStack, errorCode });
				this.hooks.record({ kind: 'step.failed', step: running.name, attempt, detail: { error: historyError(described) } });
			});
			throw this.journal.failure(this.rows.get(running.key)!);
		}
		const wakeAt = now + delayMs;
		this.hooks.log({ severity: 'warn', event: 'step.attempt_failed', step: running.name, attempt, willRetry: true, retryAt: wakeAt, error: described });
		this.journal.transact(() => {
			this.journal.write({ ...running, status: 'retrying', errorName, errorMessage: message, errorStack, errorCode, wakeAt });
			this.hooks.setWakeup(running.key, wakeAt);
			this.hooks.record({ kind: 'step.attempt_failed', step: running.name, attempt, detail: { error: historyError(described), retryAt: wakeAt } });
		});
		throw this.journal.suspend('sleeping');
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
	/** Called once if the attempt is still pending after SETTLE_TURNS (it awaits I/O), before its timer is armed. */
	onPending?: () => void,
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
		return await raceTimeout(fn, context, timeoutMs, name, abort, onPending);
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

async function raceTimeout<T>(
	fn: (attempt: StepAttempt) => Promise<T> | T,
	context: StepAttempt,
	timeoutMs: number,
	name: string,
	abort: AttemptAbort,
	onPending: (() => void) | undefined,
): Promise<T> {
	const attempt = Promise.resolve().then(() => fn(context));
	let settled = false;
	attempt.then(
		() => (settled = true),
		() => (settled = true),
	);
	for (let turn = 0; turn < SETTLE_TURNS && !settled; turn++) await undefined;
	if (settled) return attempt;
	onPending?.();
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
