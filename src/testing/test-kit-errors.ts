import type { WorkflowStatus } from '../engine/support/statuses';

/** Stable codes of the test kit's own errors (an author's misuse, or an expectation the run did not meet). */
export const TestKitErrorCode = {
	InvalidMock: 'TESTKIT_INVALID_MOCK',
	UnusedMock: 'TESTKIT_UNUSED_MOCK',
	StatusNotReached: 'TESTKIT_STATUS_NOT_REACHED',
	StepResultUnavailable: 'TESTKIT_STEP_RESULT_UNAVAILABLE',
	NoOutput: 'TESTKIT_NO_OUTPUT',
	NotStarted: 'TESTKIT_NOT_STARTED',
	AlreadyStarted: 'TESTKIT_ALREADY_STARTED',
	TimersNeverSettle: 'TESTKIT_TIMERS_NEVER_SETTLE',
	WrongWorkflow: 'TESTKIT_WRONG_WORKFLOW',
	ReplayInput: 'TESTKIT_REPLAY_INPUT',
	CrashDivergence: 'TESTKIT_CRASH_DIVERGENCE',
	ReplayDivergence: 'TESTKIT_REPLAY_DIVERGENCE',
	InvalidTime: 'TESTKIT_INVALID_TIME',
	NoPendingWebhook: 'TESTKIT_NO_PENDING_WEBHOOK',
	Unsupported: 'TESTKIT_UNSUPPORTED',
} as const;
export type TestKitErrorCode = (typeof TestKitErrorCode)[keyof typeof TestKitErrorCode];

/** Every error the test kit raises on purpose; match on `code`. */
export class TestKitError extends Error {
	override name = 'TestKitError';
	constructor(
		readonly code: TestKitErrorCode,
		message: string,
	) {
		super(message);
	}
}

/** A mock names steps the run never reached as a `step.do` (a typo, or a branch the test did not take). */
export class UnusedMockError extends TestKitError {
	override name = 'UnusedMockError';
	constructor(
		readonly steps: string[],
		reached: string[],
	) {
		super(
			TestKitErrorCode.UnusedMock,
			`mocked step(s) ${steps.map((s) => JSON.stringify(s)).join(', ')} never ran as a step.do in this run; steps it reached: ${reached.length ? reached.map((s) => JSON.stringify(s)).join(', ') : '(none)'}`,
		);
	}
}

/** `waitForStatus` settled the instance and it stands elsewhere. */
export class StatusNotReachedError extends TestKitError {
	override name = 'StatusNotReachedError';
	constructor(
		readonly expected: WorkflowStatus,
		readonly actual: WorkflowStatus,
		where: string,
	) {
		super(TestKitErrorCode.StatusNotReached, `expected the instance to reach "${expected}", but it settled "${actual}"${where}`);
	}
}
