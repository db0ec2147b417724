import { CURSOR_KEY_OBJECT } from '../../engine/cursor';
import { WrongRoleError } from '../../engine/errors';
import { BACKLOG_PREFIX } from '../../engine/index-backlog';
import { INDEX_PREFIX } from '../../engine/shard';
import { SCHEDULE_PREFIX } from '../../engine/schedule-name';
import { LIMIT_PREFIX } from '../../engine/concurrency';
import { BULK_PREFIX } from '../../engine/bulk-job';

/** What an object of the one Durable Object class is, decided by its name. */
export type RoleKind = 'instance' | 'index' | 'backlog' | 'keys' | 'schedule' | 'limiter' | 'bulk';

/**
 * The role an object plays, from its name alone: `__index:<type>:<n>` is an
 * index shard, `__backlog:<type>` a type's delivery backlog, `__keys` the
 * engine's key store, `__schedule:<type>` a type's schedule, `__limit:<type>:<key>`
 * the concurrency limiter of a key, `__bulk:<id>` a bulk operation, any other name a workflow instance (a reserved `__` id
 * is refused by the instance's create). Every object is reached by name
 * (`idFromName`), and the runtime tells it that name in `ctx.id.name`; an
 * object without one was not created by shardflow and has no role.
 */
export function roleKindOf(name: string | undefined): RoleKind | undefined {
	if (name === undefined) return undefined;
	if (name === CURSOR_KEY_OBJECT) return 'keys';
	if (name.startsWith(INDEX_PREFIX)) return 'index';
	if (name.startsWith(BACKLOG_PREFIX)) return 'backlog';
	if (name.startsWith(SCHEDULE_PREFIX)) return 'schedule';
	if (name.startsWith(LIMIT_PREFIX)) return 'limiter';
	if (name.startsWith(BULK_PREFIX)) return 'bulk';
	return 'instance';
}

const ROLE_NAMES: Record<RoleKind, string> = {
	instance: 'a workflow instance',
	index: 'an index shard',
	backlog: 'a delivery backlog',
	keys: "the engine's key store",
	schedule: "a type's schedule",
	limiter: 'a concurrency limiter',
	bulk: 'a bulk operation',
};

/** The typed error for a call meant for another role. */
export function wrongRole(actual: RoleKind | undefined, expected: RoleKind): WrongRoleError {
	const what = actual === undefined ? 'an object without a name (shardflow reaches its objects with idFromName)' : ROLE_NAMES[actual];
	return new WrongRoleError(`this object is ${what}, not ${ROLE_NAMES[expected]}`);
}
