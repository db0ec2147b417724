// The statuses of instances and steps: ground vocabulary every engine folder shares
// (storage's rows, the index's entries, the definition's types), so it imports nothing.

/** The statuses an instance can be in. */
/** `diverged`: the code no longer matches the recorded steps; nothing runs until a resume (after a fix) or a restart. */
/** `queued`: the type's concurrency limit for the instance's key is reached; it starts, in arrival order, when a slot frees. */
/** `rolling_back`: the rollbacks of completed steps run (after a failure, or a terminate with rollback); it ends `errored` or `terminated`. */
export const WORKFLOW_STATUSES = ['queued', 'created', 'running', 'sleeping', 'waiting', 'paused', 'diverged', 'rolling_back', 'completed', 'errored', 'terminated'] as const;
export type WorkflowStatus = (typeof WORKFLOW_STATUSES)[number];

/** Statuses from which an instance never moves on its own. */
export const FINISHED_STATUSES: readonly WorkflowStatus[] = ['completed', 'errored', 'terminated'];

/** `cancelled`: the instance was terminated (or its rollbacks abandoned) while the step ran, slept, waited or waited for its retry. */
export type StepStatus = 'running' | 'retrying' | 'completed' | 'failed' | 'sleeping' | 'waiting' | 'timed_out' | 'cancelled';
/** Step statuses a step leaves on its own: a terminate cancels a step in one of them. */
export const UNFINISHED_STEP_STATUSES: readonly StepStatus[] = ['running', 'retrying', 'sleeping', 'waiting'];
