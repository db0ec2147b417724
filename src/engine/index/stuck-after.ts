import { parseDuration, type Duration } from '../support/duration';

/**
 * When an instance counts as stuck (`shardflow_instances_stuck` on `GET /metrics`): it has
 * been `running` or `waiting` for longer than its type allows since its last status change.
 * `running` that long means a step attempt or a pass that does not end (a hung fetch, a crash
 * loop the alarm keeps retrying); `waiting` that long means an event that never comes.
 * `'never'` turns one check off.
 *
 * @example payment: { workflow: PaymentWorkflow, stuckAfter: { running: '15 minutes', waiting: '2 days' } }
 */
export interface StuckAfterOptions {
	running?: Duration | 'never';
	waiting?: Duration | 'never';
}

/** Defaults: an hour running (a step's default timeout is 10 minutes), a week waiting. */
export const DEFAULT_STUCK_AFTER = { running: '1 hour', waiting: '7 days' } as const satisfies Required<StuckAfterOptions>;

/** The thresholds in ms; null where the check is off. */
export type ResolvedStuckAfter = { running: number | null; waiting: number | null };

/** Checks and resolves a type's `stuckAfter` when the registry is built (an error names the option). */
export function resolveStuckAfter(type: string, options: StuckAfterOptions = {}): ResolvedStuckAfter {
	const resolve = (status: 'running' | 'waiting'): number | null => {
		const value = options[status] ?? DEFAULT_STUCK_AFTER[status];
		if (value === 'never') return null;
		try {
			return parseDuration(value);
		} catch (error) {
			throw new Error(`${type}.stuckAfter.${status}: ${(error as Error).message} (or 'never')`);
		}
	};
	return { running: resolve('running'), waiting: resolve('waiting') };
}
