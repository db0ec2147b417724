/// <reference types="node" />
import { DatabaseSync, type StatementSync } from 'node:sqlite';

/**
 * The part of a Durable Object's storage the engine's stores use
 * (`sql.exec`, `transactionSync`, `kv`), over Node's own SQLite (`node:sqlite`):
 * the real schema and the real Drizzle stores run on plain Node, where the
 * heap can be capped as production caps an isolate (128 MB). Same synchronous
 * semantics as workerd's: `exec` runs at once and answers a cursor.
 */
export function nodeDurableStorage(path: string): DurableObjectStorage {
	const db = new DatabaseSync(path);
	db.exec('PRAGMA journal_mode = WAL');
	const prepared = new Map<string, StatementSync>();
	const statement = (query: string) => {
		let stmt = prepared.get(query);
		if (!stmt) prepared.set(query, (stmt = db.prepare(query)));
		return stmt;
	};
	const exec = (query: string, ...bindings: unknown[]) => {
		// Several statements at once (the schema baseline) take no bindings and answer nothing.
		if (bindings.length === 0 && /;\s*\S/.test(query.trim().replace(/;\s*$/, ''))) {
			db.exec(query);
			return cursor(() => [], () => []);
		}
		const stmt = statement(query);
		const args = bindings.map((value) => (value instanceof ArrayBuffer ? new Uint8Array(value) : value)) as never[];
		const isRead = /^\s*(?:select|with|pragma)\b/i.test(query) || /\breturning\b/i.test(query);
		if (!isRead) {
			stmt.run(...args);
			return cursor(() => [], () => []);
		}
		return cursor(
			() => {
				stmt.setReturnArrays(false);
				return stmt.all(...args) as Record<string, unknown>[];
			},
			() => {
				stmt.setReturnArrays(true);
				const rows = stmt.all(...args) as unknown as unknown[][];
				stmt.setReturnArrays(false);
				return rows;
			},
		);
	};
	let depth = 0;
	const transactionSync = <T>(fn: () => T): T => {
		const name = `sp${depth++}`;
		db.exec(`SAVEPOINT ${name}`);
		try {
			const result = fn();
			db.exec(`RELEASE ${name}`);
			return result;
		} catch (error) {
			db.exec(`ROLLBACK TO ${name}`);
			db.exec(`RELEASE ${name}`);
			throw error;
		} finally {
			depth--;
		}
	};
	const kv = new Map<string, string>();
	const storage = {
		sql: {
			exec,
			get databaseSize() {
				return (db.prepare('SELECT page_count * page_size AS n FROM pragma_page_count(), pragma_page_size()').get() as { n: number }).n;
			},
		},
		transactionSync,
		kv: {
			get: (key: string) => (kv.has(key) ? JSON.parse(kv.get(key)!) : undefined),
			put: (key: string, value: unknown) => void kv.set(key, JSON.stringify(value)),
			delete: (key: string) => kv.delete(key),
		},
		close: () => db.close(),
	};
	return storage as unknown as DurableObjectStorage;
}

/** A cursor like workerd's: rows as objects, or as arrays through `raw()`. */
function cursor(objects: () => Record<string, unknown>[], arrays: () => unknown[][]) {
	let rows: Record<string, unknown>[] | undefined;
	const all = () => (rows ??= objects());
	let i = 0;
	return {
		toArray: () => all(),
		one: () => {
			const [row] = all();
			if (!row) throw new Error('Expected exactly one result from SQL query, but got no results.');
			return row;
		},
		next: () => (i < all().length ? { done: false, value: all()[i++] } : { done: true, value: undefined }),
		raw: () => ({ toArray: () => arrays(), [Symbol.iterator]: () => arrays()[Symbol.iterator]() }),
		[Symbol.iterator]: () => all()[Symbol.iterator](),
	};
}
