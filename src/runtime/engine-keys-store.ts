import { eq } from 'drizzle-orm';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import * as schema from '../db/schema';

const { engineKeys: t } = schema;

/**
 * The secret stored under `name`, generated on first use. Insert-if-absent and
 * the read run with no await between them, so concurrent first calls agree on
 * one secret and it never changes afterwards.
 */
export function storedSecret(db: DrizzleSqliteDODatabase, name: string, generate: () => string): string {
	db.insert(t).values({ name, secret: generate() }).onConflictDoNothing().run();
	return db.select({ secret: t.secret }).from(t).where(eq(t.name, name)).get()!.secret;
}
