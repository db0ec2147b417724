/**
 * The work an object does, counted by what it is (`npm run bench:work`, bench/work-ab.mjs): every SQL statement by
 * its text with the rows it read and wrote, every key-value call by its key's prefix, every transaction, alarm call
 * and RPC (the alarm handler among them). Installed on an object's storage before the engine captures it, as
 * bench/sql-meter.ts is. A timed A/B on a shared 2-core machine is noise of a few per cent either way (docs/cost.md
 * "What the cuts cost in time"); these counts are the same on every run of the same code, so an A/B of them says
 * what grew between two builds, and where.
 *
 * Copied into the base's checkout beside its bench/worker.ts (bench/work-entry.ts): it imports nothing, so that any
 * build of the engine can be counted by the same meter.
 */

/** What one kind of call did so far: [calls, rows read, rows written]. */
export type WorkCount = [calls: number, rowsRead: number, rowsWritten: number];

/** Every counted object's work so far, by what was done: "sql <statement>", "kv.put <prefix>", "rpc <method>", ... */
export type WorkReading = Record<string, WorkCount>;

/** A new object's schema is one multi-statement call (runtime/migrate-in-one-call.ts): counted per statement. */
const isSchemaScript = (query: string) => query.startsWith('CREATE ') && query.includes(';\n');
/** Miniflare's own table of a named object's name (local only): not the engine's work. */
const MINIFLARE_NAME_TABLE = '__miniflare_do_name';

const counts = new Map<string, WorkCount>();
/** Cursors whose rows are not in `counts` yet: a read's rowsRead grows while it is iterated. */
let open: [string, SqlStorageCursor<Record<string, SqlStorageValue>>][] = [];

function add(what: string, calls: number, rowsRead = 0, rowsWritten = 0): void {
	const count = counts.get(what) ?? [0, 0, 0];
	count[0] += calls;
	count[1] += rowsRead;
	count[2] += rowsWritten;
	counts.set(what, count);
}

function fold(): void {
	for (const [what, cursor] of open) add(what, 0, cursor.rowsRead, cursor.rowsWritten);
	open = [];
}

/** The work of every counted object of this isolate so far (a scenario's is the difference over it). */
export function workReading(): WorkReading {
	fold();
	return Object.fromEntries([...counts].map(([what, count]) => [what, [...count] as WorkCount]));
}

/**
 * A statement's text, whitespace folded, as one key per prepared statement; a long number written into it (a
 * migration's timestamp) as `<n>`, so that two builds' same statement is one key.
 */
const statementKey = (query: string) => `sql ${query.replace(/\s+/g, ' ').replace(/\b\d{10,}\b/g, '<n>').trim().slice(0, 160)}`;
/** A key's prefix up to its first ':' (the compact layout's parts: runtime/compact-keys.ts), or the key. */
const keyPrefix = (key: string) => (key.includes(':') ? key.slice(0, key.indexOf(':') + 1) : key);

/** Counts every later call through `storage` (its SQL, key-value, transaction and alarm calls). */
export function meterStorage(storage: DurableObjectStorage): void {
	const sql = storage.sql;
	const exec = sql.exec.bind(sql);
	const counted = (query: string, cursor: SqlStorageCursor<Record<string, SqlStorageValue>>) => {
		const what = statementKey(query);
		add(what, 1);
		open.push([what, cursor]);
		if (open.length >= 256) fold();
		return cursor;
	};
	replace(sql, 'exec', (query: string, ...bindings: SqlStorageValue[]) => {
		if (bindings.length === 0 && isSchemaScript(query)) {
			let last: SqlStorageCursor<Record<string, SqlStorageValue>> | undefined;
			for (const statement of query.split(';\n')) last = counted(statement, exec(statement));
			return last!;
		}
		if (query.includes(MINIFLARE_NAME_TABLE)) return exec(query, ...bindings);
		return counted(query, exec(query, ...bindings));
	});
	const kv = storage.kv;
	const meteredKv: SyncKvStorage = {
		get(key) {
			const value = kv.get(key);
			add(`kv.get ${keyPrefix(key)}`, 1, value === undefined ? 0 : 1);
			return value as never;
		},
		*list(options) {
			const what = `kv.list ${options?.prefix ?? ''}`;
			add(what, 1);
			for (const entry of kv.list(options)) {
				add(what, 0, 1);
				yield entry as never;
			}
		},
		put(key, value) {
			add(`kv.put ${keyPrefix(key)}`, 1, 0, 1);
			kv.put(key, value);
		},
		delete(key) {
			const deleted = kv.delete(key);
			add(`kv.delete ${keyPrefix(key)}`, 1, 0, deleted ? 1 : 0);
			return deleted;
		},
	};
	Object.defineProperty(storage, 'kv', { value: meteredKv, configurable: true, writable: true });
	for (const name of ['transactionSync', 'transaction', 'setAlarm', 'deleteAlarm', 'getAlarm', 'get', 'put', 'delete', 'list', 'deleteAll', 'sync'] as const) {
		const original = storage[name] as ((...args: unknown[]) => unknown) | undefined;
		if (typeof original !== 'function') continue;
		const call = original.bind(storage);
		// Each setAlarm() is billed as a row written (bench/sql-meter.ts AlarmMeter).
		replace(storage, name, (...args: unknown[]) => (add(`storage.${name}`, 1, 0, name === 'setAlarm' ? 1 : 0), call(...args)));
	}
}

/**
 * Counts every call of a method of `proto`'s chain (an RPC, the alarm) on the objects `countsObject` accepts, as
 * "rpc <method>", by wrappers on `proto` itself (the class the runtime instantiates, which finds them first).
 */
export function meterCalls(proto: object, countsObject: (self: unknown) => boolean): void {
	const names = new Set<string>();
	for (let p = Object.getPrototypeOf(proto); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
		for (const name of Object.getOwnPropertyNames(p)) if (name !== 'constructor' && typeof Object.getOwnPropertyDescriptor(p, name)?.value === 'function') names.add(name);
	}
	for (const name of names) {
		const method = (Object.getPrototypeOf(proto) as Record<string, (...args: unknown[]) => unknown>)[name]!;
		replace(proto, name, function (this: unknown, ...args: unknown[]) {
			if (countsObject(this)) add(`rpc ${name}`, 1);
			return method.apply(this, args);
		});
	}
}

/**
 * Counts every timer the isolate sets, as "timer setTimeout": the macrotask hops of the engine (an index update's
 * coalescing, a pass started on the next macrotask) and of the bench's own polling, which waits a timer per poll.
 * A microtask hop cannot be counted from here.
 */
export function meterTimers(): void {
	const setTimeout = globalThis.setTimeout;
	replace(globalThis, 'setTimeout', ((...args: Parameters<typeof setTimeout>) => (add('timer setTimeout', 1), setTimeout(...args))) as never);
}

function replace(target: object, name: string, value: (...args: never[]) => unknown): void {
	Object.defineProperty(target, name, { value, configurable: true, writable: true });
}
