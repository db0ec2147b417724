/**
 * Which tables a statement of a drizzle-kit migration (or of drizzle/baseline.sql) is
 * about, so that an object applies only the statements of its role's tables (see
 * db/role-tables.ts). The shapes are the ones drizzle-kit writes for SQLite, and the
 * triggers of the hand-written migrations:
 *
 * - `CREATE TABLE t`, `ALTER TABLE t ...`, `DROP TABLE t`, `INSERT INTO t`, `UPDATE t`,
 *   `DELETE FROM t`: table `t` (`__new_t`, drizzle-kit's copy while it rebuilds a table, is `t`);
 *   `ALTER TABLE a RENAME TO b`: both;
 * - `CREATE [UNIQUE] INDEX i ON t`, `CREATE TRIGGER n ... ON t`: table `t`;
 * - `DROP INDEX i`, `DROP TRIGGER n`: the table the index or trigger was created on;
 * - `PRAGMA ...`: every object (`'every'`).
 *
 * Anything else is an error, not a guess: test/runtime/migrate-in-one-call.test.ts reads
 * every statement of the chain with it, so a migration of a new shape fails there first.
 */
export type StatementTables = readonly string[] | 'every';

const NAME = '[`"\\[]?([A-Za-z_][A-Za-z0-9_]*)[`"\\]]?';
const IF_NOT_EXISTS = '(?:IF\\s+NOT\\s+EXISTS\\s+)?';
const IF_EXISTS = '(?:IF\\s+EXISTS\\s+)?';

const SHAPES: { pattern: RegExp; tables: (match: RegExpExecArray) => string[] }[] = [
	{ pattern: new RegExp(`^CREATE\\s+(?:TEMP\\s+|TEMPORARY\\s+)?TABLE\\s+${IF_NOT_EXISTS}${NAME}`, 'i'), tables: (m) => [m[1]!] },
	{ pattern: new RegExp(`^CREATE\\s+(?:UNIQUE\\s+)?INDEX\\s+${IF_NOT_EXISTS}${NAME}\\s+ON\\s+${NAME}`, 'i'), tables: (m) => [m[2]!] },
	{ pattern: new RegExp(`^CREATE\\s+(?:TEMP\\s+|TEMPORARY\\s+)?TRIGGER\\s+${IF_NOT_EXISTS}${NAME}[\\s\\S]*?\\sON\\s+${NAME}`, 'i'), tables: (m) => [m[2]!] },
	{ pattern: new RegExp(`^ALTER\\s+TABLE\\s+${NAME}\\s+RENAME\\s+TO\\s+${NAME}`, 'i'), tables: (m) => [m[1]!, m[2]!] },
	{ pattern: new RegExp(`^ALTER\\s+TABLE\\s+${NAME}`, 'i'), tables: (m) => [m[1]!] },
	{ pattern: new RegExp(`^DROP\\s+TABLE\\s+${IF_EXISTS}${NAME}`, 'i'), tables: (m) => [m[1]!] },
	{ pattern: new RegExp(`^(?:INSERT|REPLACE)\\s+(?:OR\\s+\\w+\\s+)?INTO\\s+${NAME}`, 'i'), tables: (m) => [m[1]!] },
	{ pattern: new RegExp(`^UPDATE\\s+(?:OR\\s+\\w+\\s+)?${NAME}`, 'i'), tables: (m) => [m[1]!] },
	{ pattern: new RegExp(`^DELETE\\s+FROM\\s+${NAME}`, 'i'), tables: (m) => [m[1]!] },
];
const DROP_INDEX_OR_TRIGGER = new RegExp(`^DROP\\s+(?:INDEX|TRIGGER)\\s+${IF_EXISTS}${NAME}`, 'i');
const CREATE_INDEX_OR_TRIGGER = new RegExp(`^CREATE\\s+(?:UNIQUE\\s+|TEMP\\s+|TEMPORARY\\s+)?(?:INDEX|TRIGGER)\\s+${IF_NOT_EXISTS}${NAME}`, 'i');

/** A statement without its leading `-- comment` lines and whitespace. */
function bare(statement: string): string {
	return statement.replace(/^(?:\s*--[^\n]*(?:\n|$))*/, '').trim();
}

const table = (name: string) => name.replace(/^__new_/, '');

/**
 * The tables `statement` is about. `ownerOf` names the table an index or a trigger was
 * created on (for a `DROP INDEX` / `DROP TRIGGER`); see `indexOwners`.
 */
export function statementTables(statement: string, ownerOf: (indexOrTrigger: string) => string | undefined): StatementTables {
	const text = bare(statement);
	if (/^PRAGMA\b/i.test(text)) return 'every';
	const dropped = DROP_INDEX_OR_TRIGGER.exec(text);
	if (dropped) {
		const owner = ownerOf(dropped[1]!);
		if (owner === undefined) throw new Error(`a migration drops "${dropped[1]}", which no migration creates: ${text.slice(0, 120)}`);
		return [owner];
	}
	for (const { pattern, tables } of SHAPES) {
		const match = pattern.exec(text);
		if (match) return tables(match).map(table);
	}
	throw new Error(`a migration statement of a shape runtime/migration-tables.ts cannot read (which table is it about?): ${text.slice(0, 120)}`);
}

/** Index and trigger name -> the table it was created on, from every CREATE INDEX / CREATE TRIGGER among `statements`. */
export function indexOwners(statements: Iterable<string>): Map<string, string> {
	const owners = new Map<string, string>();
	for (const statement of statements) {
		const text = bare(statement);
		const created = CREATE_INDEX_OR_TRIGGER.exec(text);
		if (!created) continue;
		const tables = statementTables(text, () => undefined);
		if (tables !== 'every') owners.set(created[1]!, tables[0]!);
	}
	return owners;
}

/** Whether an object whose role has `tables` applies `statement`. */
export function appliesTo(tables: ReadonlySet<string>, statement: string, ownerOf: (indexOrTrigger: string) => string | undefined): boolean {
	const about = statementTables(statement, ownerOf);
	return about === 'every' || about.some((name) => tables.has(name));
}
