import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import type { NewHistoryRow } from '../engine/history/history';
import type { StepRow } from '../engine/storage/store';
import { DrizzleInstanceStore, type StoreStart } from './drizzle-instance-store';

/**
 * The instance's Drizzle store, telling its stream (roles/instance-stream-feed.ts)
 * that the history grew. Every record goes through one of these three writes (a step's
 * start and completion through the last two), so the stream needs no polling. The
 * notice only schedules a read on a later turn: it costs a step nothing when nobody
 * subscribes.
 */
export class NotifyingInstanceStore extends DrizzleInstanceStore {
	constructor(
		db: DrizzleSqliteDODatabase,
		storage: DurableObjectStorage,
		start: StoreStart | undefined,
		private readonly historyAppended: () => void,
	) {
		super(db, storage, start);
	}

	override appendHistory(row: NewHistoryRow): void {
		super.appendHistory(row);
		this.historyAppended();
	}

	override writeStepWithRecord(row: StepRow, record: NewHistoryRow): void {
		super.writeStepWithRecord(row, record);
		this.historyAppended();
	}

	override insertStep(row: StepRow, records: readonly NewHistoryRow[]): void {
		super.insertStep(row, records);
		if (records.length > 0) this.historyAppended();
	}
}
