import type { Registry } from '../engine/definition/registry';
import type { ScheduleInfo } from '../engine/schedule/schedule-engine';
import type { ShardflowEnv } from './instance-client';
import { unwrap } from './rpc';
import { scheduleStub } from './stubs';


/**
 * Calls on a type's schedule (`static schedule`). Each answers where the
 * schedule stands; a type without a schedule is NOT_FOUND.
 * @example await schedules.pause(env, 'report');
 */
export const schedules = {
	/** Creates or updates the schedule from the deployed code and arms it (what the Worker does after a deploy). */
	wake: (env: ShardflowEnv, type: string): Promise<ScheduleInfo> => unwrap(scheduleStub(env, type).scheduleWake()),
	/** No tick runs until a resume. */
	pause: (env: ShardflowEnv, type: string): Promise<ScheduleInfo> => unwrap(scheduleStub(env, type).schedulePause()),
	/** Runs again from the next tick after now (ticks passed while paused are not run). */
	resume: (env: ShardflowEnv, type: string): Promise<ScheduleInfo> => unwrap(scheduleStub(env, type).scheduleResume()),
};

/** Types of a registry whose class declares `static schedule` (not checked here: the host checks them at start-up). */
export function declaredScheduleTypes(registry: Registry): string[] {
	return registry.types().filter((type) => (registry.get(type).workflow as { schedule?: unknown }).schedule !== undefined);
}

/** Wakes every schedule of the registry: each picks up the deployed cron and arms its alarm. */
export async function wakeSchedules(env: ShardflowEnv, registry: Registry): Promise<ScheduleInfo[]> {
	return Promise.all(declaredScheduleTypes(registry).map((type) => schedules.wake(env, type)));
}
