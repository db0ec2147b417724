import type { HistoryKind, HistoryMeta, HistoryRow, NewHistoryRow } from '../history/history';
import type { IndexEntry } from '../index/index-entry';
import type { StepKind } from '../support/step-kinds';
import type { StepStatus, WorkflowStatus } from '../support/statuses';

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
	/** The stable code of the last failure, when what was thrown had one (typed errors). */
	errorCode: string | null;
	createdAt: number;
	updatedAt: number;
	version: number;
	/** Grows on every restart; a pass of an older generation stops at its next step. */
	generation: number;
	/** The registry's code version of the type when this instance was created (null: none given). */
	codeVersion?: string | null;
	/** The code version of the last pass that wrote anything. */
	lastCodeVersion?: string | null;
	/** The rollback state as JSON (`RollbackState`, engine/steps/rollback-state.ts); null before any rollback. */
	rollback?: string | null;
	/**
	 * The history's size in bytes (see `historyRecordBytes`) through record `historySeq`:
	 * a running total kept up to date by every status change, so the history limit never
	 * needs a SUM over the whole history (records after `historySeq` are added from the tail).
	 */
	historyBytes?: number;
	historySeq?: number;
	/** The instance whose `step.invoke` / `step.start` created this one (null: none). */
	parentId?: string | null;
	/** The search attributes set (sorted JSON, see search-attributes.ts); null while none is. */
	attributes?: string | null;
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
	errorCode: string | null;
	startedAt: number | null;
	finishedAt: number | null;
	/** Sleep deadline, retry time or event timeout. */
	wakeAt: number | null;
	/** Order in which steps were first reached, for the history. */
	seq: number;
	/** True for a `sensitive: 'output'` step: its result is shown redacted (sensitive-output.ts). */
	sensitive: boolean;
}

export interface EventRow {
	seq: number;
	name: string;
	payload: string | null;
	receivedAt: number;
}

/** A step as `readStepResults` finds it: its key, and its row's `seq`. */
export type StepRef = Pick<StepRow, 'key' | 'seq'>;

/**
 * A step row without its result but with the result's UTF-8 size, for status
 * pages: results are read only when they fit the byte budget. A result of at most
 * `SMALL_RESULT_BYTES` comes along as `smallResult` (one query, not two, for a
 * window of small results); a larger one is read by `readStepResults`.
 */
export type StepMeta = Omit<StepRow, 'result'> & { resultBytes: number; smallResult?: string | null };

/** How many steps there are of one kind in one status (`countSteps`). */
export interface StepCount {
	kind: StepKind;
	status: StepStatus;
	n: number;
}

/** Which steps `readStepMeta` returns, always in first-reached order. */
export type StepRange = { afterSeq: number; limit: number } | { last: number };

/** Which history records `readHistory` returns. */
export interface HistoryRange {
	generation: number;
	afterSeq: number;
	limit: number;
}

/** What an idempotency key of an event send was first used for. */
export interface EventKeyRow {
	key: string;
	name: string;
	/** SHA-256 of the event name and its canonical JSON payload. */
	digest: string;
}

export interface OutboxRow {
	entry: IndexEntry;
	attempts: number;
	nextAttemptAt: number;
	/** Since when this instance is registered in its type's delivery backlog; null when it is not. Survives `writeOutbox`. */
	backloggedSince?: number | null;
}

/** Passes of an instance that were cut short in a row (see `InstanceStore.readCutPasses`). */
export interface CutPasses {
	count: number;
	/** No pass starts before this time (milliseconds since the epoch). */
	retryAt: number;
}

/** Why an instance is being deleted. */
export type DeletionReason = 'delete' | 'retention' | 'purge';

/**
 * A deletion in progress (see `InstanceEngine.delete`): kept until the archive
 * (when asked for) is written and the index acknowledged the removal; then the
 * whole storage goes, this row with it.
 */
export interface DeletionRow {
	requestedAt: number;
	reason: DeletionReason;
	/** Write the archive record before the storage goes. */
	archive: boolean;
	/** The key the archive record was written under; null until it is. */
	archivedKey: string | null;
	/** Failed archive attempts, and when the next is due. */
	attempts: number;
	nextAttemptAt: number | null;
}

/** One row an inline child's run left in its parent (see `InstanceStore.writeInlineRow`). */
export interface InlineRow {
	/** The child's step key, or '' for its header. */
	key: string;
	/** The step row (but its result) or the header, as JSON. */
	body: string;
	/** A step row's result; null for the header. */
	result: string | null;
	/** A finished child's header: when its publishing is next tried; null otherwise. */
	publishAt: number | null;
}

/**
 * The narrow, synchronous storage interface of one workflow instance.
 * Synchronous on purpose: Durable Object SQLite is synchronous, and writes with
 * no await between them coalesce into one implicit transaction.
 * `DrizzleInstanceStore` implements it in workerd, `MemoryInstanceStore` in tests.
 */
export interface InstanceStore {
	/**
	 * The instance's retention is run by its index shard, not by its own alarm (docs/decisions.md
	 * "Retention owned by the index shard"): true for the compact layout, false (absent) for the table
	 * layout, whose instances keep expiring themselves. A finished instance of such a store sets no
	 * retention alarm: its shard asks it to delete itself (`delete` with reason `retention`).
	 */
	readonly expiredByIndex?: boolean;

	transaction<T>(fn: () => T): T;

	readInstance(): InstanceRow | undefined;
	writeInstance(row: InstanceRow): void;

	/** Every step row in one query; a replay calls this once. */
	readSteps(): StepRow[];
	writeStep(row: StepRow): void;
	/**
	 * Writes a step row and appends its history record, together (the hot path of a step:
	 * its start and its completion). A store may do both in one storage call when the record
	 * follows from the row (see drizzle/0007_step-history-triggers.sql).
	 */
	writeStepWithRecord(row: StepRow, record: NewHistoryRow): void;
	/**
	 * A new step's first write (no row has its key yet) and the records it appends, in order: the
	 * `step.started` of its first attempt, and its `step.completed` when that attempt settled
	 * before anything was written (the hot path of a step: one write). A store may keep the
	 * records that follow from the row in the row itself; every history reader returns them
	 * exactly as if they had been appended, and `deleteSteps` / `keepStepsBefore` keep them.
	 */
	insertStep(row: StepRow, records: readonly NewHistoryRow[]): void;
	/** Deletes every step; the history keeps their records. */
	deleteSteps(): void;
	/** Marks every step that has not finished (`UNFINISHED_STEP_STATUSES`) `cancelled` at `at`, without a wake-up: the instance was terminated. */
	cancelUnfinishedSteps(at: number): void;
	/** Deletes every step except those, other than rollbacks, recorded before `seq` (a restart from a step keeps them in place). */
	keepStepsBefore(seq: number): void;
	/** Step rows without results, for the status window and step pages. */
	readStepMeta(range: StepRange): StepMeta[];
	/**
	 * Results of the given steps in one query (a status or a page reads its window at once), by key;
	 * steps without a row are absent. Read by `seq`, the rowid: the table has no index on `key`.
	 */
	readStepResults(steps: readonly StepRef[]): Map<string, string | null>;
	/** Number of steps per kind and status (kinds or statuses without steps are absent). */
	countSteps(): StepCount[];
	/** One step row by key, result included. */
	readStep(key: string): StepRow | undefined;
	/** The step rows of one kind (and status), results included, in first-reached order: the status's webhooks and rollbacks. */
	readStepsOfKind(kind: StepKind, status?: StepStatus): StepRow[];

	setWakeup(key: string, at: number): void;
	deleteWakeup(key: string): void;
	/** Deletes the wake-up under `key`; whether there was one. */
	takeWakeup(key: string): boolean;
	/**
	 * Deletes the wake-ups due at `now` (at or before it), except those under the keys in
	 * `spare`. The end of a pass deletes the wake-ups that were due when it began (they had
	 * their turn) and spares the ones it set itself: those may be due as early (a retry
	 * delay, sleep or timeout of 0 sets one at the pass's own time) and have not had theirs.
	 */
	deleteWakeupsDue(now: number, spare: ReadonlySet<string>): void;
	deleteAllWakeups(): void;
	earliestWakeup(): number | undefined;

	appendEvent(name: string, payload: string | null, receivedAt: number): void;
	oldestEvent(name: string): EventRow | undefined;
	deleteEvent(seq: number): void;
	deleteAllEvents(): void;
	/** Buffered events and their payload bytes: of one event name, or of every name. */
	eventBuffer(name?: string): { count: number; bytes: number };
	/** Deletes every buffered event and adds them to the dropped count; returns how many went. */
	dropEvents(): number;
	/** Buffered events (of every name) and the events dropped by `dropEvents` over the instance's life, in one read (a status). */
	eventCounts(): { buffered: number; dropped: number };

	readEventKey(key: string): EventKeyRow | undefined;
	/** Remembers a key, keeping only the `keep` most recently remembered ones. */
	writeEventKey(row: EventKeyRow, at: number, keep: number): void;

	/** Appends one history record; the store assigns its seq (one more than the last, over all generations). */
	appendHistory(row: NewHistoryRow): void;
	/** Sizes of the records of one generation after `afterSeq`, in seq order (a page picks how many fit its budget). */
	readHistoryMeta(query: HistoryRange): HistoryMeta[];
	/** The records of one generation after `afterSeq`, in seq order, in one query. */
	readHistory(query: HistoryRange): HistoryRow[];
	/**
	 * The records of the kinds in `kinds` after `afterSeq`, of any generation, in seq order (an instance's stream, engine/streams/stream.ts).
	 * `maxBytes`: stop once the records read hold that many characters of `value` and `detail` (at least one record is read).
	 */
	readHistoryOfKinds(query: { afterSeq: number; limit: number; kinds: readonly HistoryKind[]; maxBytes?: number }): HistoryRow[];
	/** The `index` of the last `stream.message` of `generation` (0: none), so a replay publishes none twice. */
	lastStreamMessageIndex(generation: number): number;
	/**
	 * The bytes (`historyRecordBytes`) of every record after `afterSeq`, of any generation,
	 * and the last seq (`afterSeq` when there is none): the tail a running total lacks.
	 */
	historySize(afterSeq: number): { bytes: number; lastSeq: number };
	/** The seq of the history's last record, of any generation (0: none): how far a stream's `after` can go. */
	historyLastSeq(): number;

	/** Replaces the pending index update (only the newest matters); keeps `backloggedSince`. */
	writeOutbox(row: OutboxRow): void;
	readOutbox(): OutboxRow | undefined;
	/** Removes the pending update if it is still the one at `version`. */
	ackOutbox(version: number): void;
	deferOutbox(version: number, attempts: number, nextAttemptAt: number): void;
	/** Records (or, with null, clears) the backlog registration on the pending row, whatever its version. */
	markOutboxBacklogged(since: number | null): void;

	/**
	 * Passes cut short in a row (the isolate died mid-pass: a crash, or a memory or CPU limit
	 * that resets it), and when the next may start: kept in storage, so the backoff outlives
	 * the isolate that every such pass kills. Undefined: none.
	 */
	readCutPasses(): CutPasses | undefined;
	writeCutPasses(value: CutPasses | undefined): void;

	/** The deletion in progress, if any. */
	readDeletion(): DeletionRow | undefined;
	writeDeletion(row: DeletionRow): void;

	/**
	 * The children this instance runs inline (children/inline-child.ts) keep what their run wrote
	 * here until each is published to its own object: one row per step (its key) and a header
	 * (key ''). Inserts or replaces one row.
	 */
	writeInlineRow(childId: string, row: InlineRow): void;
	/** Every row one inline child left, header included (none: empty). */
	readInlineRows(childId: string): InlineRow[];
	/** Deletes every row of one inline child (it is published). */
	deleteInline(childId: string): void;
	/** The finished inline children awaiting publishing, and when each is next tried. */
	inlinePublishes(): { childId: string; publishAt: number }[];
	/** Deletes the rows of every inline child that is not awaiting publishing (no invoke of the parent owns it any more). */
	deleteUnpublishedInline(): void;
}

/**
 * The store as the steps of a pass write it: they set wake-ups through the pass
 * (`PassHooks.setWakeup`, `RollbackHooks.setWakeup`), never directly, so the end
 * of the pass knows which ones to spare (see `InstanceStore.deleteWakeupsDue`).
 */
export type PassStore = Omit<InstanceStore, 'setWakeup'>;
