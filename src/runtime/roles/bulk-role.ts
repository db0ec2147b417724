import { logFormOf, printLog } from '../../engine/support/engine-log';
import { describeThrown } from '../../engine/support/thrown-value';
import type { BulkAccess } from '../../operations/role-calls';
import { IndexClient, type ListQuery } from '../../client/index-client';
import { instances, type ShardflowEnv } from '../../client/instance-client';
import {
	bulkEventKey,
	cancelJob,
	jobProgress,
	runTick,
	startJob,
	type BulkAction,
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
			current: async (id) => {
				try {
					return await instances.currentIndexEntry(env, { id });
				} catch (error) {
					if (error instanceof ShardflowError && error.code === ErrorCode.NotFound) return null;
					throw error;
				}
			},
			act: (id, action, jobId) => act(env, id, action, jobId),
			setAlarm: (at) => void (at === null ? ctx.storage.deleteAlarm() : ctx.storage.setAlarm(at)),
		});
	}
}

async function act(env: ShardflowEnv, id: string, action: BulkAction, jobId: string): Promise<void> {
	switch (action.kind) {
		case 'terminate':
			await instances.terminate(env, { id, ...(action.rollback ? { rollback: true } : {}) });
			return;
		case 'pause':
			await instances.pause(env, { id });
			return;
		case 'resume':
			await instances.resume(env, { id });
			return;
		case 'restart':
			await instances.restart(env, { id, ...(action.from !== undefined ? { from: action.from } : {}) });
			return;
		case 'delete':
			await instances.delete(env, { id, ...(action.archive !== undefined ? { archive: action.archive } : {}), ...(action.terminate ? { terminate: true } : {}) });
			return;
		case 'sendEvent':
			await instances.sendEvent(env, { id, event: action.event, payload: action.payload, idempotencyKey: bulkEventKey(jobId, action) });
			return;
		case 'reindex':
			await instances.reindex(env, { id });
			return;
	}
}
