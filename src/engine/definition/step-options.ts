import { parseDuration, type Duration } from '../support/duration';
import { ErrorCode, ShardflowError, ValidationError } from '../support/errors';
import { DEFAULT_RETRY_POLICY, resolveRetryPolicy, type ResolvedRetryPolicy, type RetryPolicy } from './retry-policy';
import { SENSITIVE_STEP_OUTPUT } from './sensitive-output';
import type { StepConfig } from './types';

/**
 * How long one `step.do` attempt (or rollback attempt) may run when neither it
 * nor anything else says: Cloudflare Workflows' default. A longer step sets its
 * own `timeout` (up to 365 days).
 */
export const DEFAULT_STEP_TIMEOUT = '10 minutes' satisfies Duration;

/** The options `step.do` knows; anything else is refused, so a typo never silently does nothing. */
const STEP_DO_OPTIONS: ReadonlySet<string> = new Set(['retries', 'timeout', 'rollback', 'rollbackRetries', 'rollbackTimeout', 'sensitive']);
const RETRY_POLICY_FIELDS: ReadonlySet<string> = new Set(['limit', 'delay', 'backoff']);

/** A `step.do`'s options, checked, with what the engine and the step function need of them. */
export interface ResolvedStepOptions {
	policy: ResolvedRetryPolicy;
	timeoutMs: number;
	/** `ctx.config`: frozen, so a step function cannot change what the engine does. */
	config: StepConfig;
}

/**
 * Cached per options object (and the workflow's defaults it was resolved with):
 * a step written as `step.do(name, fn, OPTIONS)` with a shared constant costs one lookup.
 */
const resolvedByOptions = new WeakMap<object, { defaults: RetryPolicy | undefined; resolved: ResolvedStepOptions }>();
const resolvedWithoutOptions = new WeakMap<RetryPolicy, ResolvedStepOptions>();

/**
 * Checks the options of `step.do(step, fn, options)` and resolves them over the
 * workflow's `defaults.retries`. Throws `INVALID_OPTIONS` (or `INVALID_DURATION`)
 * naming the step and the option: an unknown option or retry field, a `timeout`
 * of 0, a `rollback` that is not a function. `rollbackRetries` and
 * `rollbackTimeout` are only checked for shape here; their values are the
 * rollback's to check when it runs (a bad one fails that rollback for good).
 */
export function resolveStepDoOptions(step: string, options: unknown, defaults: RetryPolicy | undefined): ResolvedStepOptions {
	if (options === undefined) {
		const base = defaults ?? DEFAULT_RETRY_POLICY;
		let resolved = resolvedWithoutOptions.get(base);
		if (!resolved) resolvedWithoutOptions.set(base, (resolved = resolve(step, {}, defaults)));
		return resolved;
	}
	if (typeof options === 'function') {
		throw invalid(step, "options must be an object, got a function: shardflow's order is step.do(name, fn, options), the options last (Cloudflare's is step.do(name, options, fn))");
	}
	if (typeof options !== 'object' || options === null || Array.isArray(options)) {
		throw invalid(step, `options must be an object ({retries?, timeout?, rollback?, ...}), got ${JSON.stringify(options)}`);
	}
	const cached = resolvedByOptions.get(options);
	if (cached && cached.defaults === defaults) return cached.resolved;
	const resolved = resolve(step, options as Record<string, unknown>, defaults);
	resolvedByOptions.set(options, { defaults, resolved });
	return resolved;
}

function resolve(step: string, options: Record<string, unknown>, defaults: RetryPolicy | undefined): ResolvedStepOptions {
	for (const key of Object.keys(options)) {
		if (!STEP_DO_OPTIONS.has(key)) throw invalid(step, `unknown option "${key}"; step.do takes ${[...STEP_DO_OPTIONS].join(', ')}`);
	}
	const { retries, timeout = DEFAULT_STEP_TIMEOUT, rollback, rollbackRetries, sensitive } = options;
	if (sensitive !== undefined && sensitive !== SENSITIVE_STEP_OUTPUT) {
		throw invalid(step, `option "sensitive" must be "${SENSITIVE_STEP_OUTPUT}" (the result is stored but shown redacted), got ${JSON.stringify(sensitive)}`);
	}
	if (retries !== undefined) checkRetryShape(step, 'retries', retries);
	if (rollbackRetries !== undefined) checkRetryShape(step, 'rollbackRetries', rollbackRetries);
	if (rollback !== undefined && typeof rollback !== 'function') throw invalid(step, `option "rollback" must be a function (result, ctx) => ..., got ${typeof rollback}`);
	const given = (retries ?? defaults ?? DEFAULT_RETRY_POLICY) as RetryPolicy;
	const policy = named(step, () => resolveRetryPolicy(given));
	const timeoutMs = named(step, () => parseDuration(timeout));
	if (timeoutMs === 0) throw invalid(step, 'option "timeout" must be more than 0 (an attempt with no time to run always times out)');
	const config: StepConfig = Object.freeze({
		retries: Object.freeze({ limit: policy.limit, ...(typeof given.delay === 'function' ? {} : { delay: given.delay }), backoff: policy.backoff }),
		timeout: timeout as Duration,
		...(sensitive === SENSITIVE_STEP_OUTPUT ? { sensitive: SENSITIVE_STEP_OUTPUT } : {}),
	});
	return { policy, timeoutMs, config };
}

/** `retries` / `rollbackRetries` is an object of known fields (their values are resolveRetryPolicy's to check). */
function checkRetryShape(step: string, option: string, value: unknown): void {
	const problem = retryShapeProblem(option, value);
	if (problem) throw invalid(step, problem);
}

function retryShapeProblem(option: string, value: unknown): string | undefined {
	if (typeof value !== 'object' || value === null || Array.isArray(value)) return `option "${option}" must be {limit, delay, backoff?}, got ${JSON.stringify(value)}`;
	const unknown = Object.keys(value).find((key) => !RETRY_POLICY_FIELDS.has(key));
	return unknown === undefined ? undefined : `unknown field "${option}.${unknown}"; ${option} takes limit, delay, backoff`;
}

/**
 * Checks a class's `static defaults` (`WorkflowDefaults`): known fields only, and a valid
 * retry policy. Throws `INVALID_OPTIONS` / `INVALID_DURATION`; `defineRegistry` names the type.
 */
export function checkWorkflowDefaults(defaults: unknown): void {
	if (defaults === undefined) return;
	if (typeof defaults !== 'object' || defaults === null || Array.isArray(defaults)) {
		throw new ValidationError(ErrorCode.InvalidOptions, `static defaults must be an object ({retries?}), got ${JSON.stringify(defaults)}`);
	}
	const unknown = Object.keys(defaults).find((key) => key !== 'retries');
	if (unknown !== undefined) throw new ValidationError(ErrorCode.InvalidOptions, `unknown field "${unknown}"; static defaults take retries`);
	const { retries } = defaults as { retries?: unknown };
	if (retries === undefined) return;
	const problem = retryShapeProblem('retries', retries);
	if (problem) throw new ValidationError(ErrorCode.InvalidOptions, problem);
	resolveRetryPolicy(retries as RetryPolicy);
}

/** Runs a check and puts the step's name in front of its message, keeping its code. */
function named<T>(step: string, check: () => T): T {
	try {
		return check();
	} catch (error) {
		if (error instanceof ShardflowError) throw new ValidationError(error.code, `step "${step}": ${error.message}`, { cause: error });
		throw error;
	}
}

function invalid(step: string, message: string): ValidationError {
	return new ValidationError(ErrorCode.InvalidOptions, `step "${step}": ${message}`);
}

/**
 * Refuses options `waitForEvent` or `webhook` does not know (`allowed`), naming the step:
 * `{nmae: 'second-approval'}` would otherwise wait under the event's name.
 */
export function checkKnownOptions(call: string, step: string, options: unknown, allowed: readonly string[]): void {
	if (options === undefined) return;
	if (typeof options !== 'object' || options === null || Array.isArray(options)) {
		throw new ValidationError(ErrorCode.InvalidOptions, `${call}("${step}"): options must be an object, got ${JSON.stringify(options)}`);
	}
	for (const key of Object.keys(options)) {
		if (allowed.includes(key)) continue;
		// Cloudflare's waitForEvent(stepName, {type}) names the event in the options; shardflow's first argument is the event.
		const hint = call === 'waitForEvent' && key === 'type' ? ' (the first argument is the event type: write waitForEvent(event, {name}) for Cloudflare\'s waitForEvent(name, {type}))' : '';
		throw new ValidationError(ErrorCode.InvalidOptions, `${call}("${step}"): unknown option "${key}"; it takes ${allowed.join(', ')}${hint}`);
	}
}
