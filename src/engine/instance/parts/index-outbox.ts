import { deliverTracked, noteFailedDelivery } from '../../index/index-backlog';
import { toIndexEntry, type IndexEntry } from '../../index/index-entry';
import { deliveryDeadline, endsBeforeDeadline } from '../../index/delivery-deadline';
import type { InstanceRow } from '../../storage/store';
import { SingleFlight } from '../../support/single-flight';
import type { InstancePart, OutboxAccess, PartKernel, StagedEntry } from '../part';
import { INDEX_COALESCE_MS, OUTBOX_GRACE_MS, outboxBackoffMs } from '../../support/timing';

/**
 * The index outbox: every status change writes the instance's index entry into the
 * outbox with the row; this part delivers it to its shard off the critical path,
 * retries it with backoff from the alarm and reports lasting failures to the backlog.
 */
export class IndexOutbox implements InstancePart, OutboxAccess {
	private readonly delivery: SingleFlight;
	/** What the transition being written staged for after it: when the entry is due, and whether to send it now. */
	private staged: StagedEntry | undefined;
	/**
	 * Set while a transition is written whose caller delivers its entry before it answers and retries
	 * the call until it did (a published finished child: `withCallerAsBackstop`): no alarm is set for it.
	 */
	private callerIsBackstop = false;
	/** Set by `deliverNow` for the flight it waits for: an entry left pending for its status's end is sent too. */
	private sendHeld = false;

	constructor(private readonly k: PartKernel) {
		this.delivery = new SingleFlight({
			background: (flight) => k.host.background(flight),
			// Waits a moment before sending, so the transitions of a busy moment (created,
			// running, completed) reach the shard as one write of the newest.
			before: () => new Promise<void>((resolve) => k.host.defer(resolve, INDEX_COALESCE_MS)),
			round: () => this.deliverOnce(),
			after: () => {
				this.sendHeld = false;
				k.rearm();
			},
		});
	}

	get inFlight(): Promise<void> | undefined {
		return this.delivery.inFlight;
	}

	/** Delivers the pending index update off the critical path; failures wait for the alarm. */
	deliver(): void {
		this.delivery.request();
	}

	/** Delivers the pending entry, even one left pending for its status's end, and resolves once nothing is in flight. */
	async deliverNow(): Promise<void> {
		this.sendHeld = true;
		this.deliver();
		while (this.delivery.inFlight) await this.delivery.inFlight;
	}

	/**
	 * The entry the outbox holds and its deadline, written with the row by a transition or a deletion.
	 * The deadline is the first unsent change's (index/delivery-deadline.ts): a newer entry keeps it, and
	 * while the shard is failing it inherits the backoff instead of starting it again. A `sleeping`
	 * status whose wake-up comes by then is left pending: the woken pass's next status supersedes it.
	 */
	stage(entry: IndexEntry, now: number): StagedEntry {
		const store = this.k.host.store;
		const pending = store.readOutbox();
		const nextAttemptAt = deliveryDeadline(pending, now);
		store.writeOutbox({ entry, attempts: pending?.attempts ?? 0, nextAttemptAt });
		if (pending !== undefined && pending.attempts > 0) return { alarmBy: nextAttemptAt, sendNow: nextAttemptAt <= now };
		// Left pending: the alarm need only come by its wake-up (at or before the deadline), which the end of this pass sets
		// anyway, so no alarm write of its own; the pass that wake-up starts supersedes the entry, and its end points the
		// alarm at the deadline if nothing comes first. (Ensuring it by the deadline itself would write one per retry on
		// the table layout, where the deadline falls before a woken pass's watchdog.)
		const wakeAt = store.earliestWakeup();
		if (endsBeforeDeadline(entry, wakeAt, nextAttemptAt, now)) return { alarmBy: wakeAt!, sendNow: false };
		// Sent now: the alarm retries it if this isolate does not live to, as it always did (a deadline
		// already past, an acknowledgement the compact layout did not store, must not fire it at once).
		return { alarmBy: Math.max(nextAttemptAt, now + OUTBOX_GRACE_MS), sendNow: true };
	}

	/** After a write that staged an entry: the alarm covers its delivery, and it is sent now unless it waits (a backoff, its status's end). */
	afterStaged({ alarmBy, sendNow }: StagedEntry): void {
		if (!this.callerIsBackstop || !sendNow) this.k.host.ensureAlarmBy(alarmBy);
		if (sendNow) this.deliver();
	}

	/**
	 * Runs `write` (a transition) without arming the alarm for its entry: the caller awaits
	 * `deliverNow` before it answers, and its own caller retries the call until it is answered
	 * (a parent publishing a child that finished inline: docs/decisions.md "Rows of a
	 * `step.invoke` child"). A delivery that fails arms the alarm as any does (`deliverOnce`, then `rearm`).
	 * Saves the alarm write (a row) of every published child.
	 */
	withCallerAsBackstop<T>(write: () => T): T {
		this.callerIsBackstop = true;
		try {
			return write();
		} finally {
			this.callerIsBackstop = false;
		}
	}

	duringTransition(row: InstanceRow, now: number): void {
		this.staged = this.stage(toIndexEntry(row), now);
	}

	afterTransition(): void {
		const staged = this.staged;
		this.staged = undefined;
		if (staged) this.afterStaged(staged);
	}

	/**
	 * Writes the current entry into the outbox again (as if the last transition
	 * had just happened) and waits for its delivery: repairs an entry that a
	 * shard lost. The shard keeps the highest version, so this never regresses it.
	 */
	async republish(row: InstanceRow): Promise<{ entry: IndexEntry; delivered: boolean }> {
		// The entry of a row storage holds (a `running` held in memory is written first: kernel.ts `startRunning`).
		this.k.writeUnwritten();
		const entry = toIndexEntry(this.k.row && this.k.row.id === row.id ? this.k.row : row);
		const store = this.k.host.store;
		const now = this.k.host.now();
		store.writeOutbox({ entry, attempts: 0, nextAttemptAt: now + OUTBOX_GRACE_MS });
		this.k.host.ensureAlarmBy(now + OUTBOX_GRACE_MS);
		await this.deliverNow();
		return { entry, delivered: store.readOutbox() === undefined };
	}

	dueAt(now: number): number | undefined {
		const pending = this.k.host.store.readOutbox()?.nextAttemptAt;
		// A delivery in flight re-arms when it ends; until then its retry is not due (an alarm
		// in the past here would fire again and again while the shard is slow).
		return pending !== undefined && this.delivery.inFlight ? Math.max(pending, now + OUTBOX_GRACE_MS) : pending;
	}

	/** A due retry is sent; the alarm goes on to the other parts. */
	onAlarm(now: number): boolean {
		const outbox = this.k.host.store.readOutbox();
		if (outbox && outbox.nextAttemptAt <= now) this.deliver();
		return false;
	}

	private async deliverOnce(): Promise<void> {
		const host = this.k.host;
		// A `running` held in memory (kernel.ts `startRunning`) is written, with its entry, before the index could show it.
		await this.k.beforeDelivery();
		const pending = host.store.readOutbox();
		if (!pending) return;
		// Left pending for its status's end (`stage`): the woken pass's status supersedes it, or the alarm sends it at its deadline.
		if (!this.sendHeld && endsBeforeDeadline(pending.entry, host.store.earliestWakeup(), pending.nextAttemptAt, host.now())) return;
		try {
			await deliverTracked(host, pending);
			host.store.ackOutbox(pending.entry.version);
		} catch {
			const attempts = pending.attempts + 1;
			host.store.deferOutbox(pending.entry.version, attempts, host.now() + outboxBackoffMs(attempts));
			// A newer entry written meanwhile gets its own attempt (the flight goes round again); otherwise wait for the alarm.
			await noteFailedDelivery(host, pending);
		}
	}
}
