import { isInstance } from '../support/thrown-value';

/**
 * Internal control flow of the replay loop. These never escape the engine:
 * the runner catches them, and a workflow that catches one by mistake is
 * suspended all the same (the step context remembers it).
 */
/**
 * The pass stops and the instance waits in `status`; `running`: the pass used its
 * invocation's budget and continues in a new invocation (see invocation-budget.ts).
 */
export class SuspendSignal {
	constructor(readonly status: 'sleeping' | 'waiting' | 'paused' | 'running') {}
}

/**
 * The pass must stop without changing the status (terminated or restarted
 * meanwhile), a step was called after `run()` had already settled, the code
 * diverged from the recorded steps (the engine then stores `diverged`), or the
 * storage failed under the pass (pass-storage.ts: the pass fails and is retried).
 */
export class AbortSignal_ {
	constructor(readonly reason: 'terminated' | 'restarted' | 'finished' | 'diverged' | 'storage') {}
}

export function isSignal(value: unknown): value is SuspendSignal | AbortSignal_ {
	// Whatever user code throws passes through here; `isInstance` survives hostile Proxies.
	return isInstance(value, SuspendSignal) || isInstance(value, AbortSignal_);
}
