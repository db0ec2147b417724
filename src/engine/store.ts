import type { IndexEntry } from './index-entry';
import type { StepKind, StepStatus, WorkflowStatus } from './types';

/** The instance's own row. JSON columns hold text produced by `toStoredJson`. */
export interface InstanceRow {
	id: string;
	type: string;
	status: WorkflowStatus;
	payload: string | null;
	output: string | null;
	errorName: string | null;
	errorMessage: string | null;
	/** Bounded stack trace of the last failure (see thrown-value.ts). */
	errorStack: string | null;
	createdAt: number;
	updatedAt: number;
	version: number;
	/** Grows on every restart; a pass of an older generation stops at its next step. */
	generation: number;
}

export interface StepRow {
	key: string;
	name: string;
	kind: StepKind;
	status: StepStatus;
	attempts: number;
	result: string | null;
	errorName: string | null;
	errorMessage: string | null;
	errorStack: string | null;
	startedAt: number | null;
	finishedAt: number | null;
	/** Sleep deadline, retry time or event timeout. */
	wakeAt: number | null;
	/** Order in which steps were first reached, for the history. */
	seq: number;
}

export interface EventRow {
	seq: number;
	name: string;
	payload: string | null;
	receivedAt: number;
}

export interface OutboxRow {
	entry: IndexEntry;
	attempts: number;
	nextAttemptAt: number;
	/** Since when this instance is registered in its type's delivery backlog; null when it is not. Survives `writeOutbox`. */
	backloggedSince?: number | null;
}

/**
 * The narrow, synchronous storage interface of one workflow instance.
 * Synchronous on purpose: Durable Object SQLite is synchronous, and writes with
 * no await between them coalesce into one implicit transaction.
 * `DrizzleInstanceStore` implements it in workerd, `MemoryInstanceStore` in tests.
 */
export interface InstanceStore {
	transaction<T>(fn: () => T): T;

	readInstance(): InstanceRow | undefined;
	writeInstance(row: InstanceRow): void;

	/** Every step row in one query; a replay calls this once. */
	readSteps(): StepRow[];
	writeStep(row: StepRow): void;
	deleteSteps(): void;

	setWakeup(key: string, at: number): void;
	deleteWakeup(key: string): void;
	deleteWakeupsDue(now: number): void;
	deleteAllWakeups(): void;
	earliestWakeup(): number | undefined;

	appendEvent(name: string, payload: string | null, receivedAt: number): void;
	oldestEvent(name: string): EventRow | undefined;
	deleteEvent(seq: number): void;
	deleteAllEvents(): void;

	/** Replaces the pending index update (only the newest matters); keeps `backloggedSince`. */
	writeOutbox(row: OutboxRow): void;
	readOutbox(): OutboxRow | undefined;
	/** Removes the pending update if it is still the one at `version`. */
	ackOutbox(version: number): void;
	deferOutbox(version: number, attempts: number, nextAttemptAt: number): void;
	/** Records (or, with null, clears) the backlog registration on the pending row, whatever its version. */
	markOutboxBacklogged(since: number | null): void;
}
