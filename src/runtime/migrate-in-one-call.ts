import { appliesTo, indexOwners } from './migration-tables';

/**
 * drizzle-kit's migrations applied the way drizzle-orm's durable-sqlite
 * `migrate()` applies them (same `__drizzle_migrations` table and rows, one
 * transaction), with one difference: all pending statements go to SQLite in
 * a single `sql.exec` call instead of one call per statement.
 *
 * Every workflow instance is its own object, so every create runs its role's
 * part of the schema (about 20 statements). Each `exec` call is a unit of work for the
 * runtime: under `wrangler dev` the local observability collector records a
 * span per call on the isolate's own thread (~0.09 ms each, measured; see
 * docs/decisions.md "Statements are the unit of cost"). One call for the
 * schema instead of ~65 is most of a short instance's storage calls.
 *
 * With `tables` (an object's role's tables, db/role-tables.ts), only the statements
 * about those tables are applied (runtime/migration-tables.ts), from the baseline and
 * from every later migration, while the bookkeeping rows stay those of the whole chain:
 * an object keeps receiving its role's part of each later migration. drizzle-orm's
 * `migrate()` can take over an object migrated without `tables` (the bookkeeping rows are
 * the same: `hash` '' and `created_at` = the journal's `when`), not a role's object.
 * An object created from the baseline gets one bookkeeping row, the newest migration's:
 * both migrators read only the newest `created_at`, so it stands for the whole chain.
 */
export interface MigrationFiles {
	journal: { entries: { idx: number; when: number; tag: string }[] };
	migrations: Record<string, string>;
}

/**
 * drizzle/baseline.sql (scripts/schema-baseline.mjs): what the whole chain leaves behind, as
 * CREATE statements only. A new object runs it instead of the chain, whose ALTERs make SQLite
 * re-parse the schema each time; `upTo` is the newest migration it stands for.
 */
export interface Baseline {
	upTo: number;
	statements: string[];
}

const TABLE = '__drizzle_migrations';

/** The statements of `tables` among `statements`; cached per list and table set (both are module-level, built once). */
const filtered = new WeakMap<readonly string[], WeakMap<ReadonlySet<string>, string[]>>();
/** Index and trigger names -> their tables, over the whole chain and baseline, built the first time a DROP INDEX/TRIGGER needs it. */
const owners = new WeakMap<MigrationFiles, Map<string, string>>();

function ofTables(files: MigrationFiles, statements: readonly string[], tables: ReadonlySet<string> | undefined, baseline?: Baseline): readonly string[] {
	if (tables === undefined) return statements;
	let byTables = filtered.get(statements);
	if (!byTables) filtered.set(statements, (byTables = new WeakMap()));
	let kept = byTables.get(tables);
	if (!kept) {
		const ownerOf = (name: string) => {
			let map = owners.get(files);
			if (!map) owners.set(files, (map = indexOwners([...Object.values(files.migrations).flatMap(statementsOf), ...(baseline?.statements ?? [])])));
			return map.get(name);
		};
		byTables.set(tables, (kept = statements.filter((statement) => appliesTo(tables, statement, ownerOf))));
	}
	return kept;
}

/** The statements of each migration file, split once. */
const split = new Map<string, string[]>();
function statementsOfFile(file: string): string[] {
	let statements = split.get(file);
	if (!statements) split.set(file, (statements = statementsOf(file)));
	return statements;
}

/** Reads drizzle/baseline.sql; its `-- up-to: <when>` line names the newest migration it stands for. */
export function parseBaseline(text: string): Baseline {
	const upTo = /^-- up-to: (\d+)$/m.exec(text)?.[1];
	if (upTo === undefined) throw new Error('drizzle/baseline.sql has no "-- up-to:" line; run npm run db:baseline');
	return { upTo: Number(upTo), statements: statementsOf(text) };
}

/** The bookkeeping row of the migration `when` (drizzle-orm's: no hash). */
function bookkeepingRow(when: number): string {
	return `INSERT INTO "${TABLE}" ("hash", "created_at") VALUES ('', ${when})`;
}

/** The statements of one generated migration file, without drizzle-kit's breakpoints and empty parts. */
export function statementsOf(file: string): string[] {
	return file
		.split('--> statement-breakpoint')
		.map((part) => part.trim().replace(/;\s*$/, ''))
		.filter((part) => part.replace(/--[^\n]*/g, '').trim() !== '');
}

/**
 * The one script that brings a database migrated up to `appliedUpTo` (null: never) to the
 * newest migration, or null when it is current. A new database gets the baseline when it
 * stands for the newest migration (a stale one is ignored: the chain is the truth).
 */
export function migrationScript(files: MigrationFiles, appliedUpTo: number | null, baseline?: Baseline, tables?: ReadonlySet<string>): string | null {
	const parts: string[] = [];
	const fromBaseline = appliedUpTo === null && baseline !== undefined && baseline.upTo === files.journal.entries.at(-1)?.when;
	if (fromBaseline) parts.push(...ofTables(files, baseline.statements, tables, baseline));
	for (const entry of files.journal.entries) {
		if (appliedUpTo !== null && entry.when <= appliedUpTo) continue;
		const file = migrationFile(files, entry);
		if (!Number.isSafeInteger(entry.when)) throw new Error(`migration ${entry.tag} has no valid "when" in the journal`);
		if (fromBaseline) continue;
		parts.push(...ofTables(files, statementsOfFile(file), tables, baseline));
		parts.push(bookkeepingRow(entry.when));
	}
	// The baseline stands for the whole chain: one row, the newest migration's, is all a migrator reads
	// (the newest `created_at`, here and in drizzle-orm's), and a new object writes one row instead of one per migration.
	if (fromBaseline) parts.push(bookkeepingRow(baseline.upTo));
	if (parts.length === 0) return null;
	// drizzle-orm's migrator declares `id SERIAL PRIMARY KEY`, which SQLite keeps as a second b-tree (an index beside the
	// rowid): a new object's table uses the rowid itself (`INTEGER PRIMARY KEY`), a page and two rows written fewer.
	// Both migrators only insert (hash, created_at) and read the newest created_at, so either takes over the other's table.
	return joinScript([`CREATE TABLE IF NOT EXISTS "${TABLE}" (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)`, ...parts]);
}

/** The text of a journal entry's migration file. */
function migrationFile(files: MigrationFiles, entry: MigrationFiles['journal']['entries'][number]): string {
	const file = files.migrations[`m${String(entry.idx).padStart(4, '0')}`];
	if (file === undefined) throw new Error(`missing migration ${entry.tag}`);
	return file;
}

/**
 * One set object per set of table names: `ofTables` caches its filtered statements per set object, so
 * callers that build the same set again (one table's, an object's schema and first-write tables) must
 * get the same object back.
 */
const tableSets = new Map<string, ReadonlySet<string>>();
export function tableSet(names: Iterable<string>): ReadonlySet<string> {
	const sorted = [...new Set(names)].sort();
	const key = sorted.join(',');
	let set = tableSets.get(key);
	if (!set) tableSets.set(key, (set = new Set(sorted)));
	return set;
}

/**
 * The script that creates one table of the schema, as the newest migration shapes it, with its indexes and
 * triggers: its statements in drizzle/baseline.sql, or in the whole chain when the baseline is stale. For a
 * table an object creates on its first write (db/role-tables.ts `FIRST_WRITE_TABLES`): the object's
 * bookkeeping already records the newest migration, whose statements about the table it skipped while the
 * table did not exist (`migrationScript` with its existing tables only).
 */
export function tableScript(files: MigrationFiles, baseline: Baseline | undefined, table: string): string {
	const tables = tableSet([table]);
	const fromBaseline = baseline !== undefined && baseline.upTo === files.journal.entries.at(-1)?.when;
	const statements = fromBaseline
		? ofTables(files, baseline.statements, tables, baseline)
		: files.journal.entries.flatMap((entry) => ofTables(files, statementsOfFile(migrationFile(files, entry)), tables, baseline));
	if (statements.length === 0) throw new Error(`no migration creates the table "${table}"`);
	return joinScript(statements);
}

/** Statements as one script; a part that ends in a `-- comment` gets its separator on the next line (the comment would swallow it). */
function joinScript(parts: readonly string[]): string {
	return parts.map((part) => (/--[^\n]*$/.test(part) ? `${part}\n` : part)).join(';\n');
}

/**
 * Applies what is pending in one transaction; `exists` says whether the bookkeeping table is known to exist (skips one
 * lookup), `tables` limits the schema to one role's tables (see `migrationScript`).
 */
export function migrateInOneCall(storage: DurableObjectStorage, files: MigrationFiles, options: { exists?: boolean; baseline?: Baseline; tables?: ReadonlySet<string> } = {}): void {
	const { exists, baseline, tables } = options;
	const sql = storage.sql;
	storage.transactionSync(() => {
		const known = exists ?? [...sql.exec(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '${TABLE}'`)].length > 0;
		const last = known ? [...sql.exec<{ at: number | null }>(`SELECT max(created_at) AS at FROM "${TABLE}"`)][0]?.at ?? null : null;
		const script = migrationScript(files, last === null ? null : Number(last), baseline, tables);
		if (script !== null) sql.exec(script);
	});
}
