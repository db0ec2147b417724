import { DEFAULT_BULK_RATE, MAX_BULK_RATE, checkBulkAction, type BulkAction, type BulkProgress, type BulkSpec } from '../engine/bulk/bulk-job';
import { ErrorCode, ValidationError } from '../engine/support/errors';
import { uuidv7 } from '../engine/support/ids';
import type { IndexLayout, ResolvedEntry } from '../engine/definition/registry';
import { checkBulkActionFor } from '../engine/bulk/bulk-action-check';
import { IndexClient, type ListQuery } from './index-client';
import type { ShardflowEnv } from './instance-client';
import { callRole, roleHelpers } from './stubs';
import { inPlace } from '../engine/support/group-id';

/** What a bulk operation is asked: a listing query of one type, an action, and how. */
export interface BulkRequest {
	/** The instances to act on: a listing query (`type` required; status, attributes, times, idPrefix, ...). */
	query: Omit<ListQuery, 'limit' | 'order' | 'cursor'> & { type: string };
	action: BulkAction;
	/** Count what the query matches and act on nothing. */
	dryRun?: boolean;
	/** Instances acted on per second at most (default 50, at most 1,000). */
	ratePerSecond?: number;
	/**
	 * The group whose instances it acts on (default: the default group). The job lives in that
	 * group (its jurisdiction), walks that group's index only, and its id carries the group.
	 */
	group?: string;
}

/**
 * Bulk operations by query: a durable job in its own object that walks the query through the
 * index and applies the action to each instance still matching when reached (docs/bulk-operations.md).
 * @example const job = await bulk.start(env, registry, { query: { type: 'payment', attributes: { customerId: '42' } }, action: { kind: 'terminate' } });
 */
export const bulk = {
	/** `progress(env, id)` and `cancel(env, id)`: the calls declared with a helper (src/operations/role-calls.ts). */
	...roleHelpers('bulk'),
	async start(env: ShardflowEnv, layout: IndexLayout, request: BulkRequest): Promise<BulkProgress> {
		if (typeof request !== 'object' || request === null) throw new ValidationError(ErrorCode.InvalidRequest, 'give {query, action}');
		const query = request.query as BulkRequest['query'] | undefined;
		if (typeof query !== 'object' || query === null || typeof query.type !== 'string') throw new ValidationError(ErrorCode.InvalidQuery, 'query needs a type: a bulk operation acts on one workflow type');
		const index = new IndexClient(env, layout, request.group !== undefined ? { group: request.group } : {});
		const filters = index.checkFilters(query as ListQuery);
		const group = index.group;
		const action = checkBulkAction(request.action);
		// With the workflow classes at hand (a Registry, not a bare index layout), what every instance
		// would refuse is refused here, before a job exists: an undeclared event, a payload its schema
		// refuses, a malformed restart point, an archive with no bucket bound.
		const entry = layout.get(query.type);
		// The group's archive bucket, not the shared one: a jurisdiction group without one archives nothing (runtime/object-place.ts).
		const archiveBound = group.archive !== null && Boolean((env as unknown as Record<string, unknown>)[group.archive]);
		if ('workflow' in entry) await checkBulkActionFor(entry as ResolvedEntry, action, archiveBound);
		const rate = request.ratePerSecond ?? DEFAULT_BULK_RATE;
		if (!Number.isInteger(rate) || rate < 1 || rate > MAX_BULK_RATE) throw new ValidationError(ErrorCode.InvalidRequest, `ratePerSecond must be a whole number from 1 to ${MAX_BULK_RATE}`);
		const id = inPlace(group.place, uuidv7());
		const { limit: _l, order: _o, cursor: _c, ...rest } = query as ListQuery & { type: string };
		const spec: BulkSpec = { id, query: rest as BulkSpec['query'], filters: { ...filters, type: query.type }, action, dryRun: request.dryRun === true, ratePerSecond: rate };
		return callRole(env, 'bulkStart', [id], spec);
	},

	/**
	 * The same operation in several groups: one job per group, each in its group (docs/residency.md
	 * "Across groups"). Refused (CROSS_GROUP) unless `allowCrossGroup` says the caller knows it is
	 * not atomic: each job runs, fails or is cancelled on its own, and a group whose start fails
	 * is named in `failed` while the others' jobs run on.
	 */
	async startInGroups(env: ShardflowEnv, layout: IndexLayout, request: Omit<BulkRequest, 'group'>, options: { groups: string[]; allowCrossGroup?: boolean }): Promise<{ jobs: BulkProgress[]; failed: { group: string; error: { code?: string; message: string } }[] }> {
		if (options.allowCrossGroup !== true) {
			throw new ValidationError(ErrorCode.CrossGroup, 'a bulk operation acts on one group; to act on several, pass allowCrossGroup: true (one job per group, not atomic: docs/residency.md "Across groups")');
		}
		const settled = await Promise.allSettled(options.groups.map((group) => bulk.start(env, layout, { ...request, group })));
		const jobs: BulkProgress[] = [];
		const failed: { group: string; error: { code?: string; message: string } }[] = [];
		settled.forEach((result, i) => {
			if (result.status === 'fulfilled') jobs.push(result.value);
			else failed.push({ group: options.groups[i]!, error: { ...((result.reason as { code?: string })?.code ? { code: (result.reason as { code: string }).code } : {}), message: String((result.reason as Error)?.message ?? result.reason) } });
		});
		return { jobs, failed };
	},
};
