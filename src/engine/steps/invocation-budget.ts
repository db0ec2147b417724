import { ErrorCode, ValidationError } from '../support/errors';

/**
 * How much one pass may do inside one invocation before it ends and continues
 * in a fresh one (its own alarm). Production bounds every invocation: 10,000
 * subrequests on paid plans (50 external ones on the free plan) and 30 s of
 * CPU by default, and a pass runs inside the invocation that started it (an
 * alarm, or the request that kicked it off), so every `fetch` of every step of
 * the pass counts against one budget. A continuation replays the recorded
 * steps (their results from storage) and goes on where the pass stopped.
 */
export interface InvocationBudget {
	/**
	 * Step attempts (`step.do`) that may make subrequests one pass starts at most before it
	 * continues in a new invocation. An attempt that settled within its first microtask turns
	 * (it awaited no I/O, so it made no subrequest it waited for) does not count: a run of
	 * CPU-light steps is bounded by the time budget alone.
	 */
	steps: number;
	/** Milliseconds of wall time one pass runs at most before it continues in a new invocation (wall time bounds CPU time). */
	ms: number;
}

/**
 * The defaults: room for ~10 subrequests per step under the paid plan's 10,000,
 * and half the default 30 s CPU limit (counted as wall time, which is never less).
 * On the free plan (50 external subrequests) set `SHARDFLOW_INVOCATION_STEPS`
 * to what your steps' fetches allow, for example 40 for one fetch per step.
 */
export const DEFAULT_INVOCATION_BUDGET: InvocationBudget = { steps: 1000, ms: 15_000 };

/** The wake-up key of a pass that continues in a new invocation (no step key has this form). */
export const CONTINUE_WAKEUP = 'pass:continue';

/**
 * The budget from the deployment's variables (`SHARDFLOW_INVOCATION_STEPS`,
 * `SHARDFLOW_INVOCATION_MS`), each a whole number from 1; unset means the default.
 */
export function invocationBudgetOf(vars: { SHARDFLOW_INVOCATION_STEPS?: string; SHARDFLOW_INVOCATION_MS?: string }): InvocationBudget {
	const read = (name: 'SHARDFLOW_INVOCATION_STEPS' | 'SHARDFLOW_INVOCATION_MS', fallback: number) => {
		const raw = vars[name];
		if (raw === undefined || raw === '') return fallback;
		if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw new ValidationError(ErrorCode.InvalidRegistry, `${name} must be a whole number from 1, got ${JSON.stringify(raw)}`);
		return Number(raw);
	};
	return { steps: read('SHARDFLOW_INVOCATION_STEPS', DEFAULT_INVOCATION_BUDGET.steps), ms: read('SHARDFLOW_INVOCATION_MS', DEFAULT_INVOCATION_BUDGET.ms) };
}

/** One pass's use of its invocation's budget. */
export class InvocationMeter {
	private attempts = 0;
	/** Attempts started, less those that settled without awaiting I/O (`settledAtOnce`). */
	private charged = 0;

	constructor(
		private readonly budget: InvocationBudget,
		private readonly startedAt: number,
	) {}

	/**
	 * Counts a step attempt about to start; true when the pass must continue in a new
	 * invocation instead. A pass always starts at least one attempt, so one whose replay
	 * alone outlasts the time budget still moves on.
	 */
	spentBefore(now: number): boolean {
		if (this.attempts > 0 && (this.charged >= this.budget.steps || now - this.startedAt >= this.budget.ms)) return true;
		this.attempts++;
		this.charged++;
		return false;
	}

	/**
	 * An attempt settled within its first microtask turns: it awaited no I/O, so it is not
	 * counted against the step budget. Until then every started attempt is (parallel attempts
	 * all start before any is known to settle at once). A step that starts a `fetch` without
	 * awaiting it still makes a subrequest: the time budget and `SHARDFLOW_INVOCATION_STEPS`
	 * do not see those.
	 */
	settledAtOnce(): void {
		this.charged--;
	}
}
