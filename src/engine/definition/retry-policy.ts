import { parseDuration, type Duration } from '../support/duration';
import { DelayFunctionError, ErrorCode, NonRetryableError, ShardflowError, ValidationError } from '../support/errors';
import { describeThrown, isInstance } from '../support/thrown-value';
import type { StepAttempt } from './types';

export type Backoff = 'constant' | 'linear' | 'exponential';

/** How a failing `step.do` is retried: `limit` retries after the first attempt. */
export interface RetryPolicy {
	limit: number;
	/** The wait before a retry, or a function of the failed attempt and its error that returns it. `backoff` applies to either. */
	delay: Duration | RetryDelayFunction;
	backoff?: Backoff;
}

/** What a retry delay function gets: the attempt that failed, what it threw, and the step's `ctx` (Cloudflare's `{ctx, error}`). */
export interface RetryDelayInput {
	attempt: number;
	error: unknown;
	ctx: Omit<StepAttempt, 'signal'>;
}

/**
 * Computes the wait before a retry, once per failed attempt (the wait is stored, so a replay
 * never calls it again). `backoff` still applies to its value (write `backoff: 'constant'` to
 * use it as is). If it throws, returns something that is not a duration or takes more than
 * 5 seconds, the step fails for good with `DELAY_FUNCTION_FAILED`.
 * @example retries: { limit: 5, backoff: 'constant', delay: ({ error }) => (isRateLimit(error) ? '1 minute' : '2s') }
 */
export type RetryDelayFunction = (input: RetryDelayInput) => Duration | Promise<Duration>;

/** Longest a retry delay function may take (Cloudflare's limit too). */
export const DELAY_FUNCTION_TIMEOUT_MS = 5000;

/** Used when neither the step nor the workflow's `static defaults` says otherwise. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { limit: 3, delay: '1s', backoff: 'exponential' };

/** A policy with its delay resolved to milliseconds (or kept as a function) and its fields checked. */
export interface ResolvedRetryPolicy {
	limit: number;
	delay: number | RetryDelayFunction;
	backoff: Backoff;
}

/** A policy as it may arrive: from a class's `static defaults` its delay may be any string (checked here). */
type UncheckedRetryPolicy = Omit<RetryPolicy, 'delay'> & { delay: unknown };

const resolved = new WeakMap<UncheckedRetryPolicy, ResolvedRetryPolicy>();

/**
 * Checks a policy and resolves its delay. Cached per policy object: on the
 * replay path the workflow's `defaults` are the same object for every step.
 */
export function resolveRetryPolicy(policy: UncheckedRetryPolicy): ResolvedRetryPolicy {
	let result = resolved.get(policy);
	if (!result) resolved.set(policy, (result = checkRetryPolicy(policy)));
	return result;
}

function checkRetryPolicy(policy: UncheckedRetryPolicy): ResolvedRetryPolicy {
	const { limit, backoff = 'exponential' } = policy;
	if (!Number.isInteger(limit) || limit < 0 || limit > 1000) {
		throw new ValidationError(ErrorCode.InvalidOptions, `retries.limit must be a whole number from 0 to 1000, got ${JSON.stringify(limit)}`);
	}
	if (backoff !== 'constant' && backoff !== 'linear' && backoff !== 'exponential') {
		throw new ValidationError(ErrorCode.InvalidOptions, `retries.backoff must be "constant", "linear" or "exponential", got ${JSON.stringify(backoff)}`);
	}
	return { limit, delay: typeof policy.delay === 'function' ? (policy.delay as RetryDelayFunction) : parseDuration(policy.delay), backoff };
}

/** Longest single wait between attempts, whatever the backoff computes. */
export const MAX_RETRY_DELAY_MS = 24 * 3_600_000;

/** The wait before retry number `retry` (1 for the first retry): the backoff over `baseMs`, the policy's fixed delay unless given. */
export function retryDelayMs(policy: ResolvedRetryPolicy, retry: number, baseMs = typeof policy.delay === 'number' ? policy.delay : 0): number {
	const factor = policy.backoff === 'constant' ? 1 : policy.backoff === 'linear' ? retry : 2 ** (retry - 1);
	return Math.min(baseMs * factor, MAX_RETRY_DELAY_MS);
}

/**
 * The wait before the retry that follows failed attempt `input.attempt`. A delay function is
 * called here (and only here); what it does wrong is a `DelayFunctionError`, which fails the
 * step for good.
 */
export async function nextRetryDelayMs(policy: ResolvedRetryPolicy, input: RetryDelayInput): Promise<number> {
	if (typeof policy.delay === 'number') return retryDelayMs(policy, input.attempt);
	return retryDelayMs(policy, input.attempt, await callDelayFunction(policy.delay, input));
}

/**
 * What a failed attempt that may retry leads to: the wait before the retry, or, when the delay
 * function fails, the step's final failure (a `DelayFunctionError` naming the attempt's error).
 */
export async function retryAfterFailure(policy: ResolvedRetryPolicy, input: RetryDelayInput): Promise<{ delayMs: number } | { failure: DelayFunctionError }> {
	try {
		return { delayMs: await nextRetryDelayMs(policy, input) };
	} catch (delayError) {
		if (!(delayError instanceof DelayFunctionError)) throw delayError;
		const cause = describeThrown(input.error);
		return { failure: new DelayFunctionError(`${delayError.message} (after attempt ${input.attempt} failed with ${cause.name}: ${cause.message})`, { cause: delayError }) };
	}
}

async function callDelayFunction(delay: RetryDelayFunction, input: RetryDelayInput): Promise<number> {
	const step = `the delay function of step "${input.ctx.step.name}"`;
	let timer: ReturnType<typeof setTimeout> | undefined;
	let value: unknown;
	try {
		const late = new Promise<never>((_, reject) => {
			timer = setTimeout(() => reject(new DelayFunctionError(`${step} did not return within ${DELAY_FUNCTION_TIMEOUT_MS / 1000} seconds`)), DELAY_FUNCTION_TIMEOUT_MS);
		});
		value = await Promise.race([Promise.resolve().then(() => delay(input)), late]);
	} catch (error) {
		if (error instanceof DelayFunctionError) throw error;
		throw new DelayFunctionError(`${step} threw: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
	} finally {
		if (timer !== undefined) clearTimeout(timer);
	}
	try {
		return parseDuration(value);
	} catch (error) {
		throw new DelayFunctionError(`${step} returned ${typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? String(value))}, not a duration (milliseconds, or a string such as "30 seconds")`, { cause: error });
	}
}

/**
 * What a failed attempt leads to, for a step and a rollback alike: the error it fails with for
 * good (`delayMs` undefined) or the wait before its next attempt. A `NonRetryableError`, a value
 * that is not serializable, and any code in `permanentCodes` never retry; past the policy's
 * limit nothing does; a delay function that fails ends the retries with its own error.
 */
export async function failedAttemptOutcome(
	policy: ResolvedRetryPolicy,
	input: RetryDelayInput,
	permanentCodes: readonly string[] = [],
): Promise<{ failure: unknown; delayMs: number | undefined }> {
	const { error, attempt } = input;
	const permanent = isInstance(error, NonRetryableError) || (isInstance(error, ShardflowError) && (error.code === ErrorCode.NotSerializable || permanentCodes.includes(error.code)));
	if (permanent || attempt > policy.limit) return { failure: error, delayMs: undefined };
	const next = await retryAfterFailure(policy, input);
	return 'failure' in next ? { failure: next.failure, delayMs: undefined } : { failure: error, delayMs: next.delayMs };
}
