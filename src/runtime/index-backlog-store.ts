import { asc, sql } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import * as schema from '../db/schema';
import { BACKLOG_SAMPLE, type BacklogSummary } from '../engine/index/index-backlog';

const { indexBacklog: t } = schema;

/**
 * The SQL side of a type's delivery backlog: one row per instance whose index
 * delivery failed and has not succeeded since. Each instance writes it at most
 * twice per episode of failures (register, deregister), never per retry, so it
 * grows with the number of instances behind, not with the time they spend behind.
 */
export class IndexBacklogStore {
	constructor(private readonly db: DrizzleSqliteDODatabase) {}

	/** Registers an instance; a second registration keeps the earlier `since`. */
	add(id: string, since: number): void {
		this.db.insert(t).values({ id, since }).onConflictDoNothing().run();
	}

	remove(id: string): void {
		this.db.delete(t).where(sql`${t.id} = ${id}`).run();
	}

	summary(): BacklogSummary {
		const total = this.db.select({ n: sql<number>`count(*)` }).from(t).get();
		const oldest = this.db.select({ id: t.id, since: t.since }).from(t).orderBy(asc(t.since), asc(t.id)).limit(BACKLOG_SAMPLE).all();
		return { pending: total?.n ?? 0, oldestSince: oldest[0]?.since ?? null, oldest };
	}
}
