import { runInDurableObject } from 'cloudflare:test';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { migrate } from 'drizzle-orm/durable-sqlite/migrator';
import { describe, expect, it } from 'vitest';
import baselineSql from '../../drizzle/baseline';
import migrations from '../../drizzle/migrations';
import { getTableName } from 'drizzle-orm';
import { migrateInOneCall, migrationScript, parseBaseline, statementsOf, type MigrationFiles } from '../../src/runtime/migrate-in-one-call';
import { indexOwners, statementTables } from '../../src/runtime/migration-tables';
import { ObjectStorage } from '../../src/runtime/object-storage';
import { ROLE_TABLES, roleTableNames } from '../../src/db/role-tables';
import * as schema from '../../src/db/schema';
import type { RoleKind } from '../../src/engine/object-names';
import { stub, uniqueId } from '../helpers';

const files = migrations as unknown as MigrationFiles;

/** The first `n` migrations only: an object created by an older deploy. */
const upTo = (n: number): MigrationFiles => ({ journal: { entries: files.journal.entries.slice(0, n) }, migrations: files.migrations });

function schemaOf(storage: DurableObjectStorage) {
	// The bookkeeping table's CREATE text differs in whitespace only between the two migrators.
	const objects = [...storage.sql.exec<{ type: string; name: string; sql: string | null }>(`SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name <> '__miniflare_do_name' ORDER BY name`)].map((o) => ({ ...o, sql: o.sql?.replace(/\s+/g, ' ').replace(/\( /g, '(').replace(/ \)/g, ')') ?? null }));
	const applied = [...storage.sql.exec<{ hash: string; created_at: number }>('SELECT hash, created_at FROM __drizzle_migrations ORDER BY created_at')].map((r) => ({ ...r, created_at: Number(r.created_at) }));
	return { objects, applied };
}

const ROLES = Object.keys(ROLE_TABLES) as RoleKind[];

/** The schema objects of `schemaOf` that belong to `tables` (a table, or an index or trigger on one); the bookkeeping table left out. */
function objectsOf(storage: DurableObjectStorage, tables: ReadonlySet<string>) {
	const on = new Map([...storage.sql.exec<{ name: string; tbl_name: string }>('SELECT name, tbl_name FROM sqlite_master')].map((o) => [o.name, o.tbl_name]));
	return schemaOf(storage).objects.filter((o) => tables.has(on.get(o.name)!));
}

const inObject = <T>(fn: (storage: DurableObjectStorage) => Promise<T> | T) => runInDurableObject(stub(uniqueId('migrate')), (_, state) => fn(state.storage));

/** What `read` sees of a new object created from the baseline with `tables` only (a role's). */
const newObjectWith = <T>(tables: ReadonlySet<string>, read: (storage: DurableObjectStorage) => T) =>
	inObject((storage) => {
		migrateInOneCall(storage, files, { baseline: parseBaseline(baselineSql), tables });
		return read(storage);
	});

describe('migrations in one call', () => {
	it('gives a new object the same tables, indexes and bookkeeping rows as drizzle-orm migrate()', async () => {
		const theirs = await inObject(async (storage) => {
			await migrate(drizzle(storage), migrations);
			return schemaOf(storage);
		});
		const ours = await inObject((storage) => {
			migrateInOneCall(storage, files);
			return schemaOf(storage);
		});
		expect(ours.objects.length).toBeGreaterThan(10);
		// The same schema but for the bookkeeping table's key: ours is the rowid (INTEGER PRIMARY KEY), drizzle's `SERIAL` a second b-tree.
		const withoutBookkeeping = (schema: typeof ours) => schema.objects.filter((o) => o.name !== '__drizzle_migrations');
		expect(withoutBookkeeping(ours)).toEqual(withoutBookkeeping(theirs));
		expect(ours.applied).toEqual(theirs.applied);
		expect(ours.applied.map((r) => r.created_at)).toEqual(files.journal.entries.map((e) => e.when));
	});

	it('keeps the bookkeeping in a rowid table: a new object writes one b-tree row per migration recorded, and drizzle-orm migrate() takes it over', async () => {
		await inObject(async (storage) => {
			migrateInOneCall(storage, files, { baseline: parseBaseline(baselineSql) });
			const bookkeeping = [...storage.sql.exec<{ name: string }>(`SELECT name FROM sqlite_master WHERE tbl_name = '__drizzle_migrations'`)].map((o) => o.name);
			expect(bookkeeping).toEqual(['__drizzle_migrations']); // no autoindex beside it
			const before = schemaOf(storage);
			await migrate(drizzle(storage), migrations); // nothing left to apply
			expect(schemaOf(storage)).toEqual(before);
		});
	});

	it('creates a new object from drizzle/baseline.sql with exactly the schema the migration chain leaves (stale: run npm run db:baseline)', async () => {
		const baseline = parseBaseline(baselineSql);
		expect(baseline.upTo, 'drizzle/baseline.sql stands for an older migration: run npm run db:baseline').toBe(files.journal.entries.at(-1)!.when);
		const chain = await inObject((storage) => {
			migrateInOneCall(storage, files);
			return schemaOf(storage);
		});
		const fromBaseline = await inObject(async (storage) => {
			migrateInOneCall(storage, files, { baseline });
			const created = schemaOf(storage);
			// Both migrators take the one bookkeeping row for the whole chain: nothing left to apply.
			migrateInOneCall(storage, files);
			await migrate(drizzle(storage), migrations);
			expect(schemaOf(storage)).toEqual(created);
			return created;
		});
		expect(migrationScript(files, null, baseline)).not.toContain('ALTER TABLE');
		expect(fromBaseline.objects).toEqual(chain.objects);
		expect(fromBaseline.applied, 'one bookkeeping row, the newest migration\'s').toEqual([{ hash: '', created_at: files.journal.entries.at(-1)!.when }]);
		// A baseline that stands for an older migration is not used: the chain is the truth.
		const stale = { ...baseline, upTo: files.journal.entries.at(-2)!.when, statements: ['CREATE TABLE wrong (x)'] };
		expect(migrationScript(files, null, stale)).toBe(migrationScript(files, null));
	});

	it('brings an object an older deploy migrated with drizzle-orm up to date, and drizzle-orm accepts the result', async () => {
		const theirs = await inObject(async (storage) => {
			await migrate(drizzle(storage), migrations);
			return schemaOf(storage);
		});
		for (let n = 1; n < files.journal.entries.length; n++) {
			const ours = await inObject(async (storage) => {
				await migrate(drizzle(storage), upTo(n) as never);
				migrateInOneCall(storage, files);
				await migrate(drizzle(storage), migrations); // a no-op: nothing left to apply
				return schemaOf(storage);
			});
			expect(ours, `migrated by drizzle-orm up to migration ${n - 1} first`).toEqual(theirs);
		}
	});

	it('sends nothing when the object is current, and rolls a failing script back whole', async () => {
		expect(migrationScript(files, files.journal.entries.at(-1)!.when)).toBeNull();
		await inObject((storage) => {
			migrateInOneCall(storage, files);
			const before = schemaOf(storage);
			migrateInOneCall(storage, files, { exists: true });
			expect(schemaOf(storage)).toEqual(before);
		});
		await inObject((storage) => {
			const broken: MigrationFiles = { journal: { entries: [...files.journal.entries, { idx: 99, when: Date.now() + 1e9, tag: '0099_broken' }] }, migrations: { ...files.migrations, m0099: 'CREATE TABLE ok (a);\n--> statement-breakpoint\nCREATE TABLE nope (' } };
			expect(() => migrateInOneCall(storage, broken)).toThrow();
			expect([...storage.sql.exec(`SELECT name FROM sqlite_master WHERE name IN ('ok', 'instance', '__drizzle_migrations')`)]).toEqual([]);
		});
	});

	it('applies a migration whose statement ends in a comment line, as drizzle-orm does', async () => {
		const withComment: MigrationFiles = {
			journal: { entries: [...files.journal.entries, { idx: 98, when: files.journal.entries.at(-1)!.when + 1, tag: '0098_commented' }] },
			migrations: { ...files.migrations, m0098: 'CREATE TABLE extra (a)\n-- no semicolon after this comment\n--> statement-breakpoint\nINSERT INTO extra VALUES (1) -- trailing\n' },
		};
		await inObject((storage) => {
			migrateInOneCall(storage, withComment);
			expect([...storage.sql.exec('SELECT a FROM extra')]).toEqual([{ a: 1 }]);
			expect(schemaOf(storage).applied.length).toBe(files.journal.entries.length + 1);
		});
	});

	it('gives an object of each role its own tables only, the same from the baseline as from the chain, with the newest migration in its bookkeeping', async () => {
		const baseline = parseBaseline(baselineSql);
		const everything = await inObject((storage) => {
			migrateInOneCall(storage, files, { baseline });
			return schemaOf(storage);
		});
		const union: string[] = [];
		for (const role of ROLES) {
			const tables = roleTableNames(role);
			const chain = await inObject((storage) => {
				migrateInOneCall(storage, files, { tables });
				return schemaOf(storage);
			});
			const fromBaseline = await newObjectWith(tables, schemaOf);
			expect(fromBaseline.objects, role).toEqual(chain.objects);
			expect(fromBaseline.applied.at(-1), role).toEqual(chain.applied.at(-1));
			expect(fromBaseline.applied, role).toEqual(everything.applied);
			const roleObjects = fromBaseline.objects.filter((o) => o.name !== '__drizzle_migrations');
			// Exactly what the whole schema holds for these tables: their columns, indexes and triggers, nothing else.
			const expected = await inObject((storage) => {
				migrateInOneCall(storage, files, { baseline });
				return objectsOf(storage, tables);
			});
			expect(roleObjects, role).toEqual(expected);
			union.push(...roleObjects.map((o) => o.name));
		}
		expect(union.sort()).toEqual(everything.objects.map((o) => o.name).filter((n) => n !== '__drizzle_migrations').sort());
	});

	it('puts every table of the schema in exactly one role', () => {
		const tables = Object.values(schema).filter((v) => typeof v === 'object' && v !== null && Symbol.for('drizzle:IsDrizzleTable') in v) as Parameters<typeof getTableName>[0][];
		const owned = ROLES.flatMap((role) => [...roleTableNames(role)]);
		expect(owned.sort()).toEqual(tables.map((t) => getTableName(t)).sort());
	});

	it('reads which tables every statement of the chain is about, and refuses a statement it cannot read', () => {
		const all = Object.values(files.migrations).flatMap(statementsOf);
		// The owner of a dropped index is read from the chain, as migrate-in-one-call.ts reads it; the triggers' are named.
		const owners = new Map([...indexOwners(all), ['steps_record_insert', 'steps'], ['steps_record_update', 'steps']]);
		for (const statement of all) expect(() => statementTables(statement, (n) => owners.get(n))).not.toThrow();
		expect(statementTables('ALTER TABLE `__new_steps` RENAME TO `steps`', () => undefined)).toEqual(['steps', 'steps']);
		expect(statementTables('-- why\nDROP INDEX IF EXISTS `steps_seq`', (n) => (n === 'steps_seq' ? 'steps' : undefined))).toEqual(['steps']);
		expect(statementTables('PRAGMA foreign_keys=OFF', () => undefined)).toBe('every');
		expect(() => statementTables('VACUUM', () => undefined)).toThrow(/cannot read/);
		expect(() => statementTables('DROP INDEX `nowhere`', () => undefined)).toThrow(/no migration creates/);
	});

	it("brings a role's object an older deploy created (its tables only) up to date with its part of every later migration", async () => {
		for (const role of ['instance', 'index'] as const) {
			const tables = roleTableNames(role);
			const current = await newObjectWith(tables, schemaOf);
			for (let n = 1; n < files.journal.entries.length; n++) {
				const ours = await inObject((storage) => {
					migrateInOneCall(storage, upTo(n), { tables });
					migrateInOneCall(storage, files, { tables });
					return schemaOf(storage);
				});
				expect(ours.objects, `${role}, created at migration ${n - 1}`).toEqual(current.objects);
				expect(ours.applied.at(-1), `${role}, created at migration ${n - 1}`).toEqual(current.applied.at(-1));
			}
		}
	});

	it("keeps an object an older deploy gave every role's tables working: on start-up it receives its own role's later migrations, and a first-write table it lacks comes at the newest shape on its first write", async () => {
		// With SHARDFLOW_EAGER_TABLES too: it changes what a new object creates, not what an existing one migrates.
		for (const [role, eagerTables] of [['instance', false], ['instance', true], ['index', false]] as const) {
			const tables = roleTableNames(role);
			const current = await newObjectWith(tables, (storage) => objectsOf(storage, tables));
			for (const n of [1, Math.floor(files.journal.entries.length / 2), files.journal.entries.length - 1]) {
				const ours = await inObject(async (storage) => {
					await migrate(drizzle(storage), upTo(n) as never);
					const restarted = new ObjectStorage(storage, role, { eagerTables });
					expect(await restarted.open()).toBe(true);
					// The later migrations created none of the first-write tables the object lacked; their first writes do.
					const lacking = [...restarted.firstWrite.names].filter((table) => !restarted.firstWrite.has(table));
					const created = objectsOf(storage, new Set(lacking));
					for (const table of lacking) restarted.firstWrite.ensure(table);
					return { lacking, created, objects: objectsOf(storage, tables), applied: schemaOf(storage).applied.length };
				});
				expect(ours.created, `${role} after migration ${n - 1}: a later migration created a first-write table`).toEqual([]);
				if (role === 'instance' && n === 1) expect(ours.lacking.length, 'the first migration had none of the later first-write tables').toBeGreaterThan(0);
				expect(ours.objects, `${role}, migrated by drizzle-orm up to migration ${n - 1}`).toEqual(current);
				expect(ours.applied).toBe(files.journal.entries.length);
			}
		}
	});

	it("keeps every entry of an index shard an older deploy wrote when its table is rebuilt without a rowid (drizzle/0020), and the table is keyed by the id alone", async () => {
		const tables = roleTableNames('index');
		const before = files.journal.entries.findIndex((e) => e.tag === '0020_index-entries-without-rowid');
		expect(before).toBeGreaterThan(0);
		const columns = 'id, type, status, created_at, updated_at, version, code_version, parent_id, attributes';
		const { entries, kept, rowid } = await inObject((storage) => {
			migrateInOneCall(storage, upTo(before), { tables });
			const insert = `INSERT INTO index_entries (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`;
			storage.sql.exec(insert, 'a', 'payment', 'completed', 1, 5, 3, 'v1', null, '{"k":"x"}');
			storage.sql.exec(insert, 'b', 'payment', '__deleted', 2, 6, 9, null, 'a', null);
			storage.sql.exec(insert, 'c', 'payment', 'running', 3, 7, 1, null, 'a', null);
			const read = () => [...storage.sql.exec(`SELECT ${columns} FROM index_entries ORDER BY id`)];
			const entries = read();
			migrateInOneCall(storage, files, { tables });
			const rowid = (() => {
				try {
					storage.sql.exec('SELECT rowid FROM index_entries').toArray();
					return 'has a rowid';
				} catch {
					return 'none';
				}
			})();
			return { entries, kept: read(), rowid };
		});
		expect(entries).toHaveLength(3);
		expect(kept).toEqual(entries);
		expect(rowid).toBe('none');
	});

	it('splits a generated file into its statements without breakpoints, trailing semicolons or empty parts', () => {
		expect(statementsOf('CREATE TABLE a (x);\n--> statement-breakpoint\n-- only a comment\n--> statement-breakpoint\nCREATE INDEX i ON a (x);\n')).toEqual(['CREATE TABLE a (x)', 'CREATE INDEX i ON a (x)']);
	});
});
