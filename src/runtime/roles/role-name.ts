import { WrongRoleError } from '../../engine/support/errors';
import type { RoleKind } from '../../engine/object-names';

/** The role an object plays, from its name alone (see engine/object-names.ts, which builds and parses every name). */
export { roleKindOf, type RoleKind } from '../../engine/object-names';

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
