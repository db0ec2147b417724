import { eq, getTableName } from 'drizzle-orm';
import * as schema from '../db/schema';
import type { SlotRow, SlotState, SlotStore } from '../engine/limiter/concurrency-slot';
import type { Database } from './object-storage';
import { EVERY_TABLE, type TablePresence } from './first-write-tables';

const { concurrencySlot: t } = schema;
/** Created on its first write (db/role-tables.ts `FIRST_WRITE_TABLES`): most instances never queue for a slot. */
const SLOT_TABLE = getTableName(t);

/** An instance's concurrency slot row (`concurrency_slot`) through Drizzle; written inside the instance store's transactions. */
export class DrizzleSlotStore implements SlotStore {
	constructor(
		private readonly db: Database,
		private readonly tables: TablePresence = EVERY_TABLE,
	) {}

	readSlot(): SlotRow | undefined {
		if (!this.tables.has(SLOT_TABLE)) return undefined;
		const row = this.db.select().from(t).where(eq(t.slot, 0)).get();
		return row && { key: row.key, state: row.state as SlotState, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt };
	}

	writeSlot(row: SlotRow | undefined): void {
		if (!row) {
			if (!this.tables.has(SLOT_TABLE)) return;
			this.db.delete(t).where(eq(t.slot, 0)).run();
			return;
		}
		this.tables.ensure(SLOT_TABLE);
		const values = { slot: 0, ...row };
		this.db.insert(t).values(values).onConflictDoUpdate({ target: t.slot, set: values }).run();
	}
}
