import type { ChildPort } from '../children/child-workflows';
import type { ResolvedEntry } from '../definition/registry';
import type { HistoryRecord } from '../history/history';
import type { IndexEntry } from '../index/index-entry';
import type { DeletionReason, InstanceRow } from '../storage/store';
import type { EngineHost } from './engine-host';
import type { InlineChildHooks } from '../steps/pass-hooks';

/**
 * One concern of an instance beside its row (the replay loop, the index outbox, the
 * concurrency slot, the deletion, the retention, the child cascade). The kernel asks
 * every part the same three questions: when it is next due (the alarm is the earliest
 * answer), what it does when the alarm fires, and how it reacts to a status change.
 */
export interface InstancePart {
	/** When the alarm must come back for this part; undefined: nothing due. */
	dueAt(now: number): number | undefined;
	/**
	 * The alarm fired. True: this part took the alarm, and the parts after it wait for the
	 * next one (the kernel asks them in order); false: the next part is asked too.
	 */
	onAlarm(now: number): boolean;
	/** Inside the transaction of a status change, after the row is written. */
	duringTransition?(row: InstanceRow, now: number): void;
	/** After a status change is stored and the kernel's row updated. */
	afterTransition?(previous: InstanceRow | undefined, row: InstanceRow): void;
	/** Nothing is due before this time, whatever the parts answer (a backoff); undefined: no hold. */
	holdUntil?(): number | undefined;
	/** Work of this part under way (awaited by `idle`). */
	readonly inFlight?: Promise<void> | undefined;
}

/** What the outbox offers the other parts: a staged entry is written in their transaction, then sent. */
export interface OutboxAccess {
	stage(entry: IndexEntry, now: number): StagedEntry;
	afterStaged(staged: StagedEntry): void;
	deliverNow(): Promise<void>;
}

/** An index entry written to the outbox: when the alarm must come by for it, and whether to send it now. */
export interface StagedEntry {
	alarmBy: number;
	sendNow: boolean;
}

/**
 * The kernel as its parts see it (kernel.ts implements it): the row, the host, `transition`,
 * `rearm`, and what each part offers the others. The parts depend on this module, not on the
 * kernel, which builds them: no import cycle between the kernel and its parts.
 */
export interface PartKernel {
	readonly host: EngineHost;
	readonly row: InstanceRow | undefined;
	/** The storage is gone: this engine does nothing more (set by the deletion's last step). */
	gone: boolean;
	/** History bytes appended since the row's running total was written (see kernel.ts). */
	uncountedHistoryBytes: number;
	transition(next: InstanceRow, record?: HistoryRecord): void;
	/** A created instance's first pass: `running` in memory, written by the next transition or before a delivery (kernel.ts). */
	startRunning(next: InstanceRow): void;
	/** Writes the row held ahead of storage (a `running` not written yet), with its index entry. */
	writeUnwritten(): void;
	/** Before a delivery: that row written, once its pass ended or had time to (kernel.ts). */
	beforeDelivery(): Promise<void>;
	rearm(): void;
	entryOf(row: InstanceRow): ResolvedEntry;
	readonly outbox: OutboxAccess;
	readonly slot: { readonly present: boolean; syncNow(): Promise<void> };
	readonly replay: { kick(): void };
	readonly deletion: { readonly pending: boolean; begin(reason: DeletionReason, archive: boolean): void; continue(): Promise<void> };
	readonly children: { portForPass(): ChildPort | undefined; toTerminate(): string[]; arm(children: readonly string[]): void; start(children: readonly string[]): void };
	readonly inline: InlineChildHooks;
}
