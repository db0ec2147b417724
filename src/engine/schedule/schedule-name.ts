// Names only, without the cron parser: callers (the client, workflow files) import this.

// The schedule object's name is built and parsed in object-names.ts.

/**
 * The id of the instance a tick creates: the same tick always names the same
 * instance, so a tick retried after a crash (or handled twice) creates one.
 * @example scheduledInstanceId('report', Date.UTC(2026, 0, 1, 6)) // 'report:sched:2026-01-01T06:00:00Z'
 */
export function scheduledInstanceId(type: string, tick: number): string {
	return `${type}:sched:${new Date(tick).toISOString().replace(/\.000Z$/, 'Z')}`;
}

/** The shape of `scheduledInstanceId`'s ids (the milliseconds appear only for sub-second ticks). */
const TICK_ID = /^[a-z0-9][a-z0-9_-]{0,62}:sched:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{3})?Z$/;

/**
 * Whether an id is one a schedule tick creates. Such ids are reserved for the
 * schedule: a create that names one from the API or a helper is refused, so no
 * caller can take a future tick's id first (and make the tick refused).
 */
export function isScheduledInstanceId(id: string): boolean {
	return TICK_ID.test(id);
}
