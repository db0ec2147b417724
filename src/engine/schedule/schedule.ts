import { Cron } from 'croner';
import type { Registry } from '../definition/registry';

export { scheduledInstanceId } from './schedule-name';

/**
 * `static schedule` of a workflow class: create an instance at each tick of
 * `cron` (five fields, or six with seconds first; UTC), with `payload`.
 *
 * @example
 * class Report extends Workflow<{ scope: string }> {
 *   static override readonly type = 'report';
 *   static schedule = { cron: '0 6 * * *', payload: { scope: 'daily' }, overlap: 'skip' } as const;
 * }
 */
export interface ScheduleDefinition {
	cron: string;
	/** The payload of every scheduled instance (checked against `static payload` when one is given). */
	payload?: unknown;
	/** `skip` (default): a tick is skipped while the previous scheduled instance is unfinished. `allow`: every tick starts one. */
	overlap?: ScheduleOverlap;
}

export type ScheduleOverlap = 'skip' | 'allow';

/** A type's schedule, checked. */
export interface ResolvedSchedule {
	type: string;
	cron: string;
	payload: unknown;
	overlap: ScheduleOverlap;
}

/** The schedule a type declares (`static schedule`), or undefined. Throws a configuration error naming the type if it is malformed. */
export function scheduleOf(registry: Registry, type: string): ResolvedSchedule | undefined {
	if (!registry.has(type)) return undefined;
	const declared = (registry.get(type).workflow as { schedule?: unknown }).schedule;
	if (declared === undefined) return undefined;
	if (!declared || typeof declared !== 'object') throw new Error(`${type}: static schedule must be {cron, payload?, overlap?}`);
	const { cron, payload, overlap } = declared as ScheduleDefinition;
	if (typeof cron !== 'string') throw new Error(`${type}: static schedule.cron must be a cron string such as '*/5 * * * *'`);
	if (overlap !== undefined && overlap !== 'skip' && overlap !== 'allow') throw new Error(`${type}: static schedule.overlap must be 'skip' or 'allow'`);
	try {
		compileCron(cron);
	} catch (error) {
		throw new Error(`${type}: static schedule.cron ${JSON.stringify(cron)} is not a cron expression: ${(error as Error).message}`);
	}
	return { type, cron, payload, overlap: overlap ?? 'skip' };
}

/** Every scheduled type of a registry, checked (a malformed schedule throws, at start-up). */
export function scheduledTypes(registry: Registry): ResolvedSchedule[] {
	return registry.types().flatMap((type) => scheduleOf(registry, type) ?? []);
}

/** A cron expression's ticks in UTC, in milliseconds since the epoch. */
export interface CronTicks {
	/** The first tick strictly after `at`, or null if there is none. */
	after(at: number): number | null;
	/** The latest tick at or before `at`, or null. */
	atOrBefore(at: number): number | null;
}

export function compileCron(expression: string): CronTicks {
	// No function: croner only computes dates and starts no timer.
	const cron = new Cron(expression, { timezone: 'UTC', paused: true });
	return {
		after: (at) => cron.nextRun(new Date(at))?.getTime() ?? null,
		// Ticks fall on whole seconds and `previousRuns` answers strictly before its reference.
		atOrBefore: (at) => cron.previousRuns(1, new Date(Math.floor(at / 1000) * 1000 + 1000))[0]?.getTime() ?? null,
	};
}
