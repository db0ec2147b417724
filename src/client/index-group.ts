import { resolveGroups, type ResolvedGroup, type ResolvedGroups } from '../engine/groups/groups';
import { ErrorCode, ValidationError } from '../engine/support/errors';

/** What the index needs of a layout's groups: a registry has them; `defineIndexLayout` may (its `groups` option). */
export interface LayoutGroups {
	groups?: ResolvedGroups;
}

const NO_GROUPS = resolveGroups();

/**
 * The group a read of the index is in (docs/residency.md): the one named, else the default
 * group. A name the layout does not declare is refused (INVALID_GROUP), never read from the
 * default group: listing "eu" must not quietly answer with the default group's instances.
 */
export function groupOfLayout(layout: LayoutGroups, name: string | undefined): ResolvedGroup {
	const groups = layout.groups ?? NO_GROUPS;
	if (name === undefined) return groups.defaultGroup;
	const group = groups.get(name);
	if (!group) {
		throw new ValidationError(ErrorCode.InvalidGroup, `no group ${JSON.stringify(name).slice(0, 60)}; declared groups: ${groups.list().map((g) => g.name).join(', ')}`);
	}
	return group;
}

/** Every group of a layout by name (the default group's included), for a read across groups. */
export function groupNames(layout: LayoutGroups): string[] {
	return (layout.groups ?? NO_GROUPS).list().map((group) => group.name);
}
