import type { StepSummary } from '../engine/definition/types';
import { StepMocks, type MockTimes } from './step-mocks';

/** A set of step names, or every step of the kind when left out. */
type StepSelection = readonly string[] | undefined;

/**
 * The Cloudflare-style modifiers of one test instance: step mocks (which its
 * engine runs through `mocks.wrapper`) and the timers the kit skips when it
 * settles. A test instance's kit (`WorkflowTestKit`) offers these methods as
 * its own; an introspector (`introspectWorkflow`) hands them to `modifyAll`
 * and gives each instance it adopts a copy.
 */
export class InstanceModifiers {
	readonly mocks: StepMocks;
	private disabledSleeps: Set<string> | 'all' | undefined;
	private disabledRetryDelays: Set<string> | 'all' | undefined;
	private readonly forcedEventTimeouts = new Set<string>();

	constructor(mocks = new StepMocks()) {
		this.mocks = mocks;
	}

	/** Every attempt of `step.do(step)` returns `result` instead of running the step's function. */
	mockStepResult(step: string, result: unknown): this {
		this.mocks.mockResult(step, result);
		return this;
	}

	/** Attempts of `step.do(step)` throw `error` (all of them, or the first `times`); retried per the step's policy. */
	mockStepError(step: string, error: unknown, options?: MockTimes): this {
		this.mocks.mockError(step, error, options);
		return this;
	}

	/** Attempts of `step.do(step)` time out (`STEP_TIMEOUT`, all of them or the first `times`), whatever the step's `timeout`. */
	forceStepTimeout(step: string, options?: MockTimes): this {
		this.mocks.forceTimeout(step, options);
		return this;
	}

	/** Sleeps end at once (the clock jumps to their end; timers due before it fire first). Only the named ones, if given. */
	disableSleeps(steps?: StepSelection): this {
		this.disabledSleeps = merge(this.disabledSleeps, steps);
		return this;
	}

	/** Retries of failed steps start at once (the clock jumps over the backoff). Only of the named steps, if given. */
	disableRetryDelays(steps?: StepSelection): this {
		this.disabledRetryDelays = merge(this.disabledRetryDelays, steps);
		return this;
	}

	/** The wait named `step` (the event name unless `waitForEvent` was given a `name`) times out as soon as it waits. */
	forceEventTimeout(step: string): this {
		this.forcedEventTimeouts.add(step);
		return this;
	}

	/** Whether any modifier skips a timer (otherwise the kit need not look at the steps when it settles). */
	get skipsTimers(): boolean {
		return this.disabledSleeps !== undefined || this.disabledRetryDelays !== undefined || this.forcedEventTimeouts.size > 0;
	}

	/** Whether a pending step's timer is skipped: its sleep, retry wait or (forced) event timeout. */
	skips(step: StepSummary): boolean {
		return (
			(step.status === 'sleeping' && selects(this.disabledSleeps, step.name)) ||
			(step.status === 'retrying' && selects(this.disabledRetryDelays, step.name)) ||
			(step.status === 'waiting' && this.forcedEventTimeouts.has(step.name))
		);
	}

	/** A forced timeout of a wait that has none: it could never fire. */
	forcesTimeoutOf(step: StepSummary): boolean {
		return step.status === 'waiting' && this.forcedEventTimeouts.has(step.name);
	}

	/** The same modifiers for another instance, with mocks of their own (none used yet). */
	copy(): InstanceModifiers {
		const copy = new InstanceModifiers(this.mocks.copy());
		copy.disabledSleeps = this.disabledSleeps === 'all' || this.disabledSleeps === undefined ? this.disabledSleeps : new Set(this.disabledSleeps);
		copy.disabledRetryDelays = this.disabledRetryDelays === 'all' || this.disabledRetryDelays === undefined ? this.disabledRetryDelays : new Set(this.disabledRetryDelays);
		for (const step of this.forcedEventTimeouts) copy.forcedEventTimeouts.add(step);
		return copy;
	}
}

/** What `modifyAll` hands its callback: the modifiers alone (an instance created later has no actions yet). */
export type WorkflowModifiers = Pick<
	InstanceModifiers,
	'mockStepResult' | 'mockStepError' | 'forceStepTimeout' | 'disableSleeps' | 'disableRetryDelays' | 'forceEventTimeout'
>;

function merge(current: Set<string> | 'all' | undefined, steps: StepSelection): Set<string> | 'all' {
	if (steps === undefined || current === 'all') return 'all';
	return new Set([...(current ?? []), ...steps]);
}

function selects(selection: Set<string> | 'all' | undefined, name: string): boolean {
	return selection === 'all' || (selection !== undefined && selection.has(name));
}
