import { eq, sql } from 'drizzle-orm';
import * as schema from '../db/schema';
import type { BulkCounts, BulkItem, BulkJobRow, BulkStore } from '../engine/bulk/bulk-job';
import type { Database } from './object-storage';

const { bulkJob: job, bulkItems: items, bulkCounts: counts } = schema;
const SLOT = 0;

/** A bulk job's storage (`bulk_job`, `bulk_items`, `bulk_counts`) through Drizzle. */
export class DrizzleBulkStore implements BulkStore {
	constructor(
		private readonly db: Database,
		private readonly storage: DurableObjectStorage,
	) {}

	readJob(): BulkJobRow | undefined {
		const row = this.db.select().from(job).where(eq(job.slot, SLOT)).get();
		if (!row) return undefined;
		return {
			spec: JSON.parse(row.spec), state: row.state as BulkJobRow['state'], cursor: row.cursor, errors: JSON.parse(row.errors),
			createdAt: row.createdAt, updatedAt: row.updatedAt, finishedAt: row.finishedAt,
		};
	}

	writeJob(row: BulkJobRow): void {
		const values = {
			slot: SLOT, spec: JSON.stringify(row.spec), state: row.state, cursor: row.cursor, errors: JSON.stringify(row.errors),
			createdAt: row.createdAt, updatedAt: row.updatedAt, finishedAt: row.finishedAt,
		};
		this.db.insert(job).values(values).onConflictDoUpdate({ target: job.slot, set: values }).run();
	}

	counts(): BulkCounts {
		const out: BulkCounts = { matched: 0, done: 0, failed: 0, skipped: {} };
		for (const { counter, n } of this.db.select().from(counts).all()) {
			if (counter.startsWith('skipped:')) out.skipped[counter.slice(8)] = n;
			else if (counter === 'matched' || counter === 'done' || counter === 'failed') out[counter] = n;
		}
		return out;
	}

	readItem(id: string): BulkItem | undefined {
		const row = this.db.select().from(items).where(eq(items.id, id)).get();
		if (!row) return undefined;
		if (row.state === 'acting') return { state: 'acting' };
		if (row.state === 'skipped') return { state: 'skipped', reason: row.reason ?? '' };
		return { state: row.state as 'done' | 'failed' };
	}

	actingItems(): string[] {
		return this.db.select({ id: items.id }).from(items).where(eq(items.state, 'acting')).limit(1000).all().map((r) => r.id);
	}

	settle(id: string, item: BulkItem, counters: string[]): void {
		this.storage.transactionSync(() => {
			const values = { id, state: item.state, reason: item.state === 'skipped' ? item.reason : null, version: null };
			this.db.insert(items).values(values).onConflictDoUpdate({ target: items.id, set: values }).run();
			for (const counter of counters) this.add(counter, 1);
		});
	}

	countPage(n: number, cursor: string | null): void {
		this.storage.transactionSync(() => {
			this.add('matched', n);
			this.db.update(job).set({ cursor }).where(eq(job.slot, SLOT)).run();
		});
	}

	private add(counter: string, n: number): void {
		this.db.insert(counts).values({ counter, n }).onConflictDoUpdate({ target: counts.counter, set: { n: sql`${counts.n} + ${n}` } }).run();
	}
}
