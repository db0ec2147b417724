import { concurrencyKey, concurrencyOf } from '../../limiter/concurrency';
import type { GrantAnswer, SlotRow } from '../../limiter/concurrency-slot';
import { historyRow } from '../../history/history';
import { fromStoredJson } from '../../support/json';
import type { InstanceRow } from '../../storage/store';
import { SingleFlight } from '../../support/single-flight';
import { describeThrown } from '../../support/thrown-value';
import { FINISHED_STATUSES } from '../../support/statuses';
import type { InstancePart, PartKernel } from '../part';
import { outboxBackoffMs, WATCHDOG_MS } from '../../support/timing';

/**
 * The instance's concurrency slot (types with `static concurrency`; see
 * concurrency-slot.ts for the row's states): requests it when the instance is
 * queued, starts the instance when the limiter grants it, gives it back when the
 * instance finishes; each request and release is retried from the alarm until the
 * limiter acknowledges it.
 */
export class ConcurrencySlot implements InstancePart {
	/** Mirrors the stored slot row. */
	private slot: SlotRow | undefined;
	/** The slot request or release being delivered to the limiter (one at a time). */
	private readonly delivery: SingleFlight;

	constructor(private readonly k: PartKernel) {
		this.slot = k.row ? k.host.slots?.readSlot() : undefined;
		this.delivery = new SingleFlight({
			background: (flight) => k.host.background(flight),
			round: () => this.deliverOnce(),
			after: () => k.rearm(),
		});
	}

	get inFlight(): Promise<void> | undefined {
		return this.delivery.inFlight;
	}

	/** Whether the instance still has a slot row (requested, waiting, held or being released). */
	get present(): boolean {
		return this.slot !== undefined;
	}

	/** The concurrency key of a type with `static concurrency` (from the stored payload), else undefined. */
	keyOf(row: InstanceRow): string | undefined {
		const host = this.k.host;
		if (!host.slots || !host.limiter) return undefined;
		const definition = concurrencyOf(host.registry, row.type);
		return definition && concurrencyKey(row.type, definition, fromStoredJson(row.payload));
	}

	/** Inside the transaction that makes the instance `queued`: its history record and its slot request. */
	queue(key: string, generation: number, now: number): void {
		this.k.host.store.appendHistory(historyRow({ kind: 'workflow.queued', detail: { key } }, generation, now));
		this.write({ key, state: 'requested', attempts: 0, nextAttemptAt: now });
	}

	/**
	 * The limiter granted this queued instance a slot (RPC `slotGranted`): it starts, and accepts.
	 * A grant repeated after its answer was lost is accepted again (the slot is held). An instance
	 * that no longer waits for the slot (terminated, or finished, before the grant arrived; or
	 * terminated with its rollbacks while queued) declines: it never starts a step, and the
	 * limiter gives the slot to the next in line without waiting for the release, which may be
	 * late, lost with a crash, or may even have reached the limiter before a late request did.
	 */
	granted(): GrantAnswer {
		const slot = this.slot;
		if (slot?.state === 'held') return 'accepted';
		if (!slot || slot.state === 'releasing' || this.k.row?.status !== 'queued') return 'declined';
		this.startWith(slot);
		return 'accepted';
	}

	/** Delivers the slot's pending request or release to the limiter; a failure waits for the alarm, with backoff. */
	sync(): void {
		this.delivery.request();
	}

	/** Gives the slot back (or leaves the queue) and resolves once the limiter has it, or the delivery failed. */
	async syncNow(): Promise<void> {
		this.sync();
		while (this.delivery.inFlight) await this.delivery.inFlight;
	}

	/** A finished instance gives its concurrency slot back (or leaves the queue): delivered after, retried until acknowledged. */
	duringTransition(row: InstanceRow, now: number): void {
		const slot = this.slot;
		if (slot && slot.state !== 'releasing' && FINISHED_STATUSES.includes(row.status)) this.write({ ...slot, state: 'releasing', attempts: 0, nextAttemptAt: now });
	}

	afterTransition(): void {
		if (this.slot?.state === 'releasing' && this.slot.attempts === 0) this.sync();
	}

	/** A slot request or release in flight is checked again later, like a pass: a crash mid-call must not strand it. */
	dueAt(now: number): number | undefined {
		const slot = this.slot;
		if (slot?.state !== 'requested' && slot?.state !== 'releasing') return undefined;
		return this.delivery.inFlight ? now + WATCHDOG_MS : (slot.nextAttemptAt ?? now);
	}

	/** A due request or release is retried; the alarm goes on to the other parts. */
	onAlarm(now: number): boolean {
		const due = this.slot?.nextAttemptAt;
		if (due != null && due <= now) this.sync();
		return false;
	}

	private startWith(slot: SlotRow): void {
		const k = this.k;
		const row = k.row!;
		// Only a queued instance starts: a terminated one (or one rolling back) never takes a step again.
		if (row.status !== 'queued') return;
		const now = k.host.now();
		k.host.store.transaction(() => {
			this.write({ ...slot, state: 'held', attempts: 0, nextAttemptAt: null });
			k.transition({ ...row, status: 'created' }, { kind: 'slot.acquired', detail: { key: slot.key, waitedMs: Math.max(0, now - row.updatedAt) } });
		});
		k.replay.kick();
	}

	private async deliverOnce(): Promise<void> {
		const k = this.k;
		const slot = this.slot;
		const row = k.row;
		if (!slot || !row || k.gone || !k.host.limiter) return;
		if (slot.state !== 'requested' && slot.state !== 'releasing') return;
		try {
			if (slot.state === 'requested') {
				const answer = await k.host.limiter.acquire(row.type, slot.key, row.id);
				const current = this.slot;
				// A terminate (or a grant) while the request was in flight decided already.
				if (current?.state !== 'requested') return;
				if (answer === 'holding') this.startWith(current);
				else this.write({ ...current, state: 'waiting', attempts: 0, nextAttemptAt: null });
			} else {
				await k.host.limiter.release(row.type, slot.key, row.id);
				if (this.slot?.state !== 'releasing' || k.gone) return;
				k.host.store.transaction(() => {
					this.write(undefined);
					k.host.store.appendHistory(historyRow({ kind: 'slot.released', detail: { key: slot.key } }, k.row!.generation, k.host.now()));
				});
			}
		} catch (error) {
			const current = this.slot;
			if (!current || current.state !== slot.state || k.gone) return;
			const attempts = current.attempts + 1;
			this.write({ ...current, attempts, nextAttemptAt: k.host.now() + outboxBackoffMs(attempts) });
			k.host.log?.({ severity: 'warn', event: 'workflow.slot_delivery_failed', instanceId: row.id, type: row.type, state: slot.state, attempts, error: describeThrown(error) });
		}
	}

	private write(slot: SlotRow | undefined): void {
		this.k.host.slots!.writeSlot(slot);
		this.slot = slot;
	}
}
