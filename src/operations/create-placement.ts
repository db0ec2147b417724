import { inPlace, placeOf } from '../engine/support/group-id';
import { placeCreate, type GroupChoice, type ResolvedGroups } from '../engine/groups/groups';
import { knownPlacement } from '../engine/groups/known-placements';
import { uuidv7 } from '../engine/support/ids';

/**
 * Where a create is sent (docs/residency.md). The instance decides and checks its own group
 * (engine/instance/create.ts); the caller only has to reach the right object: an id in the
 * group's place and, for a new object, the group's location hint. A caller that knows the
 * registry (the REST API, and the static helpers in any Worker that imports it) places a
 * create without an id itself; one that does not sends it to the default group, where a type
 * placed elsewhere refuses it (400 GROUP_MISMATCH) before anything is stored.
 */

/** How a create is sent: its id (generated in the group's place when absent) and the location hint for its object. */
export interface CreateRoute {
	id: string;
	locationHint?: string;
}

/**
 * The id and hint of a create. `groups`/`choice`: the caller's registry (the REST API);
 * without, what `learnPlacements` (engine/groups/known-placements.ts) knows of the type. A given id is never changed (the instance
 * checks it); only a generated one is put in the group's place.
 */
export function routeCreate(input: { id?: string; type: string; payload?: unknown; group?: string }, registry?: { groups: ResolvedGroups; choice: GroupChoice | undefined }): CreateRoute {
	const placement = registry ?? knownPlacement(input.type);
	if (!placement) return { id: input.id ?? uuidv7() };
	let group;
	try {
		const requested = input.group ?? (input.id !== undefined ? placeOf(input.id).group ?? undefined : undefined);
		group = placeCreate(placement.groups, input.type, placement.choice, input.payload, requested).group;
	} catch {
		// The instance refuses it with the reason (a group function that throws, a mismatch).
		return { id: input.id ?? uuidv7() };
	}
	const id = input.id ?? inPlace(group.place, uuidv7());
	return { id, ...(group.locationHint !== null && placeOf(id).tag === group.place.tag ? { locationHint: group.locationHint } : {}) };
}
