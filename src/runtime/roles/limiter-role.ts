import { logFormOf, printLog } from '../../engine/support/engine-log';
import { describeThrown } from '../../engine/support/thrown-value';
import type { LimiterAccess } from '../../operations/role-calls';
import { instances, type ShardflowEnv } from '../../client/instance-client';
import { concurrencyOf } from '../../engine/limiter/concurrency';
import { limiterOf } from '../../engine/object-names';
import { LimiterEngine, type LimiterInfo } from '../../engine/limiter/limiter';
import type { Registry } from '../../engine/definition/registry';
import { DrizzleLimiterStore } from '../limiter-store';
import type { ObjectStorage } from '../object-storage';

export interface LimiterRoleContext {
	ctx: DurableObjectState;
	env: ShardflowEnv;
	storage: ObjectStorage;
	registry: Registry;
	now(): number;
}

/**
 * The limiter of one concurrency key (`__limit:<type>:<key>`): who holds its
 * slots and who waits, in arrival order (see engine/limiter/limiter.ts).
 */
export class LimiterRole implements LimiterAccess {
	readonly kind = 'limiter';
	private engine: LimiterEngine | undefined;

	constructor(private readonly host: LimiterRoleContext) {}

	async acquire(id: string): Promise<'holding' | 'waiting'> {
		return (await this.writable()).acquire(id);
	}

	async release(id: string): Promise<void> {
		(await this.writable()).release(id);
	}

	/** A limiter never written has nobody; reading it creates no tables. */
	info(): LimiterInfo {
		if (!this.host.storage.hasSchema) return { limit: this.limit(), holders: [], waiting: [] };
		return this.limiter().info();
	}

	alarm(): void {
		if (this.host.storage.hasSchema) this.limiter().alarm();
	}

	private async writable(): Promise<LimiterEngine> {
		this.limit();
		await this.host.storage.ensureSchema();
		return this.limiter();
	}

	/** The type's limit in the deployed code. A deploy that removed it lets every waiter through (and releases still land). */
	private limit(): number {
		const { type } = limiterOf(this.host.ctx.id.name!);
		return concurrencyOf(this.host.registry, type)?.limit ?? Number.MAX_SAFE_INTEGER;
	}

	private limiter(): LimiterEngine {
		const { ctx, env, storage, now } = this.host;
		return (this.engine ??= new LimiterEngine({
			store: new DrizzleLimiterStore(storage.db, ctx.storage),
			now,
			limit: () => this.limit(),
			setAlarm: (at) => void (at === undefined ? ctx.storage.deleteAlarm() : ctx.storage.setAlarm(at)),
			grant: (id) => instances.slotGranted(env, { id }),
			background: (work) => ctx.waitUntil(work.catch((error) => printLog({ severity: 'error', event: 'limiter.background_failed', limiter: ctx.id.name, error: describeThrown(error) }, logFormOf(env)))),
			idle: () => ctx.waitUntil(this.clear().catch((error) => printLog({ severity: 'error', event: 'limiter.clear_failed', limiter: ctx.id.name, error: describeThrown(error) }, logFormOf(env)))),
		}));
	}

	/**
	 * Frees an idle limiter's storage (schema, rows, alarm): the next acquire
	 * creates it anew. Checked again with nothing else running, since an acquire
	 * may have arrived since the limiter was seen idle.
	 */
	private clear(): Promise<void> {
		const { ctx, storage } = this.host;
		return ctx.blockConcurrencyWhile(async () => {
			if (!storage.hasSchema) return;
			const { holders, waiting } = this.limiter().info();
			if (holders.length + waiting.length > 0) return;
			await ctx.storage.deleteAlarm();
			await ctx.storage.deleteAll();
			storage.forget();
			this.engine = undefined;
		});
	}
}
