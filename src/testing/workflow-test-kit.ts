import type { Duration } from '../engine/support/duration';
import type { HistoryEvent } from '../engine/history/history';
import type { RestartFrom } from '../engine/steps/restart-from';
import type { EventInput, EventName, Serializable, StepSummary, WorkflowStatusInfo } from '../engine/definition/types';
import type { WorkflowStatus } from '../engine/support/statuses';
import { FINISHED_STATUSES } from '../engine/support/statuses';
import type { EventsOf, OutputOf, PayloadInputOf } from '../engine/definition/class-types';
import type { InstanceDriver } from './instance-driver';
import type { InstanceModifiers } from './instance-modifiers';
import type { MockTimes } from './step-mocks';
import { StatusNotReachedError, TestKitError, TestKitErrorCode } from './test-kit-errors';
import { durationMs } from './virtual-clock';

/** Any workflow class an author registered. */
export type TestableWorkflow = { readonly type: string; new (...args: any[]): { run(step: any, payload: any): Promise<unknown> } };

/** How many timers one `advance` or settle may fire before the kit calls it a runaway loop. */
const MAX_TIMERS_PER_SETTLE = 10_000;

/**
 * One workflow instance under test, with Cloudflare-style modifiers (mocks,
 * disabled sleeps and retry delays, forced timeouts), a virtual clock and
 * inspection. The same class drives the pure engine on Node and the real
 * `WorkflowRunner` in workerd; only the `InstanceDriver` differs.
 *
 * Everything is deterministic: after every action the kit waits until the
 * instance has nothing left to do, and time moves only when the test (or a
 * modifier) moves it. So `waitForStatus` never polls: it settles, then
 * either the status is the one expected or it says where the instance stands.
 *
 * @example
 * const payment = testWorkflow(PaymentWorkflow);
 * payment.mockStepError('charge-card', new Error('card network down'), { times: 2 });
 * payment.disableRetryDelays();
 * await payment.start({ amount: 42, currency: 'EUR' });
 * await payment.sendEvent('approval', { approved: true, reviewer: 'alice' });
 * await payment.waitForStatus('completed');
 * expect(await payment.output()).toMatchObject({ status: 'charged' });
 */
export class WorkflowTestKit<W extends TestableWorkflow> {
	private started: boolean;

	/** The instance's clock: `advance` fires every sleep, retry wait and event timeout that falls due, in time order. */
	readonly clock: {
		now(): number;
		advance(duration: Duration): Promise<void>;
		advanceTo(at: Date | number): Promise<void>;
	};

	constructor(
		readonly workflow: W,
		private readonly driver: InstanceDriver,
		private readonly modifiers: InstanceModifiers,
		/** Already created (by the Worker's own code, see `introspectWorkflow`): `start` is refused, the rest works at once. */
		options: { created?: boolean } = {},
	) {
		this.started = options.created === true;
		this.clock = {
			now: () => driver.now(),
			advance: (duration) => this.advanceTo(driver.now() + durationMs(duration)),
			advanceTo: (at) => this.advanceTo(typeof at === 'number' ? at : at.getTime()),
		};
	}

	get id(): string {
		return this.driver.id;
	}

	// ---- modifiers (before or after start; see InstanceModifiers) ----

	/** Every attempt of `step.do(step)` returns `result` instead of running the step's function. */
	mockStepResult(step: string, result: unknown): this {
		this.modifiers.mockStepResult(step, result);
		return this;
	}

	/** Attempts of `step.do(step)` throw `error` (all of them, or the first `times`); retried per the step's policy. */
	mockStepError(step: string, error: unknown, options?: MockTimes): this {
		this.modifiers.mockStepError(step, error, options);
		return this;
	}

	/** Attempts of `step.do(step)` time out (`STEP_TIMEOUT`, all of them or the first `times`), whatever the step's `timeout`. */
	forceStepTimeout(step: string, options?: MockTimes): this {
		this.modifiers.forceStepTimeout(step, options);
		return this;
	}

	/** Sleeps end at once (the clock jumps to their end; timers due before it fire first). Only the named ones, if given. */
	disableSleeps(steps?: readonly string[]): this {
		this.modifiers.disableSleeps(steps);
		return this;
	}

	/** Retries of failed steps start at once (the clock jumps over the backoff). Only of the named steps, if given. */
	disableRetryDelays(steps?: readonly string[]): this {
		this.modifiers.disableRetryDelays(steps);
		return this;
	}

	/** The wait named `step` (the event name unless `waitForEvent` was given a `name`) times out as soon as it waits. */
	forceEventTimeout(step: string): this {
		this.modifiers.forceEventTimeout(step);
		return this;
	}

	// ---- actions ----

	/** Creates the instance with `payload` (checked by the workflow's schema) and runs it until it has nothing left to do. */
	async start(payload: Serializable<PayloadInputOf<W>>): Promise<this> {
		if (this.started) throw new TestKitError(TestKitErrorCode.AlreadyStarted, `instance "${this.id}" was already started`);
		this.started = true;
		await this.driver.create(payload);
		await this.settle();
		return this;
	}

	/** Sends a declared event (buffered if the wait is not reached yet), then settles. */
	async sendEvent<K extends EventName<EventsOf<W>>>(event: K, payload: Serializable<EventInput<EventsOf<W>[K]>>): Promise<void> {
		this.assertStarted();
		await this.driver.sendEvent(event, payload);
		await this.settle();
	}

	async pause(): Promise<WorkflowStatus> {
		return this.control('pause');
	}
	async resume(): Promise<WorkflowStatus> {
		return this.control('resume');
	}
	/** With `rollback`, the rollbacks of the completed steps run first (status `rolling_back`, then `terminated`). */
	async terminate(options: { rollback?: boolean } = {}): Promise<WorkflowStatus> {
		return this.control('terminate', options);
	}

	/**
	 * POSTs `body` to the pending webhook of `step` (`step.webhook`), as an outside system
	 * would, then settles. A second call, or one after the timeout, throws the engine's
	 * typed error (`WEBHOOK_USED`, `WEBHOOK_EXPIRED`); a step with no pending webhook
	 * throws `TESTKIT_NO_PENDING_WEBHOOK`.
	 */
	async callWebhook(step: string, body: unknown): Promise<void> {
		this.assertStarted();
		await this.settle();
		const pending = (await this.driver.status()).webhooks?.find((hook) => hook.step === step);
		const url = pending?.url ?? (await this.issuedWebhookUrl(step));
		await this.driver.callWebhook(url, body);
		await this.settle();
	}
	/** Reruns the finished instance in a new generation: from the start, or `{from}` a step (docs/writing-workflows.md "Restart from a step"). */
	async restart(options: { from?: RestartFrom } = {}): Promise<WorkflowStatus> {
		return this.control('restart', options);
	}

	/**
	 * Kills the instance's isolate where it stands (a step in flight is abandoned)
	 * and brings it back as the runtime would: a fresh engine over the same
	 * storage, woken by its alarm, replaying from the top. An instance that was
	 * running (a pass in flight) is woken by its watchdog alarm, so the clock
	 * moves to it; one that was sleeping or waiting keeps its place and its
	 * clock: its alarm fires when `clock.advance` reaches it, as it would have
	 * without the crash.
	 */
	async crash(): Promise<void> {
		this.assertStarted();
		const before = (await this.driver.status()).status;
		await this.driver.crash();
		const alarm = await this.driver.nextAlarm();
		const passInFlight = before === 'running' || before === 'created' || before === 'rolling_back';
		if (alarm !== undefined && (passInFlight || alarm <= this.driver.now())) await this.advanceTo(alarm);
		await this.settle();
	}

	// ---- waiting ----

	/** Settles the instance and checks it is in `status`; otherwise throws `StatusNotReachedError` saying where it stands. */
	async waitForStatus(status: WorkflowStatus): Promise<WorkflowStatusInfo> {
		this.assertStarted();
		await this.settle();
		const info = await this.driver.status();
		if (info.status !== status) throw new StatusNotReachedError(status, info.status, whereItStands(info, await this.driver.steps()));
		return info;
	}

	/** Settles the instance and returns the stored result of `step.do(step)`; throws if that step has not completed. */
	async waitForStepResult<T = unknown>(step: string): Promise<T> {
		this.assertStarted();
		await this.settle();
		const steps = await this.driver.steps();
		const found = steps.find((s) => s.kind === 'do' && s.name === step);
		if (found?.status === 'completed') return found.result as T;
		const info = await this.driver.status();
		const state = found
			? `step "${step}" is ${found.status} after ${found.attempts} attempt(s)${found.error ? ` (${found.error.name}: ${found.error.message})` : ''}`
			: `step "${step}" was never reached`;
		throw new TestKitError(TestKitErrorCode.StepResultUnavailable, `${state}; the instance settled "${info.status}"${whereItStands(info, steps)}`);
	}

	// ---- inspection ----

	async status(): Promise<WorkflowStatusInfo> {
		this.assertStarted();
		return this.driver.status();
	}

	/** The completed instance's output; throws if it has not completed. */
	async output(): Promise<OutputOf<W>> {
		const info = await this.status();
		if (info.status !== 'completed') {
			throw new TestKitError(TestKitErrorCode.NoOutput, `instance "${this.id}" has no output: it is ${info.status}${whereItStands(info, await this.driver.steps())}`);
		}
		return info.output as OutputOf<W>;
	}

	/** The errored instance's error (name, message, code, stack); throws if it has not errored. */
	async error(): Promise<NonNullable<WorkflowStatusInfo['error']>> {
		const info = await this.status();
		if (info.status !== 'errored' || !info.error) {
			throw new TestKitError(TestKitErrorCode.NoOutput, `instance "${this.id}" has no error: it is ${info.status}`);
		}
		return info.error;
	}

	/** Every step of the current run, oldest first, with results, errors and attempt counts. */
	async steps(): Promise<StepSummary[]> {
		this.assertStarted();
		return this.driver.steps();
	}

	/** The full history of the current run, as `GET /workflows/:id/history` exports it (see docs/history-format.md). */
	async history(): Promise<HistoryEvent[]> {
		this.assertStarted();
		return this.driver.history();
	}

	/** Mocked steps that never had their function replaced (a typo, or a branch the run did not take). */
	unusedMocks(): string[] {
		return this.modifiers.mocks.unused();
	}

	/** Throws `UnusedMockError` naming each mocked step that never ran, and the steps the run did reach. */
	assertAllMocksUsed(): void {
		this.modifiers.mocks.assertAllUsed();
	}

	async dispose(): Promise<void> {
		await this.driver.dispose();
	}

	// ---- internals ----

	/** The URL a webhook step issued, from its history record: a used or expired one, so the engine can refuse it. */
	private async issuedWebhookUrl(step: string): Promise<string> {
		const created = (await this.driver.history()).find((e) => e.kind === 'webhook.created' && e.step === step);
		if (created?.kind === 'webhook.created') return created.url;
		throw new TestKitError(TestKitErrorCode.NoPendingWebhook, `instance "${this.id}" has no webhook named "${step}" (step.webhook was not reached)`);
	}

	private async control(operation: 'pause' | 'resume' | 'terminate' | 'restart', options: { rollback?: boolean; from?: RestartFrom } = {}): Promise<WorkflowStatus> {
		this.assertStarted();
		const status = await this.driver.control(operation, options);
		await this.settle();
		return status;
	}

	private assertStarted(): void {
		if (!this.started) throw new TestKitError(TestKitErrorCode.NotStarted, `instance "${this.id}" is not started yet: call start(payload) first`);
	}

	/** Fires, in time order, every alarm due by `at`, leaves the clock at `at`, then settles. */
	private async advanceTo(at: number): Promise<void> {
		this.assertStarted();
		if (typeof at !== 'number' || !Number.isFinite(at)) {
			throw new TestKitError(TestKitErrorCode.InvalidTime, `clock.advanceTo needs a valid Date or epoch milliseconds, got ${String(at)}`);
		}
		if (at < this.driver.now()) {
			throw new TestKitError(TestKitErrorCode.InvalidTime, `clock.advanceTo(${new Date(at).toISOString()}) is before the virtual clock (${new Date(this.driver.now()).toISOString()}): the clock only moves forward`);
		}
		await this.driver.idle();
		await this.fireAlarmsDueBy(at);
		this.driver.moveClockTo(at);
		await this.settle();
	}

	private async fireAlarmsDueBy(at: number): Promise<void> {
		for (let fired = 0; ; fired++) {
			if (fired > MAX_TIMERS_PER_SETTLE) throw runaway(this.id);
			const alarm = await this.driver.nextAlarm();
			if (alarm === undefined || alarm > at) return;
			this.driver.moveClockTo(alarm);
			await this.driver.fireAlarm();
		}
	}

	/**
	 * Waits until the instance is idle, firing the alarms already due and jumping over the
	 * timers the modifiers skip. Every action does it before it returns; `introspector.get()`
	 * does it for instances the Worker's own code created, outside the kit.
	 */
	async settle(): Promise<void> {
		for (let jumps = 0; ; jumps++) {
			if (jumps > MAX_TIMERS_PER_SETTLE) throw runaway(this.id);
			await this.driver.idle();
			// The runtime fires an alarm that is due at once: a retry delay, sleep or event timeout of 0
			// is due the moment it begins, and needs no clock move.
			await this.fireAlarmsDueBy(this.driver.now());
			const skip = await this.skippedTimer();
			if (skip === undefined) return;
			await this.fireAlarmsDueBy(skip);
			this.driver.moveClockTo(skip);
		}
	}

	/** The wake-up time of a pending sleep, retry wait or forced event timeout that a modifier skips, if any. */
	private async skippedTimer(): Promise<number | undefined> {
		if (!this.modifiers.skipsTimers) return undefined;
		const info = await this.driver.status();
		if (FINISHED_STATUSES.includes(info.status) || info.status === 'paused') return undefined;
		let earliest: number | undefined;
		for (const step of await this.driver.steps()) {
			if (step.wakeAt === null) {
				if (this.modifiers.forcesTimeoutOf(step)) {
					throw new TestKitError(
						TestKitErrorCode.InvalidMock,
						`forceEventTimeout("${step.name}"): the wait has no timeout, so it can never time out; give waitForEvent a timeout`,
					);
				}
				continue;
			}
			if (this.modifiers.skips(step) && (earliest === undefined || step.wakeAt < earliest)) earliest = step.wakeAt;
		}
		return earliest;
	}
}

function runaway(id: string): TestKitError {
	return new TestKitError(
		TestKitErrorCode.TimersNeverSettle,
		`instance "${id}" fired more than ${MAX_TIMERS_PER_SETTLE} timers without settling: a loop of sleeps or retries that never ends?`,
	);
}

/** Where a settled instance stands, for error messages: the step it sleeps or waits on, and how to move on. */
function whereItStands(info: WorkflowStatusInfo, steps: StepSummary[]): string {
	if (info.status === 'errored' && info.error) return ` with ${info.error.name}: ${info.error.message}`;
	const pending = steps.filter((s) => s.status === 'sleeping' || s.status === 'waiting' || s.status === 'retrying');
	if (pending.length === 0) return '';
	const parts = pending.map((s) => {
		const until = s.wakeAt === null ? '' : ` until ${new Date(s.wakeAt).toISOString()}`;
		const what = s.status === 'retrying' ? `retry of step "${s.name}"` : s.status === 'sleeping' ? `sleep "${s.name}"` : `wait "${s.name}" for its event`;
		return `${what}${until}`;
	});
	const hint = pending.some((s) => s.status === 'waiting') ? 'sendEvent, forceEventTimeout or clock.advance' : 'clock.advance, disableSleeps or disableRetryDelays';
	return ` (pending: ${parts.join('; ')}; move it on with ${hint})`;
}
