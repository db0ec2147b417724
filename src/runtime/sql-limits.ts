import { ErrorCode, ShardflowError } from '../engine/support/errors';

/** Bound parameters one statement may carry in a Durable Object's SQLite (production and `wrangler dev`). */
export const MAX_BOUND_PARAMETERS = 100;
/** The largest row (and string or blob) a Durable Object's SQLite stores in production; `wrangler dev` accepts more. */
export const MAX_ROW_BYTES = 2_000_000;

const utf8 = new TextEncoder();

/** A statement production's SQLite would refuse: refused here first, locally too, with the reason. */
export class SqlLimitError extends ShardflowError {
	constructor(message: string) {
		super(ErrorCode.TooLarge, message);
		this.name = 'SqlLimitError';
	}
}

/** The bytes bound values put into one statement: strings as UTF-8, blobs as they are. */
export function boundBytes(bindings: readonly unknown[]): number {
	let bytes = 0;
	for (const value of bindings) {
		if (typeof value === 'string') bytes += value.length * 3 <= MAX_ROW_BYTES ? value.length : utf8.encode(value).byteLength;
		else if (value instanceof ArrayBuffer) bytes += value.byteLength;
		else if (ArrayBuffer.isView(value)) bytes += value.byteLength;
		else bytes += 8;
	}
	return bytes;
}

/**
 * Checks a statement against the limits production enforces and `wrangler dev`
 * does not all enforce: at most 100 bound parameters, and no write whose bound
 * values add up to more than a row may hold. (A write's bound values are an
 * upper bound of the row it writes: a statement that could exceed the row limit
 * is refused, so no write can pass locally and fail once deployed.)
 */
export function checkStatement(query: string, bindings: readonly unknown[]): void {
	if (bindings.length > MAX_BOUND_PARAMETERS) {
		throw new SqlLimitError(`a statement binds ${bindings.length} parameters; SQLite in Durable Objects allows ${MAX_BOUND_PARAMETERS}: ${query.slice(0, 120)}`);
	}
	if (bindings.length > 0 && /^\s*(?:insert|update|replace)\b/i.test(query)) {
		const bytes = boundBytes(bindings);
		if (bytes > MAX_ROW_BYTES) throw new SqlLimitError(`a write of ${bytes} bytes exceeds the ${MAX_ROW_BYTES} bytes a row holds in production: ${query.slice(0, 120)}`);
	}
}

/**
 * The object's storage with every SQL statement checked by `checkStatement`
 * before it runs: what production refuses is refused locally as well.
 */
export function limitedStorage(storage: DurableObjectStorage): DurableObjectStorage {
	const sql = storage.sql;
	const exec = sql.exec.bind(sql);
	const limitedSql = new Proxy(sql, {
		get(target, key) {
			if (key === 'exec') {
				return (query: string, ...bindings: unknown[]) => {
					checkStatement(query, bindings);
					return exec(query, ...(bindings as never[]));
				};
			}
			const value = Reflect.get(target, key, target);
			return typeof value === 'function' ? value.bind(target) : value;
		},
	});
	return new Proxy(storage, {
		get(target, key) {
			if (key === 'sql') return limitedSql;
			const value = Reflect.get(target, key, target);
			return typeof value === 'function' ? value.bind(target) : value;
		},
	});
}
