import type { GroupChoice, ResolvedGroups } from './groups';

/**
 * What this isolate knows of each type's placement, from every registry it defined
 * (`defineRegistry` calls `learnPlacements`): so a static helper (`PaymentWorkflow.create(env, ...)`)
 * in a Worker that imports the registry places a create without an id in the type's group
 * (operations/create-placement.ts), as the REST API does with the registry it is given.
 */
export interface KnownPlacement {
	groups: ResolvedGroups;
	choice: GroupChoice | undefined;
}

/** Per type name; null: two registries of this isolate place the type differently, so the caller does not guess. */
const known = new Map<string, KnownPlacement | null>();

/** Remembers a registry's placements (a registry without groups adds nothing). */
export function learnPlacements(groups: ResolvedGroups, types: Iterable<[string, GroupChoice | undefined]>): void {
	if (!groups.declared) return;
	const layout = (g: ResolvedGroups) => g.list().map((group) => `${group.name}=${group.place.tag}`).join();
	for (const [type, choice] of types) {
		const before = known.get(type);
		if (before === undefined) known.set(type, { groups, choice });
		else if (before !== null && (before.choice !== choice || layout(before.groups) !== layout(groups))) known.set(type, null);
	}
}

/** The placement of a type this isolate learnt, if it knows one for sure. */
export function knownPlacement(type: string): KnownPlacement | undefined {
	return known.get(type) ?? undefined;
}
