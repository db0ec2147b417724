import { SPAN, type TraceSpan } from '../support/tracer';
import { parseDuration } from '../support/duration';
import {
	ErrorCode,
	EventTimeoutError,
	WebhookExpiredError,
	ValidationError,
} from '../support/errors';
import { MAX_DURATION_MS } from '../support/duration';
import { runChildStep } from './child-step';
import { childFailure, readChildRef, type ChildRef } from '../children/child-workflows';
import type { ChildClass, ChildOptions } from '../definition/child-options';
import { historyError, type HistoryRecord } from '../history/history';
import { resultExceedsHistoryLimit } from '../definition/instance-limits';
import { fromStoredJson, toStoredJson } from '../support/json';
import { failedAttemptOutcome, type ResolvedRetryPolicy, type RetryPolicy } from '../definition/retry-policy';
import { checkKnownOptions, resolveStepDoOptions } from '../definition/step-options';
import { REDACTED_STEP_OUTPUT_JSON } from '../definition/sensitive-output';
import { newWebhookNonce, readWebhookRecord, storedWebhookRecord } from '../webhooks/webhook';
import { isSignal } from './signals';
import { runAttempt } from './attempt';
import type { StepRow } from '../storage/store';
import { describeThrown } from '../support/thrown-value';
import type { Step, StepAttempt, StepDoOptions, WaitForEventOptions, WebhookHandle, WebhookOptions } from '../definition/types';
import { checkMessageSize, checkTopic } from '../streams/stream';
import { validateWith } from '../definition/schema-validation';
import { StepOpening, type Answered } from './step-opening';

/**
 * The `step` object of one replay pass. Completed steps answer from the rows
 * loaded at the start of the pass; new outcomes are written through to the
 * store and to that in-memory copy.
 */
export class StepContext extends StepOpening implements Step<any, any> {
	/** `step.emit` calls so far in this pass (the n-th is the run's n-th message), and how many the run had recorded before it. */
	private emits = 0;
	private emitsRecorded: number | undefined;

	async do<T>(name: string, fn: (attempt: StepAttempt) => Promise<T> | T, options?: StepDoOptions): Promise<T> {
		let resolved!: ReturnType<typeof resolveStepDoOptions>;
		const opened = this.open<T>('do', name, {
			// Checked on replays too: a config the engine does not understand fails the run wherever it is met.
			check: () => (resolved = resolveStepDoOptions(name, options, this.entry.workflow.defaults?.retries as RetryPolicy | undefined)),
			recorded: (row) => {
				if (row.status === 'completed') return { answer: this.replayedDo<T>(name, row, options) };
				if (row.status === 'failed') throw this.journal.failure(row);
				return undefined;
			},
		});
		if ('answer' in opened) return opened.answer;
		if (opened.ready) await opened.ready;
		const { key, row } = opened;
		const { policy, timeoutMs, config } = resolved;

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
		// `at`: when this attempt began (a retry's row keeps its first attempt's startedAt).
		// A retry's attempt defers its start the same way: written with its outcome when it settles at once (a failure's
		// with its `retrying`, which the compact store folds into the `sleeping` status's put at storage format 5).
		const start = this.journal.beginAttempt(running, { kind: 'step.started', step: name, attempt, at: now }, { first: !row, defer: this.hooks.startsFirst !== true });
		const writeStart = () => this.journal.writeStart(start);
		// The attempt counts against the invocation's step budget from its start; that is final once it is still pending
		// after its first microtask turns (it awaits I/O), else it is refunded once, when it settles.
		let budgetSettled = false;
		const onPending = () => {
			budgetSettled = true;
			writeStart();
		};

		// Only started attempts are counted: a replayed step returns above without this cost.
		this.running++;
		// The attempt's span (none when this invocation is not traced): the function runs inside it, so its own spans nest.
		let span: TraceSpan | undefined;
		const tracer = this.hooks.tracer;
		let json: string | null;
		try {
			try {
				const wrapped = this.hooks.wrapStepFunction === undefined ? fn : (this.hooks.wrapStepFunction({ name, attempt, timeoutMs }, fn) as typeof fn);
				const attrs = { [SPAN.step]: name, [SPAN.kind]: 'do', [SPAN.attempt]: attempt };
				const run: typeof fn = tracer ? (ctx) => tracer.run('shardflow.step', attrs, (s) => ((span = s), wrapped(ctx))) : wrapped;
				const value = await runAttempt(run, attempt, timeoutMs, name, this.liveAttempts, this.cancelled, { step: { name, count: 1 }, config }, onPending);
				if (!budgetSettled) {
					budgetSettled = true;
					this.hooks.attemptSettledAtOnce?.();
				}
				json = toStoredJson(value, `result of step "${name}"`);
			} catch (error) {
				// A result that is no JSON throws here after the refund above: refunded once only.
				if (!budgetSettled) {
					budgetSettled = true;
					this.hooks.attemptSettledAtOnce?.();
				}
				// An attempt that failed (or suspended) keeps the records it always had: started, then its outcome. A failure's
				// start is written in the transaction of its outcome (PassJournal.transact), or before any other write meanwhile.
				if (isSignal(error)) {
					writeStart();
					span?.set({ [SPAN.outcome]: 'interrupted' });
					throw error;
				}
				return await this.attemptFailed(running, error, attempt, policy, { step: { name, count: 1 }, config }, span);
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
			span?.set({ [SPAN.outcome]: 'completed' });
		} finally {
			span?.end();
			if (--this.running === 0) this.whenIdle?.();
		}
		if (this.hooks.logsStepCompletions) this.hooks.log({ severity: 'debug', event: 'step.completed', step: name, attempt });
		const yielding = this.gate.stepDone();
		if (yielding) await yielding;
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
		// A rollback pass only learns closures: an unfinished child step is not started or awaited.
		const opened = this.open<unknown>('child', name, {
			recorded: (row) => {
				if (row.status === 'completed') return { answer: mode === 'start' ? readChildRef(row).childId : fromStoredJson(row.result) };
				if (row.status === 'failed') throw row.errorCode === ErrorCode.ChildWorkflowFailed ? childFailure(row) : this.journal.failure(row);
				return undefined;
			},
		});
		if ('answer' in opened) return opened.answer;
		if (opened.ready) await opened.ready;
		const { key } = opened;
		const children = this.hooks.children;
		if (!children) throw new ValidationError(ErrorCode.InvalidOptions, `step.${mode}("${name}") needs a host that reaches other instances`);
		// Counted like an attempt: a create (with an invoke's first ask) still under way when run() settles, say a sibling
		// in a Promise.all suspended, holds the pass's end, so its row is written by this pass and never after it.
		this.running++;
		try {
			return await runChildStep(this.journal, children, key, mode, name, Child, options, this.liveAttempts);
		} finally {
			if (--this.running === 0) this.whenIdle?.();
		}
	}

	async sleep(name: string, duration: string | number): Promise<void> {
		const opened = this.open<void>('sleep', name, { recorded: completedSleep });
		if ('answer' in opened) return opened.answer;
		if (opened.ready) await opened.ready;
		const { key, row } = opened;
		const ms = row ? 0 : parseDuration(duration);
		return this.sleepStep(key, name, row, row?.wakeAt ?? this.hooks.now() + ms);
	}

	async sleepUntil(name: string, until: Date | number): Promise<void> {
		const opened = this.open<void>('sleep', name, { recorded: completedSleep });
		if ('answer' in opened) return opened.answer;
		if (opened.ready) await opened.ready;
		const { key, row } = opened;
		if (row) return this.sleepStep(key, name, row, row.wakeAt ?? this.hooks.now());
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
		const opened = this.open<unknown>('wait', stepName, {
			recorded: (row) => {
				if (row.status === 'completed') return { answer: fromStoredJson(row.result) };
				if (row.status === 'timed_out') throw new EventTimeoutError(stepName, event);
				return undefined;
			},
		});
		if ('answer' in opened) return opened.answer;
		if (opened.ready) await opened.ready;
		const { key, row } = opened;
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
			this.hooks.log({ severity: 'info', event: 'wait.timed_out', step: stepName, eventName: event, error: { name: 'EventTimeoutError', message: `timed out waiting for "${event}"`, code: ErrorCode.EventTimeout } });
			throw new EventTimeoutError(stepName, event);
		}
		throw this.journal.suspend('waiting');
	}

	async setAttributes(name: string, attributes: Record<string, unknown>): Promise<void> {
		// Its row is written completed or not at all.
		const opened = this.open<void>('attributes', name, { recorded: (row) => (row.status === 'completed' ? { answer: undefined } : undefined) });
		if ('answer' in opened) return opened.answer;
		if (opened.ready) await opened.ready;
		const { key } = opened;
		if (!this.hooks.setAttributes) throw new ValidationError(ErrorCode.InvalidOptions, 'step.setAttributes needs a host that indexes instances');
		const now = this.hooks.now();
		const row: StepRow = { ...this.journal.newRow(key, name, 'attributes'), status: 'completed', attempts: 1, startedAt: now, finishedAt: now, result: JSON.stringify(attributes ?? null) };
		this.journal.willWrite();
		this.hooks.setAttributes(attributes, row, name);
		this.rows.set(key, row);
	}

	async patched(id: string): Promise<boolean> {
		const opened = this.open<boolean>('patch', id, { recorded: () => ({ answer: true }) });
		if ('answer' in opened) return opened.answer;
		if (opened.ready) await opened.ready;
		// A history that passed this point without the marker keeps the old branch.
		if (!(await this.frontier.atFrontier())) return false;
		this.recordPatch(opened.key, id);
		return true;
	}

	async deprecatePatch(id: string): Promise<void> {
		const opened = this.open<void>('patch', id, { recorded: () => ({ answer: undefined }) });
		if ('answer' in opened) return opened.answer;
		if (opened.ready) await opened.ready;
		if (await this.frontier.atFrontier()) this.recordPatch(opened.key, id);
	}

	async webhook<Body = unknown>(name: string, options?: WebhookOptions): Promise<WebhookHandle<Body>> {
		const opened = this.open<WebhookHandle<Body>>('webhook', name, {
			check: () => checkKnownOptions('webhook', name, options, ['timeout']),
			// A webhook created in an earlier pass answers its handle (its row holds the URL), whatever its state.
			recorded: (row) => ({ answer: this.webhookHandle<Body>(row.key, name, row) }),
		});
		if ('answer' in opened) return opened.answer;
		if (opened.ready) await opened.ready;
		const { key } = opened;
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
		return this.webhookHandle<Body>(key, name, created);
	}

	/** A webhook's handle: its URL and expiry from its row, and `wait()`. */
	private webhookHandle<Body>(key: string, name: string, row: StepRow): WebhookHandle<Body> {
		const { url, expiresAt } = readWebhookRecord(row.result);
		return { url, expiresAt, wait: () => this.waitForWebhook<Body>(key, name) };
	}

	/** `hook.wait()`: the POSTed body once it came; suspends until then; WEBHOOK_EXPIRED after the timeout. */
	private async waitForWebhook<Body>(key: string, name: string): Promise<Body> {
		const row = this.rows.get(key)!;
		if (row.status === 'completed') return readWebhookRecord(row.result).body as Body;
		if (row.status === 'timed_out') throw new WebhookExpiredError(`webhook "${name}" expired before it was called`);
		if (this.hooks.replayOnly) return this.parked();
		this.assertOpen();
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

	private recordPatch(key: string, id: string): void {
		const now = this.hooks.now();
		this.journal.write({ ...this.journal.newRow(key, id, 'patch'), status: 'completed', startedAt: now, finishedAt: now });
		this.hooks.record({ kind: 'patch.recorded', step: id });
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
		this.assertOpen();
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

	private async attemptFailed(running: StepRow, error: unknown, attempt: number, policy: ResolvedRetryPolicy, about: Pick<StepAttempt, 'step' | 'config'>, span?: TraceSpan): Promise<never> {
		this.journal.checkAbort();
		// A result too large for the history fails for good too; a delay function that fails schedules no retry.
		const { failure, delayMs } = await failedAttemptOutcome(policy, { attempt, error, ctx: { attempt, ...about } }, [ErrorCode.TooLarge]);
		// A terminate or restart that came while the delay function ran wins.
		this.journal.checkAbort();
		const { name: errorName, message, stack, code } = describeThrown(failure);
		const errorStack = stack ?? null;
		const errorCode = code ?? null;
		const now = this.hooks.now();
		const described = { name: errorName, message, ...(code ? { code } : {}), ...(stack ? { stack } : {}) };
		span?.fail(described);
		span?.set(delayMs === undefined ? { [SPAN.outcome]: 'failed' } : { [SPAN.outcome]: 'retrying', [SPAN.retryDelayMs]: delayMs });
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

/** A sleep's recorded answer: once completed, it returns at once. */
function completedSleep(row: StepRow): Answered<void> | undefined {
	return row.status === 'completed' ? { answer: undefined } : undefined;
}
