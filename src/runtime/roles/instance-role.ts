import type { ShardflowEnv } from '../../client/instance-client';
import { ErrorCode, NotFoundError, ValidationError } from '../../engine/errors';
import type { IndexEntry } from '../../engine/index-entry';
import { InstanceEngine, prepareCreate, type CreateResult } from '../../engine/instance-engine';
import type { Registry } from '../../engine/registry';
import type { StepFunctionWrapper } from '../../engine/step-function-wrapper';
import { instanceHost, type AlarmSlot } from '../instance-host';
import type { ObjectStorage } from '../object-storage';

/** What the instance role needs from the object that hosts it. */
export interface InstanceRoleContext {
	ctx: DurableObjectState;
	env: ShardflowEnv;
	storage: ObjectStorage;
	registry: Registry;
	/** The clock of this instance (the runner's; a test runner moves it). */
	now(): number;
	/** The test kit's step-function wrapper of this instance (see `RunnerOptions.wrapStepFunctions`); unset in production. */
	wrapStepFunction?: StepFunctionWrapper | undefined;
}

/**
 * A workflow instance (any name not reserved by the engine): its replay loop,
 * steps, events and index outbox, all in the engine core; this role lends it
 * storage, the alarm and the namespace. Control operations reach it through
 * `existing()` (see `src/client/operations.ts`).
 */
export class InstanceRole {
	readonly kind = 'instance';
	private engine: InstanceEngine | undefined;
	private readonly alarmSlot: AlarmSlot = { at: null };

	constructor(private readonly host: InstanceRoleContext) {}

	/** Start-up of an object that has storage: remember the alarm it has set. */
	async opened(): Promise<void> {
		this.alarmSlot.at = await this.host.ctx.storage.getAlarm();
	}

	async create(request: { id: string; type: string; payload: unknown }): Promise<CreateResult> {
		if (!request || typeof request !== 'object') throw new ValidationError(ErrorCode.InvalidPayload, 'create needs {id, type, payload}');
		const name = this.host.ctx.id.name;
		if (name !== undefined && name !== request.id) {
			throw new ValidationError(ErrorCode.InvalidId, `this object is "${name}"; it cannot hold workflow "${request.id}"`);
		}
		if (!this.host.storage.hasSchema) {
			// A refused create must leave a new object empty: check the input before creating tables.
			const prepared = await prepareCreate(this.host.registry, request.id, request.type, request.payload);
			await this.host.storage.ensureSchema();
			return this.instance().commitCreate(prepared);
		}
		return this.instance().create(request.id, request.type, request.payload);
	}

	/** The engine of an instance that exists; NOT_FOUND (and no storage written) otherwise. */
	existing(): InstanceEngine {
		if (!this.host.storage.hasSchema) throw new NotFoundError('no such workflow instance');
		return this.instance();
	}

	/** The entry the index should hold for this instance, or null if there is no such instance. Writes nothing. */
	currentIndexEntry(): IndexEntry | null {
		return this.host.storage.hasSchema ? this.instance().currentIndexEntry() : null;
	}

	alarm(): void {
		this.alarmSlot.at = null;
		if (!this.host.storage.hasSchema) return;
		const engine = this.instance();
		if (engine.exists) engine.alarm();
	}

	/** Resolves once the replay loop (and index delivery, unless `index: false`) is idle; at once for an engine never started. */
	async idle(options?: { index?: boolean }): Promise<void> {
		await this.engine?.idle(options);
	}

	private instance(): InstanceEngine {
		const { ctx, env, registry, storage, now, wrapStepFunction } = this.host;
		return (this.engine ??= new InstanceEngine({ ...instanceHost(ctx, env, registry, storage.db, this.alarmSlot, now), wrapStepFunction }));
	}
}
