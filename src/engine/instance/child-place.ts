import type { Registry } from '../definition/registry';
import type { GroupPlace } from '../support/group-id';
import { placeCreate } from '../groups/groups';

/**
 * Where a child of `type` with `payload` would be created when nothing else asks (its type's
 * pinned group, the one it chooses from the payload, else the default group; a fallback's
 * default group): what a parent's `allowCrossGroup` invoke names its child's id after
 * (children/cross-group-child.ts). The child's create places it again and checks the id.
 */
export function childPlaceOf(registry: Registry, type: string, payload: unknown): GroupPlace {
	const entry = registry.get(type);
	return placeCreate(registry.groups, type, entry.group, payload).group.place;
}
