/**
 * The group part of an id and of every engine object's name (docs/residency.md).
 *
 * An instance of a group other than the default one has an id `<tag>~<local>`, and every
 * engine object of that group (index shards, backlog, limiters, bulk jobs) the name
 * `<tag>~<name it would have in the default group>`. The tag is `<group>` or, for a group
 * restricted to a jurisdiction, `<group>.<jurisdiction>` (`eu.eu~0193...`, `acme-de.eu~order-1`).
 * The `~` was never allowed in an id (support/ids.ts), so every id that existed before
 * groups has no tag and keeps meaning the default group, in the namespace it was created in.
 *
 * The jurisdiction is in the tag, not looked up from the group's declaration, so that anyone
 * holding an id (a caller Worker without the registry, an old release's client, the dashboard)
 * reaches the object with no lookup, and so that an id keeps reaching its data even if the
 * code's declaration of the group changes later (its data cannot move: docs/residency.md).
 */

import { ErrorCode, ValidationError } from './errors';

/** The jurisdictions a Durable Object namespace can be restricted to (workers-types' `DurableObjectJurisdiction`). */
export const JURISDICTIONS = ['eu', 'fedramp', 'fedramp-high', 'us'] as const;
export type Jurisdiction = (typeof JURISDICTIONS)[number];

/** Separates a name's group tag from the rest. Never part of an id of the default group. */
export const GROUP_SEPARATOR = '~';

/** A group name: lower-case letters, digits and `-`, 1-32, starting with a letter or digit (no `.`, no `~`). */
export const GROUP_NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,31}$/;

/** Where an object lives: the group and, if it has one, its jurisdiction. `tag` is what its names start with (null: the default group). */
export interface GroupPlace {
	group: string | null;
	jurisdiction: Jurisdiction | null;
	tag: string | null;
}

/** The place of the default group: no tag, the namespace without a jurisdiction. */
export const DEFAULT_PLACE: GroupPlace = Object.freeze({ group: null, jurisdiction: null, tag: null });

export function isJurisdiction(value: unknown): value is Jurisdiction {
	return typeof value === 'string' && (JURISDICTIONS as readonly string[]).includes(value);
}

/** The tag of a group (`eu.eu`, `acme`). */
export function groupTag(group: string, jurisdiction: Jurisdiction | null): string {
	return jurisdiction === null ? group : `${group}.${jurisdiction}`;
}

/**
 * The place a name (an instance id or an engine object's name) says it lives in, and the
 * rest of the name. A name without `~` is the default group's. Throws `INVALID_ID` for a
 * tag that is not `<group>` or `<group>.<jurisdiction>`.
 */
export function splitGroupTag(name: string): { place: GroupPlace; rest: string } {
	// An engine object of the default group starts `__` and may hold a `~` further on (a limiter's key).
	const at = name.startsWith('__') ? -1 : name.indexOf(GROUP_SEPARATOR);
	if (at < 0) return { place: DEFAULT_PLACE, rest: name };
	const tag = name.slice(0, at);
	const dot = tag.indexOf('.');
	const group = dot < 0 ? tag : tag.slice(0, dot);
	const jurisdiction = dot < 0 ? null : tag.slice(dot + 1);
	if (!GROUP_NAME_PATTERN.test(group) || (jurisdiction !== null && !isJurisdiction(jurisdiction))) {
		throw new ValidationError(
			ErrorCode.InvalidId,
			`invalid group in ${JSON.stringify(name.slice(0, 120))}: an id's group part is <group>~ or <group>.<jurisdiction>~ (group: ${GROUP_NAME_PATTERN}, jurisdiction: ${JURISDICTIONS.join(', ')})`,
		);
	}
	return { place: { group, jurisdiction: jurisdiction as Jurisdiction | null, tag }, rest: name.slice(at + 1) };
}

/** The place a name says it lives in (see `splitGroupTag`). */
export function placeOf(name: string): GroupPlace {
	return splitGroupTag(name).place;
}

/** A name in a place: `name` itself in the default group, `<tag>~<name>` in any other. */
export function inPlace(place: GroupPlace, name: string): string {
	return place.tag === null ? name : `${place.tag}${GROUP_SEPARATOR}${name}`;
}

/** Two places are the same group (and so the same jurisdiction). */
export function samePlace(a: GroupPlace, b: GroupPlace): boolean {
	return a.tag === b.tag;
}
