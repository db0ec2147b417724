import { reportInvalidSetting } from './invalid-setting';
import { drizzle, type DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import baselineSql from '../../drizzle/baseline';
import migrations from '../../drizzle/migrations';
import { firstWriteTableNames, roleTableNames } from '../db/role-tables';
import type { RoleKind } from '../engine/object-names';
import { migrateInOneCall, parseBaseline, tableScript, tableSet, type Baseline } from './migrate-in-one-call';
import { FirstWriteTables } from './first-write-tables';
import { limitedStorage } from './sql-limits';
import { KV } from './compact-keys';

/** Drizzle without the relational `db.query` API, which nothing uses: building it for ~20 tables costs every new object ~30 µs. */
export type Database = DrizzleSqliteDODatabase;

let baseline: Baseline | undefined;
const theBaseline = () => (baseline ??= parseBaseline(baselineSql));

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

	/** The tables of this object's role (undefined: every table). */
	private readonly tables: ReadonlySet<string> | undefined;
	/** The role's tables created on their first write, not with the schema (db/role-tables.ts `FIRST_WRITE_TABLES`). */
	readonly firstWrite: FirstWriteTables;
	/** The role's tables without its first-write ones: what a new object's schema creates, and what every object migrates. */
	private readonly schemaTables: ReadonlySet<string> | undefined;
	/** What a new object creates: `schemaTables`, or every table of the role with `eagerTables` (see `eagerTablesOf`). */
	private readonly newObjectTables: ReadonlySet<string> | undefined;
	/** Whether a new object creates its first-write tables with its schema too. */
	private readonly eager: boolean;
	/** Whether a new instance takes the compact layout (runtime/storage-layout.ts; instance objects only). */
	private readonly compactNew: boolean;
	/** Whether this object's instance is kept in the compact layout: learnt from what it holds, or chosen by its first write. */
	private compactLayout = false;

	constructor(readonly storage: DurableObjectStorage, private readonly role?: RoleKind, options: { eagerTables?: boolean; compactInstances?: boolean } = {}) {
		this.tables = role === undefined ? undefined : roleTableNames(role);
		const firstWrite = role === undefined ? new Set<string>() : firstWriteTableNames(role);
		this.firstWrite = new FirstWriteTables(storage, firstWrite, (table) => tableScript(migrations, theBaseline(), table));
		this.eager = options.eagerTables === true;
		this.compactNew = role === 'instance' && options.compactInstances === true;
		this.schemaTables = role === undefined ? undefined : schemaTablesOf(role);
		this.newObjectTables = this.eager ? this.tables : this.schemaTables;
		// Every statement is checked against production's SQL limits, so what would fail deployed fails locally too.
		this.db = drizzle(limitedStorage(storage));
	}

	/** True once the schema exists (the object has been written at least once); for a compact instance, once its record does. */
	get hasSchema(): boolean {
		return this.ready;
	}

	/** Whether the instance of this object is kept in the compact layout (runtime/compact-instance-store.ts), not in tables. */
	get compact(): boolean {
		return this.compactLayout;
	}

	/**
	 * Brings an existing object's schema up to date (run inside
	 * `blockConcurrencyWhile` at start-up). A new object has no tables and stays so.
	 */
	async open(): Promise<boolean> {
		if (!this.readTables()) {
			// No tables: a compact instance, whatever the setting says now (one key read), or nothing yet.
			if (this.role !== 'instance' || this.storage.kv.get(KV.instance) === undefined) return false;
			this.compactLayout = true;
			this.ready = true;
			return true;
		}
		await this.ensureSchema();
		return true;
	}

	/**
	 * By hand: every object runs it once at start-up, a new one before anything else. One read tells both
	 * whether the object has a schema and which of its first-write tables exist.
	 */
	private readTables(): boolean {
		const tables = this.storage.sql.exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table'`).toArray().map((row) => row.name);
		this.migrated = tables.includes('__drizzle_migrations');
		if (this.migrated) this.firstWrite.known(tables);
		return this.migrated;
	}

	/** After `deleteAll`: the object is empty again, and its next write creates the schema anew. */
	forget(): void {
		this.ready = false;
		this.migrated = false;
		this.compactLayout = false;
		this.firstWrite.forget();
	}

	/** Creates or updates the schema; true when it was created just now, on an object without one (every table is empty). */
	async ensureSchema(): Promise<boolean> {
		if (this.ready) return false;
		if (this.migrated === undefined) this.readTables();
		const created = this.migrated === false;
		if (created && this.compactNew) {
			// A new compact instance writes no schema: its store's first write is its record.
			this.compactLayout = true;
			this.ready = true;
			return true;
		}
		// A new object creates its schema tables (every table with `eager`). An existing one applies a later
		// migration's statements about its schema tables and the first-write tables it has; those about one it
		// lacks are skipped, and the table, when it comes, is created at the newest migration's shape.
		const tables = created
			? this.newObjectTables
			: this.schemaTables && this.firstWrite.existing().size > 0
				? tableSet([...this.schemaTables, ...this.firstWrite.existing()])
				: this.schemaTables;
		migrateInOneCall(this.storage, migrations, { exists: this.migrated, baseline: theBaseline(), tables });
		if (created && this.eager) this.firstWrite.known(this.firstWrite.names);
		this.ready = true;
		this.migrated = true;
		return created;
	}
}

/**
 * A role's tables without its first-write ones, one set per role and isolate: the statements of a new
 * object's schema are filtered once per set (migrate-in-one-call.ts), not once per object.
 */
const schemaTables = new Map<RoleKind, ReadonlySet<string>>();
function schemaTablesOf(role: RoleKind): ReadonlySet<string> {
	let set = schemaTables.get(role);
	if (!set) {
		const firstWrite = firstWriteTableNames(role);
		schemaTables.set(role, (set = firstWrite.size === 0 ? roleTableNames(role) : tableSet([...roleTableNames(role)].filter((table) => !firstWrite.has(table)))));
	}
	return set;
}

/**
 * `SHARDFLOW_EAGER_TABLES=true`: a new instance creates every table with its schema, as shardflow 0.1.0
 * did, instead of creating six of them on their first write (db/role-tables.ts `FIRST_WRITE_TABLES`).
 * 0.1.0 expects every table: set it while a deploy may still be rolled back to 0.1.0, so that instances
 * created meanwhile keep working there. Objects created either way work with either setting.
 */
export function eagerTablesOf(env: { SHARDFLOW_EAGER_TABLES?: unknown }): boolean {
	const value = env.SHARDFLOW_EAGER_TABLES;
	if (value === undefined || value === '' || value === 'false' || value === false) return false;
	if (value === 'true' || value === true) return true;
	reportInvalidSetting(env, 'SHARDFLOW_EAGER_TABLES', value, `SHARDFLOW_EAGER_TABLES must be "true" or "false", got ${JSON.stringify(value)}; tables are created on their first write`);
	return false;
}
