import { ErrorCode, toErrorBody, ValidationError, type ErrorBody } from '../engine/support/errors';
import type { WorkflowStatus } from '../engine/support/statuses';
import type { GroupFallback } from '../engine/groups/groups';
import { routeCreate } from '../operations/create-placement';
import { callOperation, type ShardflowEnv } from './instance-client';

/** Most instances one `createBatch` (or `POST /workflows/batch`) starts. */
export const MAX_BATCH_CREATE = 100;
/**
 * Creates of one batch in flight at once: each is one RPC to its own object, so they
 * overlap well, but a batch of 100 should not open 100 subrequests at the same moment.
 */
export const BATCH_CREATE_CONCURRENCY = 16;

/** One instance of a batch: as the body of `POST /workflows`. */
export interface BatchCreateItem {
	type: string;
	/** Omit for a UUIDv7 in the item's group (chosen before the call, so a refused item still names its id). */
	id?: string;
	/** The group to create it in, for a type that does not choose its own: as `create`'s `group` (docs/residency.md). */
	group?: string;
	payload?: unknown;
	/** Search attributes the type declares (as `create` takes them). */
	attributes?: Record<string, unknown>;
}

/**
 * What one item got, in the order of the batch: `created` (new), `existing` (the id
 * already held that type and payload: a safe retry) or `refused` with the error a single
 * create would have thrown.
 */
export type BatchCreateOutcome =
	| { result: 'created' | 'existing'; id: string; type: string; status: WorkflowStatus; group?: string; groupFallback?: GroupFallback }
	| { result: 'refused'; id: string | null; type: string; error: ErrorBody };

/**
 * Creates up to 100 instances, of any registered types, each exactly like `create`
 * (idempotent by id, placed in its group: docs/residency.md), at most 16 at a time. One item's refusal does not stop the others;
 * every outcome is answered in the batch's order. A batch that is not an array of 1-100
 * items throws `INVALID_OPTIONS` and creates nothing.
 *
 * @example
 * const outcomes = await createBatch(env, [
 *   { type: 'payment', id: 'pay-1', payload: { amount: 5, currency: 'EUR' } },
 *   { type: 'payment', id: 'pay-2', payload: { amount: 7, currency: 'EUR' } },
 * ]);
 * const refused = outcomes.filter((o) => o.result === 'refused');
 */
export async function createBatch(
	env: ShardflowEnv,
	items: readonly BatchCreateItem[],
	options: { checkType?: (type: string) => void } = {},
): Promise<BatchCreateOutcome[]> {
	if (!Array.isArray(items) || items.length === 0 || items.length > MAX_BATCH_CREATE) {
		throw new ValidationError(
			ErrorCode.InvalidOptions,
			`a batch holds 1 to ${MAX_BATCH_CREATE} items, got ${Array.isArray(items) ? items.length : typeof items}`,
		);
	}
	// Like the HTTP route: a malformed item refuses the whole batch before anything is created.
	items.forEach((item, index) => {
		if (typeof item !== 'object' || item === null || Array.isArray(item) || typeof item.type !== 'string' || item.type.length === 0) {
			throw new ValidationError(ErrorCode.InvalidOptions, `batch item ${index} must be an object with a type (a non-empty string), got ${describe(item)}`);
		}
		if (item.id !== undefined && typeof item.id !== 'string') {
			throw new ValidationError(ErrorCode.InvalidOptions, `batch item ${index}: id must be a string when given, got ${typeof item.id}`);
		}
		if (item.group !== undefined && typeof item.group !== 'string') {
			throw new ValidationError(ErrorCode.InvalidOptions, `batch item ${index}: group must be a string when given, got ${typeof item.group}`);
		}
	});
	const outcomes: BatchCreateOutcome[] = new Array(items.length);
	let next = 0;
	const worker = async () => {
		while (next < items.length) {
			const index = next++;
			outcomes[index] = await createOne(env, items[index]!, options.checkType);
		}
	};
	await Promise.all(Array.from({ length: Math.min(BATCH_CREATE_CONCURRENCY, items.length) }, worker));
	return outcomes;
}

async function createOne(env: ShardflowEnv, item: BatchCreateItem, checkType: ((type: string) => void) | undefined): Promise<BatchCreateOutcome> {
	const type = typeof item?.type === 'string' ? item.type : String(item?.type);
	const group = item.group !== undefined ? { group: item.group } : {};
	// Placed as a single create places it (operations/create-placement.ts): an id generated in the
	// item's group (its type's pin or choice, its `group`), so the object is the group's, in its
	// jurisdiction. Generated here rather than in `create` so a refused item still names its id.
	const id = item.id ?? routeCreate({ type, payload: item.payload, ...group }).id;
	try {
		checkType?.(type);
		const created = await callOperation(env, 'create', { type, id, payload: item.payload, ...group, ...(item.attributes !== undefined ? { attributes: item.attributes } : {}) });
		return {
			result: created.created ? 'created' : 'existing',
			id: created.id,
			type: created.type,
			status: created.status,
			...(created.group !== undefined ? { group: created.group } : {}),
			...(created.groupFallback !== undefined ? { groupFallback: created.groupFallback } : {}),
		};
	} catch (error) {
		return { result: 'refused', id: typeof id === 'string' ? id : null, type, error: toErrorBody(error) };
	}
}

function describe(item: unknown): string {
	if (item === null) return 'null';
	if (Array.isArray(item)) return 'an array';
	if (typeof item !== 'object') return typeof item;
	return `an object with type ${JSON.stringify((item as { type?: unknown }).type) ?? 'undefined'}`;
}
