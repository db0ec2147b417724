import type { ShardflowEnv } from '../client/instance-client';
import { groupScoped } from '../client/group-scope';
import { DEFAULT_PLACE, placeOf, type GroupPlace } from '../engine/support/group-id';
import { groupAt } from '../engine/groups/groups';
import type { Registry } from '../engine/definition/registry';
import { ErrorCode, ShardflowError } from '../engine/support/errors';

/** What an object knows of its group at construction: its place, the env its role sees, and whether it is where its name says. */
export interface ObjectPlace {
	place: GroupPlace;
	env: ShardflowEnv;
	misplaced?: ShardflowError;
}

/**
 * An object's group, from its name (engine/groups/group-id.ts), and the env its role works
 * with: the group's engine objects (group-scope.ts) and the group's archive bucket (none for a
 * group with a jurisdiction that names none, so nothing is archived outside it).
 *
 * An object whose name says a jurisdiction must have been reached through that jurisdiction's
 * namespace (`ctx.id.jurisdiction`, set by Cloudflare): one reached otherwise (a caller that does
 * not route by group, such as an older release's client) refuses every call with
 * WRONG_JURISDICTION before touching its storage, so no data of the group is written outside it.
 * workerd (wrangler dev, the vitest pool) does not implement jurisdictions (group-namespace.ts), so
 * no id there has one: an id without one is accepted where the runtime itself says so
 * (`jurisdictionsUnimplemented`), not where a variable says development. The engine Worker of a
 * multi-Worker `wrangler dev` gets no `--var` (only the first Worker does), and deployed, a
 * variable could not make the check lax.
 */
export function objectPlace(id: { name?: string; jurisdiction?: string }, env: ShardflowEnv, registry: Registry): ObjectPlace {
	let place = DEFAULT_PLACE;
	try {
		if (id.name !== undefined) place = placeOf(id.name);
	} catch {
		return { place, env }; // a malformed group part: no role (roleKindOf says the same)
	}
	const actual = id.jurisdiction ?? null;
	if (actual !== place.jurisdiction && !(actual === null && jurisdictionsUnimplemented(env))) {
		const misplaced = new ShardflowError(
			ErrorCode.WrongJurisdiction,
			`object "${id.name}" belongs to ${place.jurisdiction === null ? 'no jurisdiction' : `jurisdiction "${place.jurisdiction}"`} but was reached through ${actual === null ? 'the namespace without one' : `jurisdiction "${actual}"`}: reach it with a shardflow client that routes by group (docs/residency.md)`,
		);
		return { place, env, misplaced };
	}
	if (place.tag === null) return { place, env };
	const group = registry.problem ? undefined : groupAt(registry.groups, place);
	// A group this deployment does not declare (any more): its objects keep working; nothing is archived outside a jurisdiction.
	const archive = group ? group.archive : place.jurisdiction === null ? 'ARCHIVE' : null;
	const bucket = archive === null ? undefined : (env as unknown as Record<string, unknown>)[archive];
	return { place, env: groupScoped(env, place, bucket === undefined ? null : { bucket }) };
}

/** Per namespace: whether this runtime lacks jurisdictions (it does not change within an isolate). */
const unimplemented = new WeakMap<object, boolean>();

/**
 * Whether this runtime gives no object a jurisdiction: workerd throws "Jurisdiction restrictions
 * are not implemented in workerd" for any id of a jurisdiction's namespace (the same test the
 * client's emulation makes, client/group-namespace.ts). Deployed, the id is made and the check
 * stays strict. A local call (no I/O), made once per namespace.
 */
export function jurisdictionsUnimplemented(env: ShardflowEnv): boolean {
	const ns = env?.WORKFLOW_RUNNER as { jurisdiction?(j: string): { idFromName(name: string): unknown } } | undefined;
	if (!ns || typeof ns.jurisdiction !== 'function') return false;
	const known = unimplemented.get(ns);
	if (known !== undefined) return known;
	let answer = false;
	try {
		ns.jurisdiction('eu').idFromName('__probe');
	} catch (error) {
		answer = /not implemented in workerd/i.test(String((error as Error)?.message));
	}
	unimplemented.set(ns, answer);
	return answer;
}
