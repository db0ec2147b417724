import { asc, eq, isNotNull, sql, and } from 'drizzle-orm';
import * as schema from '../db/schema';
import type { LimiterRow, LimiterStore } from '../engine/limiter/limiter';
import type { Database } from './object-storage';

const { limiterSlots: t } = schema;

/** A limiter's holders and waiters (`limiter_slots`) through Drizzle. */
export class DrizzleLimiterStore implements LimiterStore {
	constructor(
		private readonly db: Database,
		private readonly storage: DurableObjectStorage,
	) {}

	get(id: string): LimiterRow | undefined {
		return this.db.select().from(t).where(eq(t.id, id)).get() as LimiterRow | undefined;
	}

	put(row: LimiterRow): void {
		this.db.insert(t).values(row).onConflictDoUpdate({ target: t.id, set: row }).run();
	}

	remove(id: string): void {
		this.db.delete(t).where(eq(t.id, id)).run();
	}

	holding(): number {
		return this.db.select({ n: sql<number>`count(*)` }).from(t).where(eq(t.state, 'holding')).get()?.n ?? 0;
	}

	waiters(limit: number): LimiterRow[] {
		return this.db.select().from(t).where(eq(t.state, 'waiting')).orderBy(asc(t.seq)).limit(limit).all() as LimiterRow[];
	}

	unnotified(): LimiterRow[] {
		return this.db.select().from(t).where(and(eq(t.state, 'holding'), isNotNull(t.notifyAt))).orderBy(asc(t.notifyAt)).all() as LimiterRow[];
	}

	nextSeq(): number {
		return (this.db.select({ n: sql<number | null>`max(${t.seq})` }).from(t).get()?.n ?? 0) + 1;
	}

	all(): LimiterRow[] {
		return this.db.select().from(t).all() as LimiterRow[];
	}

	transaction<T>(fn: () => T): T {
		return this.storage.transactionSync(fn);
	}
}
