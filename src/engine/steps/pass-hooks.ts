import type { Tracer } from '../support/tracer';
import type { ChildPort, ParentRef } from '../children/child-workflows';
import type { ChildTransplant, TransplantHeader } from '../children/transplant';
import type { InlineRequest, InlineRun } from './inline-run';
import type { HistoryRecord } from '../history/history';
import type { StepRow } from '../storage/store';
import type { StepKind } from '../support/step-kinds';
import type { StepFunctionWrapper } from './step-function-wrapper';
import type { YieldReport } from './yield-pacer';
import type { GroupPlace } from '../support/group-id';

// What a pass of the replay loop lends the steps it runs (step-context.ts, pass-journal.ts,
// child-step.ts): its own module, so those three import it rather than each other.

/** What a pass of the replay loop lends its step context. */
export interface PassHooks {
	now(): number;
	/** Throws a signal when the instance was paused, terminated or restarted since the pass began. */
	checkBoundary(): void;
	/** Lets other work of the isolate run (called every few steps); reports whether any did (see yield-pacer.ts). */
	yieldToEventLoop(): Promise<YieldReport>;
	/**
	 * Called before every durable write of the pass (outside any transaction):
	 * the engine marks the instance `running` on the first one, so a pass that
	 * only replays and suspends again changes nothing.
	 */
	willWrite(): void;
	/** Appends a history record (with the pass's generation and the clock's time); called inside the write's transaction. */
	record(record: HistoryRecord): void;
	/**
	 * Sets a wake-up (store.setWakeup), inside the write's transaction. The end of the pass
	 * deletes the wake-ups that were due when it began, but never one set through here,
	 * however due: a retry delay, sleep or timeout of 0 sets one at the pass's own time.
	 */
	setWakeup(key: string, at: number): void;
	/** Writes a step row and appends its history record together (store.writeStepWithRecord); the hot path of a step. */
	writeStepWithRecord(row: StepRow, record: HistoryRecord): void;
	/** A new step's first write with its records (store.insertStep): a step whose first attempt settled at once writes only this. */
	insertStep(row: StepRow, records: readonly HistoryRecord[]): void;
	/**
	 * Write every attempt's `step.started` before its function runs, also a new step's first
	 * attempt: set for a pass that follows one cut short (a crash, an eviction, a limit), so an
	 * attempt that kills the isolate before it settles is counted (docs/decisions.md "A step's
	 * records in its row").
	 */
	readonly startsFirst?: boolean;
	/** The instance's history size in bytes so far (a running total: no query). */
	historyBytes(): number;
	/** Counts a step attempt about to start; true when the pass must continue in a new invocation (invocation-budget.ts). */
	invocationSpent?(now: number): boolean;
	/** The attempt counted by `invocationSpent` settled without awaiting I/O: it does not count against the step budget. */
	attemptSettledAtOnce?(): void;
	/** The host's test seam (see step-function-wrapper.ts); undefined outside the test kit. */
	readonly wrapStepFunction: StepFunctionWrapper | undefined;
	/** Spans for step attempts (support/tracer.ts); absent or answering none, nothing is traced. */
	readonly tracer?: Tracer;
	/** Whether completed steps are logged (debug level): checked first, so the hot path builds no record. */
	readonly logsStepCompletions: boolean;
	/** A step's failed attempt, final failure or (at debug level) completion; the engine adds the instance's id and type. */
	log(record: { severity: 'error' | 'warn' | 'info' | 'debug'; event: string; [field: string]: unknown }): void;
	/**
	 * The pass only replays, to learn the rollbacks of completed steps (see rollback-runner.ts):
	 * recorded outcomes answer as usual, anything else never settles and nothing is written.
	 */
	readonly replayOnly?: boolean;
	/** Signs a webhook token bound to this instance, its generation, the step and `nonce`, and answers its URL (see webhook.ts). */
	issueWebhook?(step: string, nonce: string): Promise<string>;
	/** What `step.invoke` and `step.start` need (see child-workflows.ts); absent, they are refused. */
	readonly children?: ChildStepHooks;
	/**
	 * Applies a `step.setAttributes` (checked against the declaration; throws INVALID_SEARCH_ATTRIBUTES)
	 * and writes the step's row, its history record, the instance row and the index outbox in one
	 * transaction; absent, `setAttributes` is refused.
	 */
	setAttributes?(update: Record<string, unknown>, row: StepRow, stepName: string): void;
	/** What `step.emit` needs (see stream.ts); absent (a rollback's replay), it publishes nothing. */
	readonly streams?: EmitHooks;
	/** An inline child's pass (EngineHost.holdStep): a promise holds a new step before it writes anything. */
	holdStep?(kind: StepKind): Promise<never> | undefined;
}

/** The instance's side of `step.emit`. */
export interface EmitHooks {
	/** The index of the last message this generation recorded before the pass (read once, on the pass's first emit). */
	recordedBefore(): number;
	/** Takes one message from the instance's rate, or throws STREAM_RATE_LIMITED. */
	take(now: number, topic: string): void;
}

/** The parent's side of child workflows, lent to a pass. */
export interface ChildStepHooks {
	port: ChildPort;
	parentId: string;
	parentType: string;
	generation: number;
	/** Throws `UNKNOWN_TYPE` for a type the registry does not hold. */
	assertRegistered(type: string): void;
	/** The place a child of `type` is created in (its type's group), for `allowCrossGroup` (children/cross-group-child.ts). */
	placeChild?(type: string, payload: unknown): GroupPlace;
	/** Runs short children inside this instance first (instance/parts/inline-children.ts); absent: the host does not. */
	readonly inline?: InlineChildHooks;
}

/** The parent's side of the children its invokes run inline (instance/parts/inline-children.ts). */
export interface InlineChildHooks {
	/** Whether an invoke of `type` may run its child here. */
	eligible(type: string): boolean;
	/** Whether as many children run here now as may at once (the next starts in its own object). */
	busy(): boolean;
	/** A run of the child here; every step row it writes is kept here as it is written, `beforeFirstKeep` called before the first. */
	run(request: InlineRequest, beforeFirstKeep?: () => void): InlineRun;
	/** What an earlier run of the child left here: its transplant once that run ended, else the steps it wrote. */
	stored(childId: string): { transplant: ChildTransplant | undefined; steps: StepRow[] };
	/** The transplant of a child whose run was cut short, from the steps it wrote. */
	fromSteps(request: InlineRequest, steps: readonly StepRow[]): ChildTransplant;
	/**
	 * Inside the caller's transaction: the run ended; a finished child is published from here afterwards.
	 * `unwritten`: its steps not kept here yet (`InlineRunEnd.unwritten`), kept in the header's row.
	 */
	keep(childId: string, parent: ParentRef, header: TransplantHeader, finished: boolean, unwritten?: readonly StepRow[]): void;
	/** Inside the caller's transaction: the child is published; its rows here go. */
	forget(childId: string): void;
	/** Publishes the finished children now, off the critical path. */
	publishSoon(): void;
	/** Publishes every finished child now (a deletion, before the storage goes); false while one is left (retried from the alarm). */
	publishPending(): Promise<boolean>;
}
