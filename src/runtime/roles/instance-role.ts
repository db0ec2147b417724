import { callOperation, type ShardflowEnv } from '../../client/instance-client';
import { inlineParentsOf } from '../../engine/children/child-workflows';
import type { InlineRead } from '../../engine/instance/inline-child';
import type { ArchivedInstance } from '../../engine/lifecycle/archive-reader';
import { checkDeleteOptions, type DeleteResult } from '../../engine/lifecycle/deletion';
import { ErrorCode, NotFoundError, ShardflowError, ValidationError } from '../../engine/support/errors';
import type { IndexEntry } from '../../engine/index/index-entry';
import { InstanceEngine } from '../../engine/instance/instance-engine';
import { bulkActOn } from '../../engine/instance/bulk-receipt';
import { prepareCreate, type CreateResult } from '../../engine/instance/create';
import type { Registry } from '../../engine/definition/registry';
import type { StepFunctionWrapper } from '../../engine/steps/step-function-wrapper';
import type { StoreStart } from '../drizzle-instance-store';
import type { InstanceStore } from '../../engine/storage/store';
import { InstanceStreamFeed, refuse } from './instance-stream-feed';
import { holdFor } from '../alarm-hold';
import { instanceHost, type AlarmSlot } from '../instance-host';
import type { ObjectStorage } from '../object-storage';
import { eraseArchive, readArchive, type ArchiveEnv } from '../r2-archive';

/** What the instance role needs from the object that hosts it. */
export interface InstanceRoleContext {
	ctx: DurableObjectState;
	env: ShardflowEnv & ArchiveEnv;
	storage: ObjectStorage;
	registry: Registry;
	/** The clock of this instance (the runner's; a test runner moves it). */
	now(): number;
	/** The test kit's step-function wrapper of this instance (see `RunnerOptions.wrapStepFunctions`); unset in production. */
	wrapStepFunction?: StepFunctionWrapper | undefined;
	/** The test kit's notice of a stored create (see `RunnerOptions.instanceCreated`); unset in production. */
	instanceCreated?: ((instance: { id: string; type: string }) => void) | undefined;
}

/**
 * A workflow instance (any name not reserved by the engine): its replay loop,
 * steps, events and index outbox, all in the engine core; this role lends it
 * storage, the alarm and the namespace. Control operations reach it through
 * `existing()` (see `src/operations/table.ts`).
 */
export class InstanceRole {
	readonly kind = 'instance';
	private engine: InstanceEngine | undefined;
	private store: InstanceStore | undefined;
	private readonly alarmSlot: AlarmSlot = { at: null };

	/** Subscribers of this instance's stream (see instance-stream-feed.ts). */
	readonly stream: InstanceStreamFeed;

	constructor(private readonly host: InstanceRoleContext) {
		this.stream = new InstanceStreamFeed(host.ctx, () => {
			if (!this.host.storage.hasSchema) return undefined;
			this.instance();
			return this.store;
		});
	}

	/** Start-up of an object that has storage: remember the alarm it has set. */
	async opened(): Promise<void> {
		this.alarmSlot.at = await this.host.ctx.storage.getAlarm();
	}

	async create(request: { id: string; type: string; payload: unknown; parent?: unknown; attributes?: unknown; transplant?: unknown; group?: unknown }): Promise<CreateResult> {
		if (!request || typeof request !== 'object') throw new ValidationError(ErrorCode.InvalidPayload, 'create needs {id, type, payload}');
		const name = this.host.ctx.id.name;
		if (name !== undefined && name !== request.id) {
			throw new ValidationError(ErrorCode.InvalidId, `this object is "${name}"; it cannot hold workflow "${request.id}"`);
		}
		const result = await this.createInstance(request);
		// The first pass starts on a later macrotask (commitCreate defers it): the notice comes before it.
		if (result.created) this.host.instanceCreated?.({ id: result.id, type: result.type });
		return result;
	}

	private async createInstance(request: { id: string; type: string; payload: unknown; parent?: unknown; attributes?: unknown; transplant?: unknown; group?: unknown }): Promise<CreateResult> {
		if (!this.host.storage.hasSchema) {
			// A refused create must leave a new object empty: check the input before creating tables.
			const prepared = await prepareCreate(this.host.registry, request.id, request.type, request.payload, request.parent, request.attributes, request.transplant, request.group);
			const empty = await this.host.storage.ensureSchema();
			return this.instance({ empty }).commitCreate(prepared);
		}
		return this.instance().create(request.id, request.type, request.payload, request.parent, request.attributes, request.transplant, request.group);
	}

	/** The engine of an instance that exists; NOT_FOUND (and no storage written) otherwise. */
	existing(): InstanceEngine {
		if (!this.host.storage.hasSchema) throw new NotFoundError('no such workflow instance');
		return this.instance();
	}

	/**
	 * Deletes the instance (see `InstanceEngine.delete`). An id whose storage is
	 * already gone but which has archived records: a plain delete erases the
	 * records (an erasure request reaches the archive too), an archiving delete
	 * keeps them and answers NOT_FOUND like any repeated delete.
	 */
	async delete(input: unknown): Promise<DeleteResult> {
		const options = checkDeleteOptions(input);
		if (this.host.storage.hasSchema) return this.instance().delete(options);
		// No storage: the id never existed, or was deleted. A plain delete erases its archived records,
		// if any; an archiving one must keep them (it is the retry of a delete that already archived).
		const bucket = this.host.env.ARCHIVE;
		const id = this.host.ctx.id.name;
		if (bucket && id !== undefined && !options.only && !options.archive && (await eraseArchive(bucket, id))) return { id, deleted: true };
		throw new NotFoundError('no such workflow instance');
	}

	/** A bulk job's action (engine/instance/bulk-receipt.ts `bulkActOn`). */
	bulkAct(input: unknown): Promise<'applied' | 'already'> {
		return bulkActOn(this, input);
	}

	/**
	 * The answer of the live instance or, once it is deleted, of its archive (NOT_FOUND if neither
	 * exists). Opening the archive reads its manifest (the status); `archived` reads the history's
	 * chunks it needs, if any.
	 */
	async orArchived<T>(live: (engine: InstanceEngine) => T, archived: (archived: ArchivedInstance) => T | Promise<T>, inline?: InlineRead): Promise<T> {
		try {
			return live(this.existing());
		} catch (error) {
			if (!isNotFound(error)) throw error;
			// A child its parent ran inline is read from the parent until it is published here.
			const fromParent = inline && !this.host.storage.hasSchema ? await this.readFromParent(inline) : undefined;
			if (fromParent !== undefined) return fromParent as T;
			const bucket = this.host.env.ARCHIVE;
			if (!bucket) throw error;
			const found = await readArchive(bucket, this.host.ctx.id.name!);
			if (!found) throw error;
			return archived(found);
		}
	}

	/** See `InstanceAccess.published`: the parent that holds this child inline publishes it, then it is read here. */
	async published(): Promise<InstanceEngine> {
		const id = this.host.ctx.id.name;
		if (!this.host.storage.hasSchema && id !== undefined) {
			for (const parent of inlineParentsOf(id)) {
				try {
					if (await callOperation(this.host.env, 'publishInlineChild', { id: parent, childId: id })) break;
				} catch (error) {
					if (!isNotFound(error)) throw error;
				}
			}
		}
		return this.existing();
	}

	/**
	 * Opens a subscriber's stream (instance-stream-feed.ts). A child its parent runs (or ran) inline
	 * and has not published yet is published first, as for an event or a control (`published`): its
	 * stream is its own object's, which then holds the run from its first record on. A step of the
	 * child still running after 5 s answers 409 INVALID_STATE, to be opened again.
	 */
	async openStream(request: Request): Promise<Response> {
		if (!this.host.storage.hasSchema && request.headers.get('upgrade')?.toLowerCase() === 'websocket') {
			try {
				await this.published();
			} catch (error) {
				if (!isNotFound(error)) {
					if (error instanceof ShardflowError && error.code === ErrorCode.InvalidState) return refuse(409, error.code, error.message);
					throw error;
				}
			}
		}
		return this.stream.accept(request);
	}

	/**
	 * The answer of the parent that holds this child inline (engine/instance/inline-child.ts), or undefined
	 * when no candidate parent holds it (`inlineParentsOf`: only ids with `::` have any).
	 */
	private async readFromParent(read: InlineRead): Promise<unknown> {
		const id = this.host.ctx.id.name;
		if (id === undefined) return undefined;
		for (const parent of inlineParentsOf(id)) {
			try {
				return await callOperation(this.host.env, 'inlineChildView', { id: parent, childId: id, read });
			} catch (error) {
				if (!isNotFound(error)) throw error;
			}
		}
		return undefined;
	}

	/** The entry the index should hold for this instance, or null if there is no such instance. Writes nothing. */
	currentIndexEntry(): IndexEntry | null {
		return this.host.storage.hasSchema ? this.instance().currentIndexEntry() : null;
	}

	/**
	 * The alarm: the engine takes it, and the handler lasts until the work it started is done (the pass, its index
	 * delivery, inline children's publishing), within `ALARM_HOLDS_WORK_MS`, so that the invocation's trace holds
	 * all of it (alarm-hold.ts). `retryCount`: the runtime's count of this alarm's retries (its `AlarmInvocationInfo`;
	 * 0 on its first try). The first try's first `WATCHDOG_MS` also hold the alarm writes that only make a crash retried,
	 * where the host holds them (the compact layout's format 2: InstanceEngine.alarmAwaitingPass): the runtime runs an
	 * alarm whose handler died again. A retry guards its work with them as every alarm did before.
	 */
	async alarm(retryCount = 0): Promise<void> {
		this.alarmSlot.at = null;
		if (!this.host.storage.hasSchema) return;
		const engine = this.instance();
		if (retryCount === 0) await engine.alarmAwaitingPass();
		else engine.alarm();
		await holdFor(this.idle());
	}

	/** Resolves once the replay loop (and index delivery, unless `index: false`) is idle; at once for an engine never started. */
	async idle(options?: { index?: boolean }): Promise<void> {
		await this.engine?.idle(options);
	}

	/** The engine, built on first use; `start` tells its store what it knows of the tables (see `StoreStart`). */
	private instance(start?: StoreStart): InstanceEngine {
		if (this.engine) return this.engine;
		const { ctx, env, registry, storage, now, wrapStepFunction } = this.host;
		const host = instanceHost(ctx, env, registry, storage.db, this.alarmSlot, now, () => this.destroy(), { ...start, tables: storage.firstWrite, compact: storage.compact }, () => this.stream.historyAppended());
		this.store = host.store;
		return (this.engine = new InstanceEngine({ ...host, wrapStepFunction }));
	}

	/**
	 * The last step of a deletion: the alarm and every byte of storage go, and
	 * the next call finds an empty object (a create starts a new instance).
	 * Nothing else runs on this object meanwhile.
	 */
	private destroy(): Promise<void> {
		const { ctx, storage } = this.host;
		return ctx.blockConcurrencyWhile(async () => {
			await ctx.storage.deleteAlarm();
			await ctx.storage.deleteAll();
			storage.forget();
			this.engine = undefined;
			this.store = undefined;
			this.stream.endAll('deleted');
			this.alarmSlot.at = null;
		});
	}
}

function isNotFound(error: unknown): boolean {
	return error instanceof ShardflowError && error.code === ErrorCode.NotFound;
}
