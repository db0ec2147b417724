import { DurableObject } from 'cloudflare:workers';
import { sql } from 'drizzle-orm';
import { drizzle, type DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import { migrate } from 'drizzle-orm/durable-sqlite/migrator';
import migrations from '../../drizzle/migrations';
import * as schema from '../db/schema';
import { routeIndexEntry } from '../client/index-client';
import type { ShardflowEnv } from '../client/instance-client';
import { wrap, type IndexRpc, type InstanceRpc } from '../client/rpc';
import { ErrorCode, NotFoundError, ValidationError, WrongRoleError } from '../engine/errors';
import type { IndexEntry } from '../engine/index-entry';
import type { ShardListQuery } from '../engine/index-query';
import type { Registry } from '../engine/registry';
import { InstanceEngine, prepareCreate, type EngineHost } from '../engine/instance-engine';
import { INDEX_PREFIX } from '../engine/shard';
import { runtimeClock } from './clock';
import { DrizzleInstanceStore } from './drizzle-instance-store';
import { IndexShardStore } from './index-shard-store';

/** Longest an index delivery may take before it counts as failed and waits for a retry. */
const INDEX_DELIVERY_TIMEOUT_MS = 10_000;

/**
 * Builds the one Durable Object class for a registry. An object named
 * `__index:<type>:<n>` is an index shard; any other object is a workflow
 * instance. The class only wires RPC, the alarm and storage to the engine core.
 *
 * @example
 * export class WorkflowRunner extends createWorkflowRunner(registry) {}
 */
export function createWorkflowRunner(registry: Registry) {
	return class WorkflowRunner extends WorkflowRunnerBase {
		protected override readonly registry = registry;
	};
}

export abstract class WorkflowRunnerBase extends DurableObject<ShardflowEnv> implements InstanceRpc, IndexRpc {
	protected abstract readonly registry: Registry;
	private readonly db: DrizzleSqliteDODatabase<typeof schema>;
	private schemaReady = false;
	private alarmAt: number | null = null;
	private instanceEngine: InstanceEngine | undefined;
	private shardStore: IndexShardStore | undefined;

	constructor(ctx: DurableObjectState, env: ShardflowEnv) {
		super(ctx, env);
		this.db = drizzle(ctx.storage, { schema });
		void ctx.blockConcurrencyWhile(async () => {
			// Objects that were only looked up have no tables; leave them empty (no storage written).
			const existing = this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM sqlite_master WHERE name = '__drizzle_migrations'`);
			if (!existing || existing.n === 0) return; // a new object: no tables and, since we set none, no alarm
			await this.ensureSchema();
			this.alarmAt = await ctx.storage.getAlarm();
		});
	}

	// ---- workflow instance role ----

	create(request: { id: string; type: string; payload: unknown }) {
		return wrap(async () => {
			this.assertRole('instance');
			if (!request || typeof request !== 'object') throw new ValidationError(ErrorCode.InvalidPayload, 'create needs {id, type, payload}');
			const name = this.ctx.id.name;
			if (name !== undefined && name !== request.id) {
				throw new ValidationError(ErrorCode.InvalidId, `this object is "${name}"; it cannot hold workflow "${request.id}"`);
			}
			if (!this.schemaReady) {
				// A refused create must leave a new object empty: check the input before creating tables.
				const prepared = await prepareCreate(this.registry, request.id, request.type, request.payload);
				await this.ensureSchema();
				return this.engine().commitCreate(prepared);
			}
			return this.engine().create(request.id, request.type, request.payload);
		});
	}

	describe() {
		return wrap(() => this.existingEngine().status());
	}

	steps(request: { cursor?: string | null; limit?: number }) {
		return wrap(() => this.existingEngine().steps({ cursor: request?.cursor ?? null, ...(request?.limit !== undefined ? { limit: request.limit } : {}) }));
	}

	sendEvent(request: { event: string; payload: unknown; idempotencyKey?: string }) {
		return wrap(async () => {
			const key = request?.idempotencyKey;
			await this.existingEngine().sendEvent(request?.event, request?.payload, key === undefined ? {} : { idempotencyKey: key });
			return null;
		});
	}

	pause() {
		return wrap(() => this.existingEngine().pause());
	}

	resume() {
		return wrap(() => this.existingEngine().resume());
	}

	terminate() {
		return wrap(() => this.existingEngine().terminate());
	}

	restart() {
		return wrap(() => this.existingEngine().restart());
	}

	override async alarm(): Promise<void> {
		this.alarmAt = null;
		if (!this.schemaReady || this.role() !== 'instance') return;
		const engine = this.engine();
		if (engine.exists) engine.alarm();
	}

	/** Test and benchmark hook: resolves once the replay loop (and index delivery, unless `index: false`) is idle. */
	async settle(options?: { index?: boolean }): Promise<void> {
		await this.instanceEngine?.idle(options);
	}

	// ---- index shard role ----

	indexWrite(entries: IndexEntry[]) {
		return wrap(async () => {
			(await this.shard()).write(entries);
			return null;
		});
	}

	indexTombstone(items: { id: string; version: number }[]) {
		return wrap(async () => {
			(await this.shard()).tombstone(items);
			return null;
		});
	}

	indexList(query: ShardListQuery) {
		return this.readShard((shard) => shard.list(query), []);
	}

	indexCounts() {
		return this.readShard((shard) => shard.counts(), {});
	}

	indexVersions(ids: string[]) {
		return this.readShard((shard) => shard.versions(ids), {});
	}

	indexScan(request: { afterId: string; limit: number }) {
		return this.readShard((shard) => shard.scan(request.afterId, request.limit), []);
	}

	/** A read of a shard that was never written answers `empty` without creating its tables. */
	private readShard<T>(read: (shard: IndexShardStore) => T, empty: T) {
		return wrap(async () => {
			this.assertRole('index');
			return this.schemaReady ? read(await this.shard()) : empty;
		});
	}

	// ---- wiring ----

	/**
	 * The object's role from its name. Where the runtime does not tell an object
	 * its name, the role is the one its stored rows show; an empty object takes
	 * the role of its first call.
	 */
	private role(): 'instance' | 'index' | undefined {
		const name = this.ctx.id.name;
		if (name !== undefined) return name.startsWith(INDEX_PREFIX) ? 'index' : 'instance';
		if (!this.schemaReady) return undefined;
		if (this.db.select({ id: schema.instance.id }).from(schema.instance).limit(1).get()) return 'instance';
		if (this.db.select({ id: schema.indexEntries.id }).from(schema.indexEntries).limit(1).get()) return 'index';
		return undefined;
	}

	private assertRole(expected: 'instance' | 'index'): void {
		const role = this.role();
		if (role !== undefined && role !== expected) {
			throw new WrongRoleError(
				expected === 'index' ? 'this object is a workflow instance, not an index shard' : 'this object is an index shard, not a workflow instance',
			);
		}
	}

	private async ensureSchema(): Promise<void> {
		if (this.schemaReady) return;
		await migrate(this.db, migrations);
		this.schemaReady = true;
	}

	private async shard(): Promise<IndexShardStore> {
		this.assertRole('index');
		await this.ensureSchema();
		return (this.shardStore ??= new IndexShardStore(this.db, this.ctx.storage));
	}

	private existingEngine(): InstanceEngine {
		this.assertRole('instance');
		if (!this.schemaReady) throw new NotFoundError('no such workflow instance');
		return this.engine();
	}

	private engine(): InstanceEngine {
		if (this.instanceEngine) return this.instanceEngine;
		const { ctx, env, registry } = this;
		const host: EngineHost = {
			store: new DrizzleInstanceStore(this.db, ctx.storage),
			registry,
			env,
			now: runtimeClock.now,
			setAlarm: (at) => {
				if (at === (this.alarmAt ?? undefined)) return;
				this.alarmAt = at ?? null;
				void (at === undefined ? ctx.storage.deleteAlarm() : ctx.storage.setAlarm(at));
			},
			ensureAlarmBy: (at) => {
				if (this.alarmAt !== null && this.alarmAt <= at) return;
				this.alarmAt = at;
				void ctx.storage.setAlarm(at);
			},
			background: (work) => ctx.waitUntil(work.catch((error) => console.error('shardflow: background work failed', error))),
			sendIndexEntry: (entry) => withTimeout(routeIndexEntry(env, registry, entry), INDEX_DELIVERY_TIMEOUT_MS),
			yieldToEventLoop: () => new Promise((resolve) => setTimeout(resolve, 0)),
			defer: (fn, ms = 0) => void setTimeout(fn, ms),
		};
		return (this.instanceEngine = new InstanceEngine(host));
	}
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
	let timer: ReturnType<typeof setTimeout>;
	return Promise.race([
		work,
		new Promise<never>((_, reject) => {
			timer = setTimeout(() => reject(new Error(`index delivery timed out after ${ms} ms`)), ms);
		}),
	]).finally(() => clearTimeout(timer));
}
