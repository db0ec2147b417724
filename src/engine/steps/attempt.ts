import { StepTimeoutError } from '../support/errors';
import type { StepAttempt } from '../definition/types';

// One attempt of a step's (or a rollback's) function: its `StepAttempt` context, its abort
// signal and its timeout. Used by step-context.ts and rollback-runner.ts.

/**
 * Runs one attempt. With a timeout, a late attempt is abandoned: JavaScript
 * cannot stop a running function, so `fn` gets an AbortSignal that aborts at
 * the deadline and should stop on it; whatever it returns later is dropped.
 */
export async function runAttempt<T>(
	fn: (attempt: StepAttempt) => Promise<T> | T,
	attempt: number,
	timeoutMs: number,
	name: string,
	live: Set<AttemptAbort>,
	cancelled: unknown,
	about: Pick<StepAttempt, 'step' | 'config'>,
	/** Called once if the attempt is still pending after SETTLE_TURNS (it awaits I/O), before its timer is armed. */
	onPending?: () => void,
): Promise<T> {
	// The AbortController is made only if `fn` reads the signal: creating one per step is a
	// measurable share of a step's cost, and most steps never look at it.
	let controller: AbortController | undefined;
	let reason: unknown = cancelled;
	const abort: AttemptAbort = (why) => {
		reason ??= why;
		if (controller && !controller.signal.aborted) controller.abort(reason);
	};
	const context: StepAttempt = {
		attempt,
		step: about.step,
		config: about.config,
		get signal() {
			controller ??= new AbortController();
			if (reason !== undefined && !controller.signal.aborted) controller.abort(reason);
			return controller.signal;
		},
	};
	live.add(abort);
	try {
		return await raceTimeout(fn, context, timeoutMs, name, abort, onPending);
	} finally {
		live.delete(abort);
	}
}

/** Aborts one attempt's signal (if `fn` ever read it) with a reason. */
export type AttemptAbort = (reason: unknown) => void;

/**
 * Microtask turns an attempt gets to settle before its timeout timer is armed. An attempt
 * that does no I/O (an `async () => value`) settles within them, and a timer it can never
 * meet (the timeout is more than 0 ms and no time passes without I/O) costs a setTimeout and
 * a clearTimeout: measured at 8% of a trivial step's CPU in workerd (docs/decisions.md
 * "No timer for an attempt that settles at once").
 */
const SETTLE_TURNS = 4;

async function raceTimeout<T>(
	fn: (attempt: StepAttempt) => Promise<T> | T,
	context: StepAttempt,
	timeoutMs: number,
	name: string,
	abort: AttemptAbort,
	onPending: (() => void) | undefined,
): Promise<T> {
	const attempt = Promise.resolve().then(() => fn(context));
	let settled = false;
	attempt.then(
		() => (settled = true),
		() => (settled = true),
	);
	for (let turn = 0; turn < SETTLE_TURNS && !settled; turn++) await undefined;
	if (settled) return attempt;
	onPending?.();
	let timer: ReturnType<typeof setTimeout> | undefined;
	const timeout = new Promise<never>((_, reject) => {
		timer = setTimeout(() => {
			const timedOut = new StepTimeoutError(name, timeoutMs);
			abort(timedOut);
			reject(timedOut);
		}, timeoutMs);
	});
	try {
		return await Promise.race([attempt, timeout]);
	} finally {
		if (timer !== undefined) clearTimeout(timer);
	}
}
