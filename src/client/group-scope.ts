import { inPlace, type GroupPlace } from '../engine/support/group-id';
import { KEYS_OBJECT } from '../engine/object-names';
import { namespace, type ShardflowEnv, type WorkflowRunnerNamespace } from './instance-client';
import { groupOfLayout, type LayoutGroups } from './index-group';

/**
 * An env whose engine objects are a group's (docs/residency.md): every name of an engine
 * object (`__index:...`, `__backlog:...`, `__limit:...`, `__bulk:...`, `__schedule:...`) gets the
 * group's tag, so the index shards, backlog, limiters and bulk jobs of a group live in its
 * jurisdiction, with names of their own. Instance ids carry their own group and pass unchanged;
 * `__keys` (the engine's signing keys, no instance data) is the one object every group shares.
 * The default group's env is the env itself: nothing changes for it.
 *
 * `archive`: the group's archive bucket (its `archive` binding), or null to hide `ARCHIVE`, so
 * nothing of the group is archived outside its jurisdiction unless the registry says where.
 */
export function groupScoped<E extends ShardflowEnv>(env: E, place: GroupPlace, archive?: { bucket: unknown } | null): E {
	if (place.tag === null) return env;
	const scoped: WorkflowRunnerNamespace & { [SCOPED_TAG]: string } = {
		[SCOPED_TAG]: place.tag,
		idFromName: (name) => env.WORKFLOW_RUNNER.idFromName(name),
		get: (id, options) => env.WORKFLOW_RUNNER.get(id, options),
		// Resolved at the call, as `namespace(env)` is everywhere: a missing binding is reported where it is used.
		getByName: (name: string, options?: { locationHint?: string }) => namespace(env).getByName(scopedName(place, name), options),
	};
	const out = { ...env, WORKFLOW_RUNNER: scoped } as unknown as Record<string, unknown>;
	if (archive !== undefined) {
		if (archive === null) delete out.ARCHIVE;
		else out.ARCHIVE = archive.bucket;
	}
	return out as E;
}

/**
 * The env of a read or walk of one group by name (the admin walks, docs/residency.md): its
 * engine objects and its own archive bucket (none for a jurisdiction group that names none).
 * An undeclared group is refused (INVALID_GROUP); none: the env itself (the default group).
 */
export function groupEnv<E extends ShardflowEnv>(env: E, layout: LayoutGroups, name: string | undefined): E {
	if (name === undefined) return env;
	const group = groupOfLayout(layout, name);
	return groupScoped(env, group.place, archiveOf(env, group));
}

/** A group's archive bucket in `env` (null: none, so `ARCHIVE` is hidden from its objects). */
export function archiveOf(env: ShardflowEnv, group: { archive: string | null }): { bucket: unknown } | null {
	const bucket = group.archive === null ? undefined : (env as unknown as Record<string, unknown>)[group.archive];
	return bucket === undefined ? null : { bucket };
}

/** Marks a group's namespace with its tag, so a walk knows whose index it walks (`groupTagOf`). */
const SCOPED_TAG = Symbol('shardflow.groupTag');

/**
 * The tag of the group whose engine objects `env` reaches (`groupScoped`); null: the default
 * group's. For what must stay in the group it came from, such as an admin walk's cursor.
 */
export function groupTagOf(env: ShardflowEnv): string | null {
	return (env.WORKFLOW_RUNNER as { [SCOPED_TAG]?: string } | undefined)?.[SCOPED_TAG] ?? null;
}

/** The name of an engine object in `place`; instance ids, `__keys` and names already in a group are left as they are. */
export function scopedName(place: GroupPlace, name: string): string {
	// A name in a group starts with its tag, never with `__` (a group name starts with a letter or digit).
	if (!name.startsWith('__') || name === KEYS_OBJECT) return name;
	return inPlace(place, name);
}
