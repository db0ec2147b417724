import { ErrorCode, toErrorBody, ValidationError, type ErrorBody } from '../engine/support/errors';
import { callOperation, type ShardflowEnv } from './instance-client';

/** Most instances one `deleteBatch` (or `POST /workflows/batch-delete`) deletes: Cloudflare's limit too. */
export const MAX_BATCH_DELETE = 100;
/** Deletes of one batch in flight at once (like creates: one RPC each, but not 100 subrequests at the same moment). */
export const BATCH_DELETE_CONCURRENCY = 16;

/** What every delete of the batch is asked, as `DELETE /workflows/:id?terminate=&archive=`. */
export interface BatchDeleteOptions {
	/** Terminate a running instance first (otherwise it is refused with `INVALID_STATE`). */
	terminate?: boolean;
	/** Write each instance to the archive bucket before its storage goes. */
	archive?: boolean;
}

/** What one id got, in the order of the batch: `deleted`, or `refused` with the error a single delete would have thrown. */
export type BatchDeleteOutcome = { result: 'deleted'; id: string } | { result: 'refused'; id: string; error: ErrorBody };

/**
 * Deletes up to 100 instances by id, each exactly like `delete` (see docs/operations.md "Retention
 * and deletion"), at most 16 at a time. One refused id (unknown, already deleted, still
 * running without `terminate`) leaves the others alone; an id given twice is deleted once
 * and its repeat answered `NOT_FOUND`. A batch that is not an array of 1-100 non-empty
 * string ids throws `INVALID_OPTIONS` and deletes nothing.
 *
 * @example
 * const outcomes = await deleteBatch(env, ['pay-1', 'pay-2'], { terminate: true });
 * const refused = outcomes.filter((o) => o.result === 'refused');
 */
export async function deleteBatch(env: ShardflowEnv, ids: readonly string[], options: BatchDeleteOptions = {}): Promise<BatchDeleteOutcome[]> {
	if (!Array.isArray(ids) || ids.length === 0 || ids.length > MAX_BATCH_DELETE) {
		throw new ValidationError(ErrorCode.InvalidOptions, `a batch deletes 1 to ${MAX_BATCH_DELETE} ids, got ${Array.isArray(ids) ? ids.length : typeof ids}`);
	}
	ids.forEach((id, index) => {
		if (typeof id !== 'string' || id.length === 0) {
			throw new ValidationError(ErrorCode.InvalidOptions, `batch id ${index} must be a non-empty string, got ${JSON.stringify(id) ?? typeof id}`);
		}
	});
	const flags = { ...(options.terminate !== undefined ? { terminate: options.terminate } : {}), ...(options.archive !== undefined ? { archive: options.archive } : {}) };
	const outcomes: BatchDeleteOutcome[] = new Array(ids.length);
	let next = 0;
	const worker = async () => {
		while (next < ids.length) {
			const index = next++;
			const id = ids[index]!;
			try {
				await callOperation(env, 'delete', { id, ...flags });
				outcomes[index] = { result: 'deleted', id };
			} catch (error) {
				outcomes[index] = { result: 'refused', id, error: toErrorBody(error) };
			}
		}
	};
	await Promise.all(Array.from({ length: Math.min(BATCH_DELETE_CONCURRENCY, ids.length) }, worker));
	return outcomes;
}
