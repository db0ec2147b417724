import type { Registry } from '../engine/definition/registry';
import type { ScheduleInfo } from '../engine/schedule/schedule-engine';
import type { ShardflowEnv } from './instance-client';
import { roleHelpers } from './stubs';

/**
 * Calls on a type's schedule (`static schedule`), one per call declared with a helper in
 * src/operations/role-calls.ts: `wake` (creates or updates the schedule from the deployed code
 * and arms it), `pause`, `resume`. Each answers where the schedule stands; a type without a
 * schedule is NOT_FOUND.
 * @example await schedules.pause(env, 'report');
 */
export const schedules = roleHelpers('schedule');

/** Types of a registry whose class declares `static schedule` (not checked here: the host checks them at start-up). */
export function declaredScheduleTypes(registry: Registry): string[] {
	return registry.types().filter((type) => (registry.get(type).workflow as { schedule?: unknown }).schedule !== undefined);
}

/** Wakes every schedule of the registry: each picks up the deployed cron and arms its alarm. */
export async function wakeSchedules(env: ShardflowEnv, registry: Registry): Promise<ScheduleInfo[]> {
	return Promise.all(declaredScheduleTypes(registry).map((type) => schedules.wake(env, type)));
}
