import { parseDuration, type Duration } from './duration';
import { ErrorCode, ValidationError } from './errors';

export type Backoff = 'constant' | 'linear' | 'exponential';

/** How a failing `step.do` is retried: `limit` retries after the first attempt. */
export interface RetryPolicy {
	limit: number;
	delay: Duration;
	backoff?: Backoff;
}

/** Used when neither the step nor the workflow's `static defaults` says otherwise. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { limit: 3, delay: '1s', backoff: 'exponential' };

/** A policy with its delay resolved to milliseconds and its fields checked. */
export interface ResolvedRetryPolicy {
	limit: number;
	delayMs: number;
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
	return { limit, delayMs: parseDuration(policy.delay), backoff };
}

/** Longest single wait between attempts, whatever the backoff computes. */
export const MAX_RETRY_DELAY_MS = 24 * 3_600_000;

/** The wait before retry number `retry` (1 for the first retry). */
export function retryDelayMs(policy: ResolvedRetryPolicy, retry: number): number {
	const factor = policy.backoff === 'constant' ? 1 : policy.backoff === 'linear' ? retry : 2 ** (retry - 1);
	return Math.min(policy.delayMs * factor, MAX_RETRY_DELAY_MS);
}
