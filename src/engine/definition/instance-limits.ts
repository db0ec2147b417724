import { HistoryLimitExceededError, StepLimitExceededError } from '../support/errors';
import type { NewHistoryRow } from '../history/history';
import { utf8Bytes } from '../support/json';

/**
 * Per-instance limits, like Cloudflare Workflows' (docs/deploying.md "Limits"): how many
 * steps one run may take and how large an instance's history may grow. They
 * bound what one instance can cost (storage, replay time, archive size); a
 * run that would pass one fails for good with a typed code that `run()`
 * cannot catch and carry on past (like a determinism error).
 */
export interface InstanceLimits {
	/** Steps per run (`step.do`, sleeps and waits; patch markers are not steps). Default 10,000, at most 25,000. */
	steps?: number;
	/** Bytes of history (every generation) an instance may keep. Default 100 MiB, at most 1 GiB. */
	historyBytes?: number;
	/**
	 * Step attempts one pass starts in one invocation before it continues in a new one
	 * (docs/deploying.md "Production limits"): for a type whose steps make many subrequests each.
	 * Default: the deployment's `SHARDFLOW_INVOCATION_STEPS` (1,000). 1 to 10,000.
	 */
	stepsPerInvocation?: number;
}

export type ResolvedInstanceLimits = Required<Omit<InstanceLimits, 'stepsPerInvocation'>> & Pick<InstanceLimits, 'stepsPerInvocation'>;

/** Cloudflare Workflows' default and configurable maximum of steps per instance. */
export const DEFAULT_MAX_STEPS = 10_000;
export const MAX_STEPS_CEILING = 25_000;
/**
 * History bytes: the default is Cloudflare's free-plan state per instance, the ceiling its
 * paid-plan one. Counted as the records' stored JSON (payloads, results, outputs, errors
 * and the other fields), the same measure history pages use.
 */
export const DEFAULT_MAX_HISTORY_BYTES = 100 * 1024 * 1024;
export const MAX_HISTORY_BYTES_CEILING = 1024 * 1024 * 1024;
/** The smallest history limit: one largest value (1 MiB) and its record must fit. */
export const MIN_HISTORY_BYTES = 2 * 1024 * 1024;

export const DEFAULT_INSTANCE_LIMITS: ResolvedInstanceLimits = { steps: DEFAULT_MAX_STEPS, historyBytes: DEFAULT_MAX_HISTORY_BYTES };

/** A type's limits, checked when the registry is defined (so a bad value stops the Worker at start-up). */
export function resolveInstanceLimits(type: string, limits: InstanceLimits = {}): ResolvedInstanceLimits {
	const check = (name: keyof InstanceLimits, min: number, max: number, fallback: number, why: string): number => {
		const value = limits[name];
		if (value === undefined) return fallback;
		if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
			throw new Error(`${type}.limits.${name} must be a whole number from ${min} to ${max} (${why}), got ${String(value)}`);
		}
		return value;
	};
	return {
		steps: check('steps', 1, MAX_STEPS_CEILING, DEFAULT_MAX_STEPS, "Cloudflare Workflows' maximum of steps per instance"),
		historyBytes: check('historyBytes', MIN_HISTORY_BYTES, MAX_HISTORY_BYTES_CEILING, DEFAULT_MAX_HISTORY_BYTES, '2 MiB to 1 GiB'),
		...(limits.stepsPerInvocation !== undefined
			? { stepsPerInvocation: check('stepsPerInvocation', 1, 10_000, 0, 'the paid plan allows 10,000 subrequests per invocation') }
			: {}),
	};
}

/** The bytes one history record adds to its instance's history size: what `readHistoryMeta` and the store's `historySize` count. */
export function historyRecordBytes(row: Pick<NewHistoryRow, 'value' | 'detail'>): number {
	let bytes = measured.get(row);
	if (bytes === undefined) {
		bytes = byteLength(row.value) + byteLength(row.detail);
		measured.set(row, bytes);
	}
	return bytes;
}

/**
 * Sizes already taken, per record object: a pass counts each record it writes for the limit,
 * and the Drizzle store counts the same object again for the history's tail; a step result
 * of up to 1 MiB is measured once.
 */
const measured = new WeakMap<object, number>();

const ASCII = /^[\x00-\x7f]*$/;
/** UTF-8 bytes of a string; ASCII (most JSON) is measured without encoding a copy. */
function byteLength(text: string | null): number {
	if (text === null) return 0;
	return ASCII.test(text) ? text.length : utf8Bytes(text);
}

/**
 * Whether a run may begin one more step: the error to fail it with, or undefined.
 * `steps` counts the run's steps with the new one; `historyBytes` is the history so far.
 */
export function limitExceeded(limits: ResolvedInstanceLimits, steps: number, historyBytes: number, name: string): StepLimitExceededError | HistoryLimitExceededError | undefined {
	if (steps > limits.steps) {
		return new StepLimitExceededError(
			`step "${name}" would be step ${steps} of this run, past the type's limit of ${limits.steps} steps per run (registry limits.steps, at most ${MAX_STEPS_CEILING}); split the work over several instances`,
		);
	}
	if (historyBytes >= limits.historyBytes) {
		return new HistoryLimitExceededError(
			`the history of this instance holds ${historyBytes} bytes, at the type's limit of ${limits.historyBytes} (registry limits.historyBytes); step "${name}" did not run. Return smaller results (store large data elsewhere and keep a key) or split the work over several instances`,
		);
	}
	return undefined;
}

/**
 * Whether a step's result may be stored: parallel steps all pass the check before they begin,
 * so the one whose result would take the history past the limit is stopped here, before its
 * result is written (the limit is then passed by at most the records of one step's start).
 */
export function resultExceedsHistoryLimit(limits: ResolvedInstanceLimits, historyBytes: number, result: string | null, name: string): HistoryLimitExceededError | undefined {
	const bytes = byteLength(result);
	if (historyBytes + bytes <= limits.historyBytes) return undefined;
	return new HistoryLimitExceededError(
		`the result of step "${name}" (${bytes} bytes) would take the history of this instance from ${historyBytes} bytes past the type's limit of ${limits.historyBytes} (registry limits.historyBytes); it was not stored. Return smaller results (store large data elsewhere and keep a key) or split the work over several instances`,
	);
}
