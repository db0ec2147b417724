import { runInDurableObject } from 'cloudflare:test';
import { describe, expect, it, vi } from 'vitest';
import baselineSql from '../../drizzle/baseline';
import migrations from '../../drizzle/migrations';
import { firstWriteTableNames, roleTableNames } from '../../src/db/role-tables';
import { DrizzleSlotStore } from '../../src/runtime/concurrency-slot-store';
import { DrizzleInstanceStore } from '../../src/runtime/drizzle-instance-store';
import { migrateInOneCall, migrationScript, parseBaseline, statementsOf, tableScript, type MigrationFiles } from '../../src/runtime/migrate-in-one-call';
import { statementTables } from '../../src/runtime/migration-tables';
import { eagerTablesOf, ObjectStorage } from '../../src/runtime/object-storage';
import { instances } from '../../src/client/instance-client';
import { ErrorCode } from '../../src/engine/support/errors';
import { PaymentWorkflow } from '../../examples/demo/workflows/payment-workflow';
import { settle, stub, testEnv, uniqueId } from '../helpers';

const files = migrations as unknown as MigrationFiles;
const FIRST_WRITE = firstWriteTableNames('instance');

/** Every table, index and trigger of the object, with its SQL (whitespace normalised). */
function schemaObjects(storage: DurableObjectStorage, tables?: ReadonlySet<string>) {
	return [...storage.sql.exec<{ type: string; name: string; tbl_name: string; sql: string | null }>(`SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name`)]
		.filter((o) => tables === undefined || tables.has(o.tbl_name))
		.map((o) => ({ type: o.type, name: o.name, sql: o.sql?.replace(/\s+/g, ' ') ?? null }));
}

const tableNames = (storage: DurableObjectStorage) => new Set(schemaObjects(storage).filter((o) => o.type === 'table').map((o) => o.name));

/** A new instance object's storage and store, as the instance role builds them. */
async function newInstanceObject(state: DurableObjectState) {
	const storage = new ObjectStorage(state.storage, 'instance');
	await storage.open();
	await storage.ensureSchema();
	return { storage, store: new DrizzleInstanceStore(storage.db, state.storage, { empty: true, tables: storage.firstWrite }), slots: new DrizzleSlotStore(storage.db, storage.firstWrite) };
}

/**
 * The statements that name a first-write table (as a whole name, quoted or bare, wherever it stands) and how many
 * such mentions there are; `unsafe` are those not about that table alone, which an object without the table
 * would run and fail on (docs/operations.md: a migration statement that mentions one must be about it alone).
 */
function firstWriteMentions(statements: readonly string[]): { mentions: number; unsafe: string[] } {
	let mentions = 0;
	const unsafe: string[] = [];
	for (const statement of statements) {
		const text = statement.replace(/--[^\n]*/g, '');
		for (const table of FIRST_WRITE) {
			if (!new RegExp(`(?<![\\w$])${table}(?![\\w$])`).test(text)) continue;
			mentions++;
			let about: unknown;
			try {
				about = statementTables(statement, () => table);
			} catch {
				about = undefined;
			}
			if (!Array.isArray(about) || about.length !== 1 || about[0] !== table) unsafe.push(statement);
		}
	}
	return { mentions, unsafe };
}

describe('tables created on their first write', () => {
	it("gives a new instance's object none of them: reads find nothing and create nothing", () =>
		runInDurableObject(stub(uniqueId('fw')), async (_, state) => {
			const { store, slots } = await newInstanceObject(state);
			const present = tableNames(state.storage);
			expect([...FIRST_WRITE].sort()).toEqual(['concurrency_slot', 'deletion', 'dropped_events', 'event_keys', 'events', 'inline_children', 'wakeups']);
			for (const table of FIRST_WRITE) expect(present.has(table), table).toBe(false);
			expect(present.has('instance') && present.has('steps') && present.has('history')).toBe(true);
			expect(store.oldestEvent('go')).toBeUndefined();
			expect(store.eventBuffer()).toEqual({ count: 0, bytes: 0 });
			expect(store.eventCounts()).toEqual({ buffered: 0, dropped: 0 });
			expect(store.dropEvents()).toBe(0);
			expect(store.readEventKey('k')).toBeUndefined();
			expect(store.readDeletion()).toBeUndefined();
			expect(slots.readSlot()).toBeUndefined();
			expect(store.earliestWakeup()).toBeUndefined();
			expect(store.takeWakeup('w')).toBe(false);
			slots.writeSlot(undefined);
			store.deleteAllEvents();
			store.deleteWakeup('w');
			store.deleteWakeupsDue(Date.now(), new Set());
			store.deleteAllWakeups();
			expect(store.readInlineRows('c')).toEqual([]);
			expect(store.inlinePublishes()).toEqual([]);
			store.deleteInline('c');
			store.deleteUnpublishedInline();
			expect(tableNames(state.storage)).toEqual(present);
		}));

	it('creates each on its first write with exactly the shape, indexes included, that a schema created whole has', async () => {
		const whole = await runInDurableObject(stub(uniqueId('fw')), (_, state) => {
			migrateInOneCall(state.storage, files, { baseline: parseBaseline(baselineSql), tables: roleTableNames('instance') });
			return schemaObjects(state.storage, FIRST_WRITE);
		});
		const lazily = await runInDurableObject(stub(uniqueId('fw')), async (_, state) => {
			const { store, slots } = await newInstanceObject(state);
			store.appendEvent('go', '1', 1);
			store.appendEvent('go', '2', 2);
			expect(store.oldestEvent('go')?.payload).toBe('1');
			expect(store.dropEvents()).toBe(2);
			expect(store.eventCounts()).toEqual({ buffered: 0, dropped: 2 });
			store.writeEventKey({ key: 'k', name: 'go', digest: 'd' }, 3, 10);
			expect(store.readEventKey('k')).toEqual({ key: 'k', name: 'go', digest: 'd' });
			store.writeDeletion({ requestedAt: 4, reason: 'retention', archive: false, archivedKey: null, attempts: 0, nextAttemptAt: null });
			expect(store.readDeletion()?.reason).toBe('retention');
			slots.writeSlot({ key: 'a', state: 'waiting', attempts: 0, nextAttemptAt: null });
			expect(slots.readSlot()?.key).toBe('a');
			store.setWakeup('w', 5);
			expect(store.earliestWakeup()).toBe(5);
			expect(store.takeWakeup('w')).toBe(true);
			store.writeInlineRow('c', { key: 's', body: '{}', result: '1', publishAt: null });
			store.writeInlineRow('c', { key: '', body: '{"h":1}', result: null, publishAt: 6 });
			store.writeInlineRow('d', { key: '', body: '{}', result: null, publishAt: null });
			expect(store.readInlineRows('c')).toEqual([{ key: '', body: '{"h":1}', result: null, publishAt: 6 }, { key: 's', body: '{}', result: '1', publishAt: null }]);
			expect(store.inlinePublishes()).toEqual([{ childId: 'c', publishAt: 6 }]);
			store.deleteUnpublishedInline();
			expect(store.readInlineRows('d')).toEqual([]);
			store.deleteInline('c');
			expect(store.readInlineRows('c')).toEqual([]);
			return schemaObjects(state.storage, FIRST_WRITE);
		});
		expect(whole.length).toBeGreaterThanOrEqual(FIRST_WRITE.size);
		expect(lazily).toEqual(whole);
	});

	it('creates every table with the schema, as 0.1.0 did, when the deployment sets SHARDFLOW_EAGER_TABLES=true (a rollback to 0.1.0 stays possible)', () =>
		runInDurableObject(stub(uniqueId('fw')), async (_, state) => {
			expect(eagerTablesOf({ SHARDFLOW_EAGER_TABLES: 'true' })).toBe(true);
			const storage = new ObjectStorage(state.storage, 'instance', { eagerTables: eagerTablesOf({ SHARDFLOW_EAGER_TABLES: 'true' }) });
			await storage.open();
			await storage.ensureSchema();
			const present = tableNames(state.storage);
			for (const table of roleTableNames('instance')) expect(present.has(table), table).toBe(true);
			const store = new DrizzleInstanceStore(storage.db, state.storage, { empty: true, tables: storage.firstWrite });
			store.appendEvent('go', '1', 1);
			expect(store.oldestEvent('go')?.payload).toBe('1');
		}));

	it('reads SHARDFLOW_EAGER_TABLES as off unless it is "true", and says so when it is neither "true" nor "false"', () => {
		const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
		try {
			expect(eagerTablesOf({})).toBe(false);
			expect(eagerTablesOf({ SHARDFLOW_EAGER_TABLES: 'false' })).toBe(false);
			expect(errors).not.toHaveBeenCalled();
			expect(eagerTablesOf({ SHARDFLOW_EAGER_TABLES: 'yes' })).toBe(false);
			expect(errors).toHaveBeenCalledWith(expect.objectContaining({ level: 'error', event: 'config.invalid', setting: 'SHARDFLOW_EAGER_TABLES', msg: expect.stringContaining('SHARDFLOW_EAGER_TABLES must be "true" or "false"') }));
		} finally {
			errors.mockRestore();
		}
	});

	it('forgets a table that a rolled-back transaction created, and creates it again on the next write', () =>
		runInDurableObject(stub(uniqueId('fw')), async (_, state) => {
			const { store } = await newInstanceObject(state);
			expect(() =>
				store.transaction(() => {
					store.appendEvent('go', '1', 1);
					throw new Error('the write after it failed');
				}),
			).toThrow('the write after it failed');
			expect(tableNames(state.storage).has('events')).toBe(false);
			expect(store.eventBuffer()).toEqual({ count: 0, bytes: 0 });
			store.appendEvent('go', '2', 2);
			expect(store.oldestEvent('go')?.payload).toBe('2');
		}));

	it('knows after a restart which of them the object has', () =>
		runInDurableObject(stub(uniqueId('fw')), async (_, state) => {
			const { store } = await newInstanceObject(state);
			store.writeEventKey({ key: 'k', name: 'go', digest: 'd' }, 1, 10);
			const restarted = new ObjectStorage(state.storage, 'instance');
			expect(await restarted.open()).toBe(true);
			expect(restarted.firstWrite.has('event_keys')).toBe(true);
			expect(restarted.firstWrite.has('events')).toBe(false);
			const again = new DrizzleInstanceStore(restarted.db, state.storage, { tables: restarted.firstWrite });
			expect(again.readEventKey('k')?.digest).toBe('d');
			expect(again.oldestEvent('go')).toBeUndefined();
		}));

	it('skips a later migration about a first-write table the object lacks, and creates that table at the newest shape (from the chain when the baseline is stale)', async () => {
		// A later migration that changes `events`: an object without the table applies the rest of it only.
		const later: MigrationFiles = {
			journal: { entries: [...files.journal.entries, { idx: 9999, when: files.journal.entries.at(-1)!.when + 1, tag: '9999_later' }] },
			migrations: { ...files.migrations, m9999: 'ALTER TABLE `events` ADD `source` text;--> statement-breakpoint\nCREATE INDEX `steps_name` ON `steps` (`name`);' },
		};
		const eager = new Set([...roleTableNames('instance')].filter((table) => !FIRST_WRITE.has(table)));
		const baseline = parseBaseline(baselineSql); // stale against `later`
		const pending = migrationScript(later, files.journal.entries.at(-1)!.when, baseline, eager)!;
		expect(pending).toContain('steps_name');
		expect(pending).not.toContain('`source`');
		expect(tableScript(later, baseline, 'events')).toContain('ADD `source` text');
		expect(tableScript(files, baseline, 'events')).not.toContain('ALTER');
		const columns = await runInDurableObject(stub(uniqueId('fw')), (_, state) => {
			migrateInOneCall(state.storage, files, { baseline, tables: eager });
			migrateInOneCall(state.storage, later, { baseline, tables: eager });
			state.storage.sql.exec(tableScript(later, baseline, 'events'));
			return [...state.storage.sql.exec<{ name: string }>(`SELECT name FROM pragma_table_info('events')`)].map((c) => c.name);
		});
		expect(columns).toContain('source');
	});

	it('keeps every statement of the chain that mentions a first-write table about that table alone, so skipping it is safe', () => {
		const statements = [...Object.values(files.migrations).flatMap(statementsOf), ...parseBaseline(baselineSql).statements];
		const { mentions, unsafe } = firstWriteMentions(statements);
		expect(unsafe).toEqual([]);
		expect(mentions).toBeGreaterThanOrEqual(FIRST_WRITE.size * 2); // each table's CREATE, in its migration and in the baseline
	});

	it('finds a first-write table however a statement names it: at its end, before a bracket, a comma or a dot, quoted or bare', () => {
		const forbidden = [
			'INSERT INTO `instance` (`id`) SELECT `name` FROM events',
			'UPDATE `instance` SET `version` = (SELECT count(*) FROM `events`)',
			'UPDATE instance SET version = (SELECT max(events.seq) FROM events,steps)',
			'CREATE TRIGGER `t` AFTER INSERT ON `instance` BEGIN DELETE FROM event_keys; END',
			'INSERT INTO "instance" SELECT * FROM "deletion"',
		];
		expect(firstWriteMentions(forbidden).unsafe).toEqual(forbidden);
		// A name that merely contains one (dropped_events, a column events_seen) is not a mention.
		expect(firstWriteMentions(['ALTER TABLE `instance` ADD `events_seen` integer']).mentions).toBe(0);
	});

	it("runs a workflow through an event with an idempotency key and a deletion on an instance's object that starts without those tables", async () => {
		// The table layout's tables, whatever layout the Worker gives new instances ("layout-table-" ids, test/worker/index.ts).
		const id = uniqueId('layout-table-fw-run');
		await PaymentWorkflow.create(testEnv, { id, payload: { amount: 1, currency: 'EUR' } });
		await settle(id);
		const before = await runInDurableObject(stub(id), (_, state) => tableNames(state.storage));
		// Waiting for its approval with a timeout: the timeout is its first wake-up.
		for (const table of FIRST_WRITE) expect(before.has(table), table).toBe(table === 'wakeups');
		for (let i = 0; i < 2; i++) {
			await PaymentWorkflow.sendEvent(testEnv, { id, event: 'approval', payload: { approved: true, reviewer: 'eve' }, idempotencyKey: 'approve-once' });
		}
		await settle(id);
		expect(await PaymentWorkflow.status(testEnv, id)).toMatchObject({ status: 'completed', output: { status: 'charged', reviewer: 'eve' } });
		const after = await runInDurableObject(stub(id), (_, state) => tableNames(state.storage));
		expect(after.has('event_keys')).toBe(true);
		expect(after.has('concurrency_slot')).toBe(false);
		await expect(PaymentWorkflow.delete(testEnv, id)).resolves.toEqual({ id, deleted: true });
		await expect(instances.status(testEnv, { id })).rejects.toMatchObject({ code: ErrorCode.NotFound });
	});
});
