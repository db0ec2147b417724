import type { OutboxRow } from '../engine/storage/store';
import { KV } from './compact-keys';
import type { InstanceRecord } from './compact-instance-record';

const UNREAD = Symbol('unread');

/** The instance record as the outbox changes it (compact-instance-store.ts). */
export interface RecordAccess {
	read(): InstanceRecord | undefined;
	/** The record changed: put now, or at the transaction's end. */
	changed(): void;
	/** An acknowledgement changed it: put at the transaction's end when in one, else with the record's next put. */
	acknowledged(): void;
}

/**
 * The pending index entry of a compact instance: in the instance record (the outbox in the record: a status
 * change writes it with the row, one put), or under `o` while no record exists. Read, retried and acknowledged
 * from both, as the table layout's store does for its two places.
 */
export class CompactOutbox {
	/** The pending entry under `o`. */
	private looseOutbox: OutboxRow | undefined | typeof UNREAD = UNREAD;

	constructor(
		private readonly kv: SyncKvStorage,
		private readonly put: (key: string, value: unknown) => void,
		private readonly record: RecordAccess,
	) {}

	startEmpty(): void {
		this.looseOutbox = undefined;
	}

	forget(): void {
		this.looseOutbox = UNREAD;
	}

	private loose(): OutboxRow | undefined {
		if (this.looseOutbox === UNREAD) this.looseOutbox = this.kv.get<OutboxRow>(KV.outbox);
		return this.looseOutbox;
	}

	writeOutbox(row: OutboxRow): void {
		const record = this.record.read();
		const loose = this.loose();
		const backloggedSince = record?.pending?.backloggedSince ?? loose?.backloggedSince ?? null;
		const pending: OutboxRow = { entry: row.entry, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt, backloggedSince };
		if (record) {
			record.pending = pending;
			this.record.changed();
			if (loose) this.dropLoose();
		} else {
			this.put(KV.outbox, pending);
			this.looseOutbox = pending;
		}
	}

	private dropLoose(): void {
		this.kv.delete(KV.outbox);
		this.looseOutbox = undefined;
	}

	readOutbox(): OutboxRow | undefined {
		const pending = this.record.read()?.pending ?? undefined;
		const loose = this.loose();
		const newer = pending && loose ? (pending.entry.version >= loose.entry.version ? pending : loose) : (pending ?? loose);
		return newer && { ...newer, backloggedSince: newer.backloggedSince ?? null };
	}

	/**
	 * An acknowledgement outside a transaction (a delivery's) is not written on its own: the record's next put
	 * carries it (a status change, a deferral). An object that stops before then reads the entry as pending
	 * when it starts again and delivers it once more, which the shard's keep-the-highest-version makes
	 * harmless: a row written fewer per delivery (docs/decisions.md "The compact instance layout").
	 */
	ackOutbox(version: number): void {
		const record = this.record.read();
		if (record?.pending && record.pending.entry.version <= version) {
			record.pending = null;
			this.record.acknowledged();
		}
		const loose = this.loose();
		if (loose && loose.entry.version <= version) this.dropLoose();
	}

	deferOutbox(version: number, attempts: number, nextAttemptAt: number): void {
		const record = this.record.read();
		if (record?.pending && record.pending.entry.version === version) {
			record.pending = { ...record.pending, attempts, nextAttemptAt };
			this.record.changed();
		}
		const loose = this.loose();
		if (loose && loose.entry.version === version) {
			this.looseOutbox = { ...loose, attempts, nextAttemptAt };
			this.put(KV.outbox, this.looseOutbox);
		}
	}

	markOutboxBacklogged(since: number | null): void {
		const record = this.record.read();
		if (record?.pending) {
			record.pending = { ...record.pending, backloggedSince: since };
			this.record.changed();
		}
		const loose = this.loose();
		if (loose) {
			this.looseOutbox = { ...loose, backloggedSince: since };
			this.put(KV.outbox, this.looseOutbox);
		}
	}
}
