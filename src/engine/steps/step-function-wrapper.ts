import type { StepAttempt } from '../definition/types';

/** The function a `step.do` attempt runs: the author's own, or what a wrapper put in its place. */
export type StepFunction = (attempt: StepAttempt) => unknown;

/** What a wrapper knows about the attempt it is asked about. */
export interface StepAttemptInfo {
	/** The step's name, as given to `step.do`. */
	name: string;
	/** 1 for the first attempt, 2 for the first retry, … (counted durably, across crashes). */
	attempt: number;
	/** The step's `timeout` in milliseconds, when it has one. */
	timeoutMs: number | undefined;
}

/**
 * A test seam, used only by the test kit (`src/testing/`): called once per
 * started attempt of a `step.do` with the attempt and the author's function,
 * it returns the function to run instead (a mocked result, an injected error
 * or timeout, a counting wrapper, or `fn` itself). Production hosts leave
 * `EngineHost.wrapStepFunction` unset, and the step path then costs one
 * `undefined` check per started attempt (replays never reach it).
 */
export type StepFunctionWrapper = (step: StepAttemptInfo, fn: StepFunction) => StepFunction;
