import { StepTimeoutError } from '../engine/support/errors';
import { toStoredJson } from '../engine/support/json';
import type { StepFunctionWrapper } from '../engine/steps/step-function-wrapper';
import { assertValidStepName } from '../engine/steps/step-name';
import { TestKitError, TestKitErrorCode, UnusedMockError } from './test-kit-errors';

/** How many attempts a mocked error or timeout applies to. */
export interface MockTimes {
	/**
	 * The first `times` attempts fail; later attempts run the step's own function
	 * (or a mocked result). Without it every attempt fails, so the step is retried
	 * per its policy and then fails for good.
	 */
	times?: number;
}

type Mock =
	| { kind: 'result'; json: string | null }
	| { kind: 'error'; error: unknown; times: number }
	| { kind: 'timeout'; times: number };

/**
 * The mocks of one test instance, per step name, and the wrapper that puts
 * them in place of the step's function (see step-function-wrapper.ts). It
 * remembers which mocks replaced a function, so a mock of a step the run
 * never reached is reported instead of passing silently.
 */
export class StepMocks {
	private readonly results = new Map<string, Mock & { kind: 'result' }>();
	private readonly failures = new Map<string, Mock & { kind: 'error' | 'timeout' }>();
	/** Step names whose function a mock replaced at least once. */
	private readonly used = new Set<string>();
	/** Step names that started an attempt at all (mocked or not). */
	private readonly reached: string[] = [];

	get isEmpty(): boolean {
		return this.results.size === 0 && this.failures.size === 0;
	}

	mockResult(step: string, result: unknown): void {
		assertValidStepName(step);
		let json: string | null;
		try {
			json = toStoredJson(result, `mocked result of step "${step}"`);
		} catch (error) {
			throw new TestKitError(TestKitErrorCode.InvalidMock, `mockStepResult("${step}"): ${(error as Error).message}`);
		}
		this.results.set(step, { kind: 'result', json });
	}

	mockError(step: string, error: unknown, options: MockTimes = {}): void {
		assertValidStepName(step);
		this.failures.set(step, { kind: 'error', error, times: timesOf(step, options) });
	}

	forceTimeout(step: string, options: MockTimes = {}): void {
		assertValidStepName(step);
		this.failures.set(step, { kind: 'timeout', times: timesOf(step, options) });
	}

	/** The same mocks for another instance, none of them used yet. */
	copy(): StepMocks {
		const copy = new StepMocks();
		for (const [step, mock] of this.results) copy.results.set(step, mock);
		for (const [step, mock] of this.failures) copy.failures.set(step, mock);
		return copy;
	}

	/** Mocked step names that never replaced a function. */
	unused(): string[] {
		return [...new Set([...this.results.keys(), ...this.failures.keys()])].filter((step) => !this.used.has(step));
	}

	/** Throws `UnusedMockError` when a mock never replaced its step's function. */
	assertAllUsed(): void {
		const unused = this.unused();
		if (unused.length) throw new UnusedMockError(unused, [...new Set(this.reached)]);
	}

	readonly wrapper: StepFunctionWrapper = ({ name, attempt, timeoutMs }, fn) => {
		this.reached.push(name);
		const failure = this.failures.get(name);
		if (failure && attempt <= failure.times) {
			this.used.add(name);
			if (failure.kind === 'timeout') {
				// What a real late attempt gets: the step's timeout error (a forced timeout needs no timeout option).
				return () => Promise.reject(new StepTimeoutError(name, timeoutMs ?? 0));
			}
			const { error } = failure;
			return () => Promise.reject(error);
		}
		const result = this.results.get(name);
		if (result) {
			this.used.add(name);
			return () => (result.json === null ? undefined : JSON.parse(result.json));
		}
		return fn;
	};
}

function timesOf(step: string, { times }: MockTimes): number {
	if (times === undefined) return Number.POSITIVE_INFINITY;
	if (!Number.isInteger(times) || times < 1) {
		throw new TestKitError(TestKitErrorCode.InvalidMock, `mock of step "${step}": times must be a whole number >= 1, got ${String(times)}`);
	}
	return times;
}

