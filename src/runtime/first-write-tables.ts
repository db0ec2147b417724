/**
 * The tables of an object's role that it creates on their first write rather than with its
 * schema (db/role-tables.ts `FIRST_WRITE_TABLES`): which of them this object has, and
 * creating one. A store reads such a table only when `has` says it exists (a table that
 * does not exist holds nothing) and calls `ensure` before writing it.
 */
export interface TablePresence {
	/** Whether `table` exists in this object (always true for a table of the schema proper). */
	has(table: string): boolean;
	/** Creates `table` unless it exists; inside the caller's transaction, if any. */
	ensure(table: string): void;
	/** After a failed transaction, which may have rolled back a table `ensure` created: reads what exists again. */
	resync(): void;
}

/** Every table exists: a store over a schema created whole (tests, and objects of an older deploy). */
export const EVERY_TABLE: TablePresence = { has: () => true, ensure: () => {}, resync: () => {} };

/**
 * The first-write tables of one object. What exists is learnt from `sqlite_master` once, when
 * the object opens (`known`), and kept as `ensure` creates tables; `forget` after `deleteAll`.
 */
export class FirstWriteTables implements TablePresence {
	private readonly present = new Set<string>();

	constructor(
		private readonly storage: DurableObjectStorage,
		/** The role's first-write tables (empty: none, every table is created with the schema). */
		readonly names: ReadonlySet<string>,
		/** The script that creates one of them at the newest migration (migrate-in-one-call.ts `tableScript`). */
		private readonly script: (table: string) => string,
	) {}

	has(table: string): boolean {
		return !this.names.has(table) || this.present.has(table);
	}

	ensure(table: string): void {
		if (this.has(table)) return;
		this.storage.sql.exec(this.script(table));
		this.present.add(table);
	}

	/** The tables of the object (every table name in `sqlite_master`): its first-write ones among them exist. */
	known(tables: Iterable<string>): void {
		this.present.clear();
		for (const table of tables) if (this.names.has(table)) this.present.add(table);
	}

	/** Which of them exist, read again (after a transaction that may have rolled one back). */
	resync(): void {
		if (this.names.size === 0) return;
		this.known(this.storage.sql.exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table'`).toArray().map((row) => row.name));
	}

	/** The first-write tables that exist. */
	existing(): ReadonlySet<string> {
		return this.present;
	}

	/** After `deleteAll`: none exists. */
	forget(): void {
		this.present.clear();
	}
}
