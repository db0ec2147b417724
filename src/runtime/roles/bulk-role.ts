import { logFormOf, printLog } from '../../engine/support/engine-log';
import { describeThrown } from '../../engine/support/thrown-value';
import type { BulkAccess } from '../../operations/role-calls';
import { IndexClient, type ListQuery } from '../../client/index-client';
import { instances, type ShardflowEnv } from '../../client/instance-client';
import {
	cancelJob,
	deleteJob,
	jobProgress,
	runTick,
	startJob,
	type BulkHost,
	type BulkProgress,
	type BulkSpec,
} from '../../engine/bulk/bulk-job';
import { ErrorCode, ShardflowError } from '../../engine/support/errors';
import type { Registry } from '../../engine/definition/registry';
import { DrizzleBulkStore } from '../bulk-store';
import type { ObjectStorage } from '../object-storage';

export interface BulkRoleContext {
	ctx: DurableObjectState;
	env: ShardflowEnv;
	storage: ObjectStorage;
	registry: Registry;
	now(): number;
}

/**
 * A bulk operation (`__bulk:<id>`): walks its query through the index and applies its action to
 * each instance from its alarm, at its rate, resumable after any crash (engine/bulk/bulk-job.ts).
 */
export class BulkRole implements BulkAccess {
	readonly kind = 'bulk';
	private host: BulkHost | undefined;

	constructor(private readonly context: BulkRoleContext) {}

	async start(spec: BulkSpec): Promise<BulkProgress> {
		await this.context.storage.ensureSchema();
		return startJob(this.bulk(), spec);
	}

	progress(): BulkProgress {
		if (!this.context.storage.hasSchema) throw new ShardflowError(ErrorCode.NotFound, 'no such bulk operation');
		return jobProgress(this.bulk());
	}

	cancel(): BulkProgress {
		if (!this.context.storage.hasSchema) throw new ShardflowError(ErrorCode.NotFound, 'no such bulk operation');
		return cancelJob(this.bulk());
	}

	/** Deletes a finished job (engine/bulk/bulk-job.ts `deleteJob`). */
	delete(): Promise<{ id: string; deleted: true }> {
		if (!this.context.storage.hasSchema) throw new ShardflowError(ErrorCode.NotFound, 'no such bulk operation');
		return deleteJob(this.bulk());
	}

	async alarm(): Promise<void> {
		if (!this.context.storage.hasSchema) return;
		try {
			await runTick(this.bulk());
		} catch (error) {
			// A tick that failed (a shard or the index unreachable) is tried again in a few seconds from where it stood.
			printLog({ severity: 'warn', event: 'bulk.tick_failed', job: this.context.ctx.id.name, error: describeThrown(error) }, logFormOf(this.context.env));
			await this.context.ctx.storage.setAlarm(this.context.now() + 5_000);
		}
	}

	private bulk(): BulkHost {
		const { ctx, env, storage, registry, now } = this.context;
		const index = new IndexClient(env, registry);
		return (this.host ??= {
			now,
			store: new DrizzleBulkStore(storage.db, ctx.storage),
			list: async (query, cursor, limit) => index.list({ ...(query as ListQuery), cursor, limit }),
			current: (id) => orGone(instances.currentIndexEntry(env, { id })),
			// One call per instance, whatever the action: the instance applies it with the job's receipt (engine/instance/bulk-receipt.ts).
			act: async (id, action, jobId) => void (await instances.bulkAct(env, { id, job: jobId, action })),
			reached: (id, action, jobId) => orGone(instances.bulkReceipt(env, { id, job: jobId, action })),
			setAlarm: (at) => void (at === null ? ctx.storage.deleteAlarm() : ctx.storage.setAlarm(at)),
			// Nothing else runs on the object meanwhile; after it, the object is empty and answers NOT_FOUND.
			erase: () =>
				ctx.blockConcurrencyWhile(async () => {
					await ctx.storage.deleteAlarm();
					await ctx.storage.deleteAll();
					storage.forget();
				}),
		});
	}
}

/** An instance's NOT_FOUND as null. */
async function orGone<T>(read: Promise<T>): Promise<T | null> {
	try {
		return await read;
	} catch (error) {
		if (error instanceof ShardflowError && error.code === ErrorCode.NotFound) return null;
		throw error;
	}
}
