import { ErrorCode, ValidationError } from '../support/errors';
import type { Registry } from '../definition/registry';

/**
 * `static concurrency` of a workflow class: at most `limit` instances per key
 * run at once; the others wait, status `queued`, in arrival order.
 *
 * @example
 * class Sync extends Workflow<{ tenant: string }> {
 *   static override readonly type = 'sync';
 *   static concurrency = { limit: 2, key: (payload: { tenant: string }) => payload.tenant };
 * }
 */
export interface ConcurrencyDefinition {
	/** Instances of one key that may hold a slot at once (1-1000). */
	limit: number;
	/** The key of an instance, from its payload (after the payload schema). Without it, one key for the whole type. */
	key?: (payload: any) => string;
}

/** The key of every instance of a type whose concurrency has no `key`. */
export const DEFAULT_CONCURRENCY_KEY = 'all';
export const MAX_CONCURRENCY_LIMIT = 1000;
const KEY_PATTERN = /^[\x20-\x7e]{1,128}$/;

// The limiter object's name is built and parsed in object-names.ts.

/** A type's concurrency, checked; undefined when it declares none. Throws a configuration error naming the type. */
export function concurrencyOf(registry: Registry, type: string): ConcurrencyDefinition | undefined {
	if (!registry.has(type)) return undefined;
	const declared = (registry.get(type).workflow as { concurrency?: unknown }).concurrency;
	if (declared === undefined) return undefined;
	const { limit, key } = (declared ?? {}) as Partial<ConcurrencyDefinition>;
	if (!Number.isInteger(limit) || limit! < 1 || limit! > MAX_CONCURRENCY_LIMIT) {
		throw new Error(`${type}: static concurrency.limit must be a whole number from 1 to ${MAX_CONCURRENCY_LIMIT}, got ${String(limit)}`);
	}
	if (key !== undefined && typeof key !== 'function') throw new Error(`${type}: static concurrency.key must be a function of the payload`);
	return { limit: limit!, ...(key ? { key } : {}) };
}

/** The concurrency key of a payload; a key function that throws or answers something else refuses the create (INVALID_PAYLOAD). */
export function concurrencyKey(type: string, definition: ConcurrencyDefinition, payload: unknown): string {
	if (!definition.key) return DEFAULT_CONCURRENCY_KEY;
	let key: unknown;
	try {
		key = definition.key(payload);
	} catch (error) {
		throw new ValidationError(ErrorCode.InvalidPayload, `the concurrency key of workflow type "${type}" could not be computed from this payload: ${(error as Error)?.message ?? String(error)}`);
	}
	if (typeof key !== 'string' || !KEY_PATTERN.test(key)) {
		throw new ValidationError(ErrorCode.InvalidPayload, `the concurrency key of workflow type "${type}" must be 1-128 printable ASCII characters, got ${JSON.stringify(key)?.slice(0, 140)}`);
	}
	return key;
}
