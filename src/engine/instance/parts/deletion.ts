import { writeArchive } from '../../lifecycle/archive-writer';
import { removalEntry } from '../../index/index-entry';
import type { DeletionReason, DeletionRow } from '../../storage/store';
import { describeThrown } from '../../support/thrown-value';
import type { InstancePart, PartKernel } from '../part';
import { outboxBackoffMs, WATCHDOG_MS } from '../../support/timing';

/**
 * A deletion in progress: its whole storage (SQLite data and alarm) and its index
 * entry go, after its archive record is written when asked. The deletion is durable
 * before anything goes: a `deletion` row and the removal entry in the outbox, written
 * together, so a crash at any point resumes it from the alarm. The storage goes only
 * once the archive record is written (if asked), the index has acknowledged the
 * removal (which travels like every index entry: retried with backoff, backlogged)
 * and the concurrency slot is given back.
 */
export class Deletion implements InstancePart {
	/** Mirrors the stored deletion row: set, the instance is being deleted and answers as if it were gone. */
	private row: DeletionRow | undefined;
	/** The deletion steps running now (one at a time). */
	private running: Promise<void> | undefined;

	constructor(private readonly k: PartKernel) {
		this.row = k.row ? k.host.store.readDeletion() : undefined;
	}

	/** A deletion was requested (the instance answers NOT_FOUND, a create of its id is refused). */
	get pending(): boolean {
		return this.row !== undefined;
	}

	get inFlight(): Promise<void> | undefined {
		return this.running;
	}

	/** The durable start of a deletion: the deletion row and the removal entry, in one transaction. */
	begin(reason: DeletionReason, archive: boolean): void {
		const k = this.k;
		const row = k.row!;
		const now = k.host.now();
		const deletion: DeletionRow = { requestedAt: now, reason, archive, archivedKey: null, attempts: 0, nextAttemptAt: null };
		// Like a transition: a removal while the shard is failing inherits the backoff.
		const staged = k.host.store.transaction(() => {
			k.host.store.deleteAllWakeups();
			k.host.store.writeDeletion(deletion);
			return k.outbox.stage(removalEntry(row), now);
		});
		this.row = deletion;
		k.host.log?.({ severity: reason === 'retention' ? 'debug' : 'info', event: 'workflow.deleting', instanceId: row.id, type: row.type, status: row.status, reason, archive });
		k.outbox.afterStaged(staged);
	}

	/** Runs the remaining steps of the deletion in progress (one run at a time). */
	continue(): Promise<void> {
		return (this.running ??= this.run().finally(() => {
			this.running = undefined;
			this.k.rearm();
		}));
	}

	/** When the alarm must continue the deletion in progress (the outbox retry covers an unacknowledged removal). */
	dueAt(now: number): number | undefined {
		const deletion = this.row;
		if (!deletion) return undefined;
		if (this.running) return now + WATCHDOG_MS;
		if (deletion.archive && deletion.archivedKey === null) return deletion.nextAttemptAt ?? now;
		if (this.k.host.store.readOutbox() !== undefined) return undefined;
		return Math.max(now, this.k.row!.createdAt + 1);
	}

	/** A deletion a crash (or a failed delivery or archive write) left unfinished takes the alarm. */
	onAlarm(): boolean {
		if (!this.row) return false;
		this.k.host.background(this.continue());
		return true;
	}

	private async run(): Promise<void> {
		const k = this.k;
		const deletion = this.row;
		if (!deletion || k.gone) return;
		if (deletion.archive && deletion.archivedKey === null && !(await this.writeArchive(deletion))) return;
		// The removal is delivered like every index entry; a failure waits for the alarm's retry.
		if (k.host.store.readOutbox()) {
			await k.outbox.deliverNow();
			if (k.host.store.readOutbox()) return;
		}
		// Children that finished inline are published before the storage (and their rows with it) goes.
		if (!(await k.inline.publishPending())) return;
		// The concurrency slot goes back before the storage (and the slot row with it) goes.
		if (k.slot.present) {
			await k.slot.syncNow();
			if (k.slot.present) return;
		}
		const row = k.row!;
		// A later incarnation takes its createdAt after this point, so the index orders it after this one.
		if (k.host.now() <= row.createdAt) return;
		if (!k.host.destroy) throw new Error('this engine host cannot free storage (EngineHost.destroy)');
		await k.host.destroy();
		k.gone = true;
		k.host.log?.({ severity: deletion.reason === 'retention' ? 'debug' : 'info', event: 'workflow.deleted', instanceId: row.id, type: row.type, reason: deletion.reason, archivedKey: this.row?.archivedKey ?? null });
	}

	/** Writes the archive (in bounded parts, see archive-writer.ts); false (and a retry scheduled with backoff) if it could not. */
	private async writeArchive(deletion: DeletionRow): Promise<boolean> {
		const k = this.k;
		if (deletion.nextAttemptAt !== null && deletion.nextAttemptAt > k.host.now()) return false;
		const row = k.row!;
		try {
			if (!k.host.archive) throw new Error('no archive bucket is bound (ARCHIVE)');
			// deletedAt is the request's time, so a write repeated after a crash is the same record.
			const key = await writeArchive(k.host.archive, row, k.host.store, deletion.requestedAt, deletion.reason);
			this.write({ ...deletion, archivedKey: key, nextAttemptAt: null });
			return true;
		} catch (error) {
			const attempts = deletion.attempts + 1;
			this.write({ ...deletion, attempts, nextAttemptAt: k.host.now() + outboxBackoffMs(attempts) });
			k.host.log?.({ severity: 'error', event: 'workflow.archive_failed', instanceId: row.id, type: row.type, attempts, error: describeThrown(error) });
			return false;
		}
	}

	private write(row: DeletionRow): void {
		this.k.host.store.writeDeletion(row);
		this.row = row;
	}
}
