import type { SlotRow, SlotStore } from './concurrency-slot';
import type { LimiterRow, LimiterStore } from './limiter';

/** An instance's slot row in memory: for the engine's tests. */
export class MemorySlotStore implements SlotStore {
	private row: SlotRow | undefined;

	readSlot(): SlotRow | undefined {
		return this.row && { ...this.row };
	}

	writeSlot(row: SlotRow | undefined): void {
		this.row = row && { ...row };
	}
}

/** A limiter's rows in memory: for the engine's tests. */
export class MemoryLimiterStore implements LimiterStore {
	private rows = new Map<string, LimiterRow>();
	private seq = 0;

	get(id: string): LimiterRow | undefined {
		const row = this.rows.get(id);
		return row && { ...row };
	}

	put(row: LimiterRow): void {
		this.rows.set(row.id, { ...row });
	}

	remove(id: string): void {
		this.rows.delete(id);
	}

	holding(): number {
		return [...this.rows.values()].filter((r) => r.state === 'holding').length;
	}

	waiters(limit: number): LimiterRow[] {
		return this.all()
			.filter((r) => r.state === 'waiting')
			.sort((a, b) => a.seq - b.seq)
			.slice(0, limit);
	}

	unnotified(): LimiterRow[] {
		return this.all()
			.filter((r) => r.state === 'holding' && r.notifyAt !== null)
			.sort((a, b) => a.notifyAt! - b.notifyAt!);
	}

	nextSeq(): number {
		return ++this.seq;
	}

	all(): LimiterRow[] {
		return [...this.rows.values()].map((r) => ({ ...r }));
	}

	transaction<T>(fn: () => T): T {
		const saved = new Map(this.rows);
		try {
			return fn();
		} catch (error) {
			this.rows = saved;
			throw error;
		}
	}
}
