import { logFormOf, printLog } from '../../engine/support/engine-log';
import { describeThrown } from '../../engine/support/thrown-value';
import type { ScheduleAccess } from '../../operations/role-calls';
import type { ShardflowEnv } from '../../client/instance-client';
import { instances } from '../../client/instance-client';
import { ErrorCode, ShardflowError } from '../../engine/support/errors';
import type { Registry } from '../../engine/definition/registry';
import { scheduleOf } from '../../engine/schedule/schedule';
import { scheduleTypeOf } from '../../engine/object-names';
import { ScheduleEngine, type ScheduleInfo } from '../../engine/schedule/schedule-engine';
import { FINISHED_STATUSES } from '../../engine/support/statuses';
import type { ObjectStorage } from '../object-storage';
import { DrizzleScheduleStore } from '../schedule-store';

export interface ScheduleRoleContext {
	ctx: DurableObjectState;
	env: ShardflowEnv;
	storage: ObjectStorage;
	registry: Registry;
	now(): number;
}

/**
 * A type's schedule (`__schedule:<type>`): creates the type's instances at
 * its cron's ticks from this object's alarm (see engine/schedule/schedule-engine.ts).
 * The schedule itself is code (`static schedule`); this object keeps where it
 * stands: paused or not, the next tick, the last runs.
 */
export class ScheduleRole implements ScheduleAccess {
	readonly kind = 'schedule';
	private engine: ScheduleEngine | undefined;

	constructor(private readonly host: ScheduleRoleContext) {}

	async wake(): Promise<ScheduleInfo> {
		return (await this.writable()).wake();
	}

	async pause(): Promise<ScheduleInfo> {
		return (await this.writable()).pause();
	}

	async resume(): Promise<ScheduleInfo> {
		return (await this.writable()).resume();
	}

	async alarm(): Promise<void> {
		if (!this.host.storage.hasSchema) return;
		try {
			await this.schedule().alarm();
		} catch (error) {
			// A schedule this code cannot run (a registry or cron the deploy broke): say so once per alarm
			// and look again in a minute, instead of failing the alarm into the runtime's retries.
			const type = scheduleTypeOf(this.host.ctx.id.name!);
			printLog({ severity: 'error', event: 'schedule.failed', type, error: describeThrown(error) }, logFormOf(this.host.env));
			await this.host.ctx.storage.setAlarm(this.host.now() + 60_000);
		}
	}

	private async writable(): Promise<ScheduleEngine> {
		const engine = this.schedule();
		// A type without a schedule answers NOT_FOUND before any table is created.
		engine.assertScheduled();
		await this.host.storage.ensureSchema();
		return engine;
	}

	private schedule(): ScheduleEngine {
		const { ctx, env, storage, registry, now } = this.host;
		const type = scheduleTypeOf(ctx.id.name!);
		return (this.engine ??= new ScheduleEngine(
			{
				store: new DrizzleScheduleStore(storage.db, ctx.storage),
				now,
				setAlarm: (at) => void (at === undefined ? ctx.storage.deleteAlarm() : ctx.storage.setAlarm(at)),
				createInstance: async (id, type, payload) => {
					await instances.create(env, { id, type, payload, scheduledTick: true });
				},
				isUnfinished: async (id) => {
					try {
						const entry = await instances.currentIndexEntry(env, { id });
						return entry !== null && !FINISHED_STATUSES.includes(entry.status);
					} catch (error) {
						if (error instanceof ShardflowError && error.code === ErrorCode.NotFound) return false;
						throw error;
					}
				},
			},
			registry.has(type) ? scheduleOf(registry, type) : undefined,
			type,
		));
	}
}
