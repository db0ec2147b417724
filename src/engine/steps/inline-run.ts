import type { ParentRef } from '../children/child-workflows';
import type { TransplantHeader } from '../children/transplant';
import type { StepRow } from '../storage/store';
import type { InvocationBudget } from './invocation-budget';

// A child run inside its parent's object, as the parent's step sees it (child-step.ts): the
// request, how the run ended, and the run itself. instance/inline-child.ts implements it (the
// child's own engine), above steps/ in the folders' order.

/**
 * What a child's run may do inline before it hands over (its pass then continues in the
 * child's own object, from a continuation): I/O attempts and wall time, as an invocation's
 * budget counts them (invocation-budget.ts). A step already under way finishes inline.
 */
export const INLINE_BUDGET: InvocationBudget = { steps: 25, ms: 1000 };

/** The child an invoke runs inline. */
export interface InlineRequest {
	id: string;
	type: string;
	payload: unknown;
	parent: ParentRef;
}

/** How an inline run ended: finished (its outcome is its row's), or handed over; what it left, to publish. */
export interface InlineRunEnd {
	finished: boolean;
	header: TransplantHeader;
	steps: StepRow[];
	/**
	 * A finished run's steps its parent has not kept yet (their last writes, held until the next
	 * attempt began: `SHARDFLOW_INLINE_ONE_ROW`), for the header's row to carry. Empty or absent: every
	 * step is kept in a row of its own.
	 */
	unwritten?: StepRow[];
}

/** One inline run of a child (`InlineChildRun`), as the invoke that started it uses it. */
export interface InlineRun {
	/** Creates the child and runs it until it finished or hands over. */
	run(): Promise<InlineRunEnd>;
	/** The parent's pass was cut (terminate, restart): nothing more is kept, and the child's attempts are aborted. */
	abort(): void;
	/** Attempts of the child's steps that awaited something: what its parent's invocation paid for. */
	readonly awaitingAttempts: number;
	/** Whether someone outside asked for the child: its hand-over should not wait for the child's outcome. */
	readonly wanted: boolean;
}
