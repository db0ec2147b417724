// Names only, without the cron parser: callers (the client, workflow files) import this.

/** The Durable Object name of a type's schedule: under `__`, so no workflow id can take it. */
export const SCHEDULE_PREFIX = '__schedule:';

export function scheduleName(type: string): string {
	return `${SCHEDULE_PREFIX}${type}`;
}

/** The type a schedule object runs, from its name. */
export function scheduleTypeOf(name: string): string {
	return name.slice(SCHEDULE_PREFIX.length);
}

/**
 * The id of the instance a tick creates: the same tick always names the same
 * instance, so a tick retried after a crash (or handled twice) creates one.
 * @example scheduledInstanceId('report', Date.UTC(2026, 0, 1, 6)) // 'report:sched:2026-01-01T06:00:00Z'
 */
export function scheduledInstanceId(type: string, tick: number): string {
	return `${type}:sched:${new Date(tick).toISOString().replace(/\.000Z$/, 'Z')}`;
}
