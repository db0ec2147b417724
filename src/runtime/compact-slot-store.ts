import type { SlotRow, SlotStore } from '../engine/limiter/concurrency-slot';
import { KV } from './compact-keys';

/** A compact instance's concurrency slot (compact-instance-store.ts): one key, written inside the instance store's transactions. */
export class CompactSlotStore implements SlotStore {
	constructor(private readonly kv: SyncKvStorage) {}

	readSlot(): SlotRow | undefined {
		return this.kv.get<SlotRow>(KV.slot);
	}

	writeSlot(row: SlotRow | undefined): void {
		if (row) this.kv.put(KV.slot, { key: row.key, state: row.state, attempts: row.attempts, nextAttemptAt: row.nextAttemptAt });
		else this.kv.delete(KV.slot);
	}
}
