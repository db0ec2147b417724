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
	const what =
		actual === undefined
			? "an object without a name (shardflow reaches its objects with idFromName; under `wrangler dev`, a Worker served by another wrangler process reaches them without their names, cloudflare/workers-sdk#15496: serve both Workers in one `wrangler dev -c caller/wrangler.jsonc -c wrangler.jsonc`, docs/installing.md)"
			: ROLE_NAMES[actual];
	return new WrongRoleError(`this object is ${what}, not ${ROLE_NAMES[expected]}`);
}
