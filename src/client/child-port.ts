import type { ChildPort } from '../engine/children/child-workflows';
import { ErrorCode, ShardflowError } from '../engine/support/errors';
import { withTimeout } from '../engine/support/with-timeout';
import { callOperation, type ShardflowEnv } from './instance-client';

/** Longest a call to a child or parent instance may take before it counts as failed (and is retried). */
const CHILD_CALL_TIMEOUT_MS = 10_000;

/**
 * Child workflows over a namespace: each call is one operation of the table on the other
 * instance, failing after `CHILD_CALL_TIMEOUT_MS` (then retried by the parent). The runner's instances use
 * it over `WORKFLOW_RUNNER`, the Node test kit's over its stand-in namespace.
 */
export function childPortOver(env: ShardflowEnv): ChildPort {
	const call = <T>(work: Promise<T>) => withTimeout(work, CHILD_CALL_TIMEOUT_MS);
	return {
		start: (request) => call(request.transplant ? callOperation(env, 'transplantChild', { ...request, transplant: request.transplant }) : callOperation(env, 'startChild', request)),
		outcome: (id, waitMs) => call(callOperation(env, 'childOutcome', { id, ...(waitMs !== undefined ? { waitMs } : {}) })),
		terminate: async (id) => {
			try {
				await call(callOperation(env, 'terminate', { id }));
			} catch (error) {
				// Finished or gone already: nothing left to stop.
				if (error instanceof ShardflowError && (error.code === ErrorCode.InvalidState || error.code === ErrorCode.NotFound)) return;
				throw error;
			}
		},
		notifyParent: async (parentId, childId, outcome) => {
			await call(callOperation(env, 'childFinished', { id: parentId, childId, outcome }));
		},
	};
}
