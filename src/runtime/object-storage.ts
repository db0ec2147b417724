import { drizzle, type DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import baselineSql from '../../drizzle/baseline';
import migrations from '../../drizzle/migrations';
import { roleTableNames } from '../db/role-tables';
import type { RoleKind } from '../engine/object-names';
import { migrateInOneCall, parseBaseline, type Baseline } from './migrate-in-one-call';
import { limitedStorage } from './sql-limits';

/** Drizzle without the relational `db.query` API, which nothing uses: building it for ~20 tables costs every new object ~30 µs. */
export type Database = DrizzleSqliteDODatabase;

let baseline: Baseline | undefined;

/**
 * One object's SQLite through Drizzle, with the migration gate every role
 * shares. Objects that were only looked up stay empty: the schema is created
 * on the first write (`ensureSchema`), never on a read. An object of a role
 * creates that role's tables only (db/role-tables.ts); without a role, every table.
 */
export class ObjectStorage {
	readonly db: Database;
	private ready = false;
	/** Whether the migrations' bookkeeping table exists, once `open` or a migration has learnt it. */
	private migrated: boolean | undefined;

	/** The tables this object creates and migrates (undefined: every table). */
	private readonly tables: ReadonlySet<string> | undefined;

	constructor(readonly storage: DurableObjectStorage, role?: RoleKind) {
		this.tables = role === undefined ? undefined : roleTableNames(role);
		// Every statement is checked against production's SQL limits, so what would fail deployed fails locally too.
		this.db = drizzle(limitedStorage(storage));
	}

	/** True once the schema exists (the object has been written at least once). */
	get hasSchema(): boolean {
		return this.ready;
	}

	/**
	 * Brings an existing object's schema up to date (run inside
	 * `blockConcurrencyWhile` at start-up). A new object has no tables and stays so.
	 */
	async open(): Promise<boolean> {
		// By hand: every object runs it once at start-up, a new one before anything else.
		this.migrated = this.storage.sql.exec(`SELECT 1 FROM sqlite_master WHERE name = '__drizzle_migrations'`).toArray().length > 0;
		if (!this.migrated) return false;
		await this.ensureSchema();
		return true;
	}

	/** After `deleteAll`: the object is empty again, and its next write creates the schema anew. */
	forget(): void {
		this.ready = false;
		this.migrated = false;
	}

	/** Creates or updates the schema; true when it was created just now, on an object without one (every table is empty). */
	async ensureSchema(): Promise<boolean> {
		if (this.ready) return false;
		baseline ??= parseBaseline(baselineSql);
		const created = this.migrated === false;
		migrateInOneCall(this.storage, migrations, { exists: this.migrated, baseline, tables: this.tables });
		this.ready = true;
		this.migrated = true;
		return created;
	}
}
