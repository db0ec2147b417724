import { eq } from 'drizzle-orm';
import * as schema from '../db/schema';
import type { SlotRow, SlotState, SlotStore } from '../engine/limiter/concurrency-slot';
import type { Database } from './object-storage';

const { concurrencySlot: t } = schema;

/** An instance's concurrency slot row (`concurrency_slot`) through Drizzle; written inside the instance store's transactions. */
export class DrizzleSlotStore implements SlotStore {
	constructor(private readonly db: Database) {}

	readSlot(): SlotRow | undefined {
		const row = this.db.select().from(t).where(eq(t.slot, 0)).get();
		return row && { key: row.key, state: row.state as SlotState, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt };
	}

	writeSlot(row: SlotRow | undefined): void {
		if (!row) {
			this.db.delete(t).where(eq(t.slot, 0)).run();
			return;
		}
		const values = { slot: 0, ...row };
		this.db.insert(t).values(values).onConflictDoUpdate({ target: t.slot, set: values }).run();
	}
}
