import { placeOf } from '../engine/support/group-id';

/** The group an id names (null: the default group, or an id no group part can be read from). */
export function groupOfId(id: string): string | null {
	try {
		return placeOf(id).group;
	} catch {
		return null;
	}
}

/** The jurisdiction an id names (null: none). */
export function jurisdictionOfId(id: string): string | null {
	try {
		return placeOf(id).jurisdiction;
	} catch {
		return null;
	}
}
