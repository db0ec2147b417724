import { ErrorCode, ValidationError } from '../support/errors';
import type { DeletionReason, InstanceRow } from '../storage/store';
import { FINISHED_STATUSES, type WorkflowStatus } from '../support/statuses';

/** Which instances a purge deletes: checked by each instance against its own row, not the index's copy. */
export interface DeleteFilter {
	/** Finished statuses only. */
	status: WorkflowStatus[];
	createdBefore?: number;
	updatedBefore?: number;
}

export interface DeleteOptions {
	/** Terminate an instance that is not finished first (otherwise INVALID_STATE). */
	terminate?: boolean;
	/** Write the archive record before the storage goes (needs an archive bucket). */
	archive?: boolean;
	/** Delete only if the instance matches (a purge): otherwise answer `deleted: false` and change nothing. */
	only?: DeleteFilter;
	reason?: DeletionReason;
}

export interface DeleteResult {
	id: string;
	/** False only for a filtered delete (a purge) the instance did not match. */
	deleted: boolean;
}

/** Checks a delete's options, which arrive over RPC from any caller. */
export function checkDeleteOptions(input: unknown): DeleteOptions {
	const options = (input ?? {}) as Record<string, unknown>;
	for (const flag of ['terminate', 'archive'] as const) {
		if (options[flag] !== undefined && typeof options[flag] !== 'boolean') {
			throw new ValidationError(ErrorCode.InvalidQuery, `${flag} must be true or false`);
		}
	}
	const reason = options.reason ?? 'delete';
	if (reason !== 'delete' && reason !== 'purge' && reason !== 'retention') throw new ValidationError(ErrorCode.InvalidQuery, `unknown deletion reason ${JSON.stringify(reason)}`);
	const only = options.only === undefined ? undefined : checkDeleteFilter(options.only);
	// The index shard's sweep names the incarnation it lists; the instance decides the rest (its retention, its archive).
	if (reason === 'retention' && !only) throw new ValidationError(ErrorCode.InvalidQuery, 'a retention delete names the instance it expires (only)');
	return {
		...(options.terminate === true ? { terminate: true } : {}),
		...(options.archive === true ? { archive: true } : {}),
		...(only ? { only } : {}),
		reason,
	};
}

/** A purge filter: finished statuses and at least one time bound. */
export function checkDeleteFilter(input: unknown): DeleteFilter {
	const filter = (input ?? {}) as Record<string, unknown>;
	const statuses = filter.status;
	if (!Array.isArray(statuses) || statuses.length === 0 || !statuses.every((s) => FINISHED_STATUSES.includes(s as WorkflowStatus))) {
		throw new ValidationError(ErrorCode.InvalidQuery, `status must name one or more finished statuses: ${FINISHED_STATUSES.join(', ')}`);
	}
	const bound = (name: 'createdBefore' | 'updatedBefore') => {
		const value = filter[name];
		if (value === undefined) return undefined;
		if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
			throw new ValidationError(ErrorCode.InvalidQuery, `${name} must be milliseconds since the epoch`);
		}
		return value;
	};
	const createdBefore = bound('createdBefore');
	const updatedBefore = bound('updatedBefore');
	if (createdBefore === undefined && updatedBefore === undefined) {
		throw new ValidationError(ErrorCode.InvalidQuery, 'give createdBefore or updatedBefore (or both)');
	}
	return {
		status: [...new Set(statuses as WorkflowStatus[])],
		...(createdBefore !== undefined ? { createdBefore } : {}),
		...(updatedBefore !== undefined ? { updatedBefore } : {}),
	};
}

/** Whether an instance matches a purge filter (finished, in one of its statuses, before its bounds). */
export function matchesDeleteFilter(row: InstanceRow, filter: DeleteFilter): boolean {
	return (
		FINISHED_STATUSES.includes(row.status) &&
		filter.status.includes(row.status) &&
		(filter.createdBefore === undefined || row.createdAt < filter.createdBefore) &&
		(filter.updatedBefore === undefined || row.updatedAt < filter.updatedBefore)
	);
}
