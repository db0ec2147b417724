import type { InstanceRow } from '../storage/store';

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
