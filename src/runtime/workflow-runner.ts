import { DurableObject } from 'cloudflare:workers';
import { sql } from 'drizzle-orm';
import { drizzle, type DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import { migrate } from 'drizzle-orm/durable-sqlite/migrator';
import migrations from '../../drizzle/migrations';
import * as schema from '../db/schema';
import type { ShardflowEnv } from '../client/instance-client';
import { wrap, type BacklogRpc, type IndexRpc, type InstanceRpc, type KeysRpc } from '../client/rpc';
import { CURSOR_KEY_OBJECT, randomCursorSecret } from '../engine/cursor';
import { BACKLOG_PREFIX } from '../engine/index-backlog';
import { ErrorCode, NotFoundError, ValidationError, WrongRoleError } from '../engine/errors';
import type { IndexEntry } from '../engine/index-entry';
import type { ShardListQuery } from '../engine/index-query';
import type { Registry } from '../engine/registry';
import { InstanceEngine, prepareCreate } from '../engine/instance-engine';
import type { StepFunctionWrapper } from '../engine/step-function-wrapper';
import { INDEX_PREFIX } from '../engine/shard';
import { IndexBacklogStore } from './index-backlog-store';
import { storedSecret } from './engine-keys-store';
import { IndexShardStore } from './index-shard-store';
import { instanceHost, type AlarmSlot } from './instance-host';

/** The engine's idle hook; RPC only exposes string-keyed methods, so production Workers cannot call it. */
export const idleForTests = Symbol('shardflow.idleForTests');
/** The test kit's step-function seam (see engine/step-function-wrapper.ts); symbol-keyed like `idleForTests`, so not RPC. */
export const stepWrapperForTests = Symbol('shardflow.stepWrapperForTests');


type Role = 'instance' | 'index' | 'backlog' | 'keys';

/**
 * Builds the one Durable Object class for a registry. An object named
 * `__index:<type>:<n>` is an index shard, `__backlog:<type>` a type's delivery
 * backlog, the object `__keys` keeps the engine's generated secrets; any other
 * object is a workflow instance. The class only wires RPC, the alarm and
 * storage to the engine core.
 *
 * @example
 * export class WorkflowRunner extends createWorkflowRunner(registry) {}
 */
export function createWorkflowRunner(registry: Registry) {
	return class WorkflowRunner extends WorkflowRunnerBase {
		protected override readonly registry = registry;
	};
}

export abstract class WorkflowRunnerBase extends DurableObject<ShardflowEnv> implements InstanceRpc, IndexRpc, BacklogRpc, KeysRpc {
	protected abstract readonly registry: Registry;
	private readonly db: DrizzleSqliteDODatabase<typeof schema>;
	private schemaReady = false;
	private readonly alarmSlot: AlarmSlot = { at: null };
	private instanceEngine: InstanceEngine | undefined;
	private shardStore: IndexShardStore | undefined;
	private backlogStore: IndexBacklogStore | undefined;

	constructor(ctx: DurableObjectState, env: ShardflowEnv) {
		super(ctx, env);
		this.db = drizzle(ctx.storage, { schema });
		void ctx.blockConcurrencyWhile(async () => {
			// Objects that were only looked up have no tables; leave them empty (no storage written).
			const existing = this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM sqlite_master WHERE name = '__drizzle_migrations'`);
			if (!existing || existing.n === 0) return; // a new object: no tables and, since we set none, no alarm
			await this.ensureSchema();
			this.alarmSlot.at = await ctx.storage.getAlarm();
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

	/** The entry the index should hold for this instance, or null if there is no such instance. Writes nothing. */
	currentIndexEntry() {
		return wrap(() => {
			this.assertRole('instance');
			if (!this.schemaReady) return null;
			return this.engine().currentIndexEntry();
		});
	}

	republishIndex() {
		return wrap(() => this.existingEngine().republishIndex());
	}

	override async alarm(): Promise<void> {
		this.alarmSlot.at = null;
		if (!this.schemaReady || this.role() !== 'instance') return;
		const engine = this.engine();
		if (engine.exists) engine.alarm();
	}

	/**
	 * Resolves once the replay loop (and index delivery, unless `index: false`)
	 * is idle. Keyed by a symbol, so it is not an RPC method: only a subclass
	 * (the test and benchmark Workers) can expose it.
	 */
	async [idleForTests](options?: { index?: boolean }): Promise<void> {
		await this.instanceEngine?.idle(options);
	}

	/** Only the test kit's runner (`withTestKit`) returns a wrapper, so its mocks replace step functions. */
	protected [stepWrapperForTests](): StepFunctionWrapper | undefined {
		return undefined;
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

	// ---- delivery backlog role ----

	backlogAdd(request: { id: string; since: number }) {
		return wrap(async () => {
			(await this.backlog()).add(request.id, request.since);
			return null;
		});
	}

	backlogRemove(request: { id: string }) {
		return wrap(async () => {
			(await this.backlog()).remove(request.id);
			return null;
		});
	}

	/** Never written: nothing pending, and no tables created. */
	backlogSummary() {
		return wrap(async () => {
			this.assertRole('backlog');
			return this.schemaReady ? (await this.backlog()).summary() : { pending: 0, oldestSince: null, oldest: [] };
		});
	}

	/** A read of a shard that was never written answers `empty` without creating its tables. */
	private readShard<T>(read: (shard: IndexShardStore) => T, empty: T) {
		return wrap(async () => {
			this.assertRole('index');
			return this.schemaReady ? read(await this.shard()) : empty;
		});
	}

	// ---- engine keys role ----

	cursorSecret() {
		return wrap(async () => {
			this.assertRole('keys');
			await this.ensureSchema();
			return storedSecret(this.db, 'cursor', randomCursorSecret);
		});
	}

	// ---- wiring ----

	/**
	 * The object's role from its name. Where the runtime does not tell an object
	 * its name, the role is the one its stored rows show; an empty object takes
	 * the role of its first call.
	 */
	private role(): Role | undefined {
		const name = this.ctx.id.name;
		if (name !== undefined) {
			if (name === CURSOR_KEY_OBJECT) return 'keys';
			return name.startsWith(INDEX_PREFIX) ? 'index' : name.startsWith(BACKLOG_PREFIX) ? 'backlog' : 'instance';
		}
		if (!this.schemaReady) return undefined;
		if (this.db.select({ id: schema.instance.id }).from(schema.instance).limit(1).get()) return 'instance';
		if (this.db.select({ id: schema.indexEntries.id }).from(schema.indexEntries).limit(1).get()) return 'index';
		if (this.db.select({ id: schema.indexBacklog.id }).from(schema.indexBacklog).limit(1).get()) return 'backlog';
		if (this.db.select({ name: schema.engineKeys.name }).from(schema.engineKeys).limit(1).get()) return 'keys';
		return undefined;
	}

	private assertRole(expected: Role): void {
		const role = this.role();
		if (role !== undefined && role !== expected) {
			throw new WrongRoleError(`this object is ${ROLE_NAMES[role]}, not ${ROLE_NAMES[expected]}`);
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

	private async backlog(): Promise<IndexBacklogStore> {
		this.assertRole('backlog');
		await this.ensureSchema();
		return (this.backlogStore ??= new IndexBacklogStore(this.db));
	}

	private existingEngine(): InstanceEngine {
		this.assertRole('instance');
		if (!this.schemaReady) throw new NotFoundError('no such workflow instance');
		return this.engine();
	}

	private engine(): InstanceEngine {
		return (this.instanceEngine ??= new InstanceEngine({
			...instanceHost(this.ctx, this.env, this.registry, this.db, this.alarmSlot),
			wrapStepFunction: this[stepWrapperForTests](),
		}));
	}
}

const ROLE_NAMES: Record<Role, string> = { instance: 'a workflow instance', index: 'an index shard', backlog: 'a delivery backlog', keys: "the engine's key store" };
