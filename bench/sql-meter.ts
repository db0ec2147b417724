/**
 * Counts what an object's storage does, as Cloudflare bills it: statements, and the
 * cursors' `rowsRead` / `rowsWritten` (which include the rows a trigger writes and
 * the index entries a write updates), installed on `ctx.storage.sql` before the
 * object's storage layer captures `exec`, so every statement of the engine is seen;
 * and the alarm writes beside them (`AlarmMeter`), which no cursor reports.
 * Benchmark Worker only.
 */
export interface SqlMeterReading {
	statements: number;
	rowsRead: number;
	rowsWritten: number;
}

/**
 * A schema script of runtime/migrate-in-one-call.ts: `migrationScript`'s (a new object's schema) and `tableScript`'s (a
 * table created on its first write) begin with a CREATE and join their statements by `;\n`.
 */
/** Miniflare's own table of a named object's name (local only). */
const MINIFLARE_NAME_TABLE = '__miniflare_do_name';

const isSchemaScript = (query: string) => query.startsWith('CREATE ') && query.includes(';\n');

/** Every meter of this isolate (the bench Worker's objects share one isolate under `wrangler dev`). */
const meters = new Set<SqlMeter>();

/**
 * Key-value rows written by every metered object so far, by what was written: "put i", "delete w:", ... (a key's
 * prefix up to its first ':', the compact layout's parts: runtime/compact-keys.ts). Where a run's rows go (docs/cost.md).
 */
export function totalKvWrites(): Map<string, number> {
	const total = new Map<string, number>();
	for (const meter of meters) for (const [what, n] of meter.kvWrites) total.set(what, (total.get(what) ?? 0) + n);
	return total;
}

/**
 * Rows written into an index shard's run-metrics minute rows (`index_metric_minutes`) by every metered object so far:
 * the rollups' and the few written at once (a late delivery, an entry leaving before its minute was rolled up).
 * With a shard's first watermark ("put metrics:" in `totalKvWrites`, once in its life), what the shards' run metrics
 * cost, reported apart from the runs they fall in (docs/cost.md, "Where a 10-trivial-step run's rows go").
 */
export function totalMetricsRows(): number {
	let total = 0;
	for (const meter of meters) for (const cursor of meter.metricsCursors) total += cursor.rowsWritten;
	return total;
}

/** Statements and rows of every metered object so far: a run's cost is the difference over it. */
export function totalSqlReading(): SqlMeterReading {
	const total = { statements: 0, rowsRead: 0, rowsWritten: 0 };
	for (const meter of meters) {
		const r = meter.reading();
		total.statements += r.statements;
		total.rowsRead += r.rowsRead;
		total.rowsWritten += r.rowsWritten;
	}
	return total;
}

export class SqlMeter {
	private statements = 0;
	private rowsRead = 0;
	private rowsWritten = 0;
	/** Key-value rows written, by operation and key prefix (see `totalKvWrites`). */
	readonly kvWrites = new Map<string, number>();
	/** Cursors of the statements that write the run-metrics minute rows (see `totalMetricsRows`). */
	readonly metricsCursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
	/** Cursors not yet folded in: a read's rowsRead grows while it is iterated. */
	private open: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];

	/**
	 * `storage`: the object's storage, whose key-value API (`storage.kv`, the compact instance layout's, and the
	 * cut passes' key) is counted too, as Cloudflare bills it on a SQLite-backed object: each key put or deleted
	 * is a row written, each key read or listed a row read (docs/cost.md "What counts as a row written").
	 */
	constructor(sql: SqlStorage, storage?: DurableObjectStorage) {
		const exec = sql.exec.bind(sql);
		const meter = this;
		meters.add(this);
		if (storage) this.meterKv(storage);
		Object.defineProperty(sql, 'exec', {
			value(query: string, ...bindings: SqlStorageValue[]) {
				// A new object's schema, and a table created on its first write, is one multi-statement call
				// (runtime/migrate-in-one-call.ts), and a cursor counts only the rows of its last statement: run the
				// script's statements one by one, each counted, in the same transaction. Its parts bind nothing.
				if (bindings.length === 0 && isSchemaScript(query)) {
					let last: SqlStorageCursor<Record<string, SqlStorageValue>> | undefined;
					for (const statement of query.split(';\n')) last = meter.count(exec(statement));
					return last!;
				}
				// Miniflare keeps a named object's name in a table of its own (`__miniflare_do_name`, 3 rows written by each new
				// object under `wrangler dev`); a deployed object has no such table, so its statements are not counted.
				if (query.includes(MINIFLARE_NAME_TABLE)) return exec(query, ...bindings);
				const cursor = meter.count(exec(query, ...bindings));
				if (/^insert into "index_metric_minutes"/i.test(query)) meter.metricsCursors.push(cursor);
				return cursor;
			},
			configurable: true,
			writable: true,
		});
	}

	/** Replaces `storage.kv` with a counting view of it (installed before the object's stores take `storage.kv`). */
	private meterKv(storage: DurableObjectStorage): void {
		const kv = storage.kv;
		const meter = this;
		const counted: SyncKvStorage = {
			get(key) {
				meter.statements++;
				const value = kv.get(key);
				if (value !== undefined) meter.rowsRead++;
				return value as never;
			},
			*list(options) {
				meter.statements++;
				for (const entry of kv.list(options)) {
					meter.rowsRead++;
					yield entry as never;
				}
			},
			put(key, value) {
				meter.statements++;
				meter.rowsWritten++;
				meter.tally('put', key);
				kv.put(key, value);
			},
			delete(key) {
				meter.statements++;
				const deleted = kv.delete(key);
				// A delete that found the key wrote its row; one that found none wrote nothing (as a DELETE of no row).
				if (deleted) {
					meter.rowsWritten++;
					meter.tally('delete', key);
				}
				return deleted;
			},
		};
		Object.defineProperty(storage, 'kv', { value: counted, configurable: true, writable: true });
	}

	private tally(op: 'put' | 'delete', key: string): void {
		const colon = key.indexOf(':');
		const what = `${op} ${colon < 0 ? key : key.slice(0, colon + 1)}`;
		this.kvWrites.set(what, (this.kvWrites.get(what) ?? 0) + 1);
	}

	private count(cursor: SqlStorageCursor<Record<string, SqlStorageValue>>): SqlStorageCursor<Record<string, SqlStorageValue>> {
		this.statements++;
		this.open.push(cursor);
		if (this.open.length >= 256) this.fold();
		return cursor;
	}

	private fold(): void {
		for (const cursor of this.open) {
			this.rowsRead += cursor.rowsRead;
			this.rowsWritten += cursor.rowsWritten;
		}
		this.open = [];
	}

	reading(): SqlMeterReading {
		this.fold();
		return { statements: this.statements, rowsRead: this.rowsRead, rowsWritten: this.rowsWritten };
	}
}

/**
 * Alarm writes of one object: "Each `setAlarm()` is billed as a single row written" (Durable Objects pricing,
 * SQLite storage backend, footnote 3; docs/cost.md "What counts as a row written"). `deleteAlarm()` is not named
 * there; on a SQLite-backed object the alarm is a stored value and "deletes are counted as rows written" (footnote
 * 4), so the bench counts it too, apart, as the upper bound (docs/decisions.md "Alarm writes are metered").
 */
export interface AlarmMeterReading {
	/** `setAlarm()` calls. */
	set: number;
	/** `deleteAlarm()` calls. */
	deleted: number;
}

type AlarmStorage = Pick<DurableObjectStorage, 'setAlarm' | 'deleteAlarm'>;

const alarmMeters = new Set<AlarmMeter>();

/** Alarm writes of every metered object so far (of those labelled `label`, if given): a run's cost is the difference over it. */
export function totalAlarmReading(label?: string): AlarmMeterReading {
	const total = { set: 0, deleted: 0 };
	for (const meter of alarmMeters) {
		if (label !== undefined && meter.label !== label) continue;
		total.set += meter.reading().set;
		total.deleted += meter.reading().deleted;
	}
	return total;
}

export class AlarmMeter {
	private set = 0;
	private deleted = 0;

	/**
	 * Wraps `storage.setAlarm` / `deleteAlarm` on this object; every later call through `ctx.storage` is counted.
	 * `label`: what kind of object this is (the bench splits a run's alarm writes by it).
	 */
	constructor(
		storage: AlarmStorage,
		readonly label = '',
	) {
		const setAlarm = storage.setAlarm.bind(storage);
		const deleteAlarm = storage.deleteAlarm.bind(storage);
		const meter = this;
		alarmMeters.add(this);
		Object.defineProperty(storage, 'setAlarm', {
			value(...args: Parameters<AlarmStorage['setAlarm']>) {
				meter.set++;
				return setAlarm(...args);
			},
			configurable: true,
			writable: true,
		});
		Object.defineProperty(storage, 'deleteAlarm', {
			value(...args: Parameters<AlarmStorage['deleteAlarm']>) {
				meter.deleted++;
				return deleteAlarm(...args);
			},
			configurable: true,
			writable: true,
		});
	}

	reading(): AlarmMeterReading {
		return { set: this.set, deleted: this.deleted };
	}
}
