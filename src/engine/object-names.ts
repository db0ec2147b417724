/**
 * Every Durable Object name shardflow uses, built and parsed here and nowhere else.
 * One class plays every role, decided from the object's name alone:
 *
 * | name                   | role                                   |
 * |------------------------|----------------------------------------|
 * | `<id>`                 | a workflow instance                    |
 * | `__index:<type>:<n>`   | shard `n` of a type's index            |
 * | `__backlog:<type>`     | a type's index delivery backlog        |
 * | `__keys`               | the engine's key store                 |
 * | `__schedule:<type>`    | a type's schedule                      |
 * | `__limit:<type>:<key>` | the concurrency limiter of a key       |
 * | `__bulk:<id>`          | a bulk operation (a durable job)       |
 *
 * Engine names start with `__`, which no workflow id may (ids.ts), and type names have
 * no `:`, so every name parses back unambiguously.
 *
 * In a group other than the default one (engine/groups/group-id.ts) every name above starts
 * with the group's tag and `~` (`eu.eu~__index:<type>:<n>`, `eu.eu~<id>`): the role is read
 * from what follows it, the place from the tag.
 */
import { splitGroupTag } from './support/group-id';

export const INDEX_PREFIX = '__index:';
export const BACKLOG_PREFIX = '__backlog:';
export const SCHEDULE_PREFIX = '__schedule:';
export const LIMIT_PREFIX = '__limit:';
export const BULK_PREFIX = '__bulk:';
/** The engine-owned object (same namespace) that keeps the generated signing keys. */
export const KEYS_OBJECT = '__keys';

/** What an object of the one Durable Object class is, decided by its name. */
export type RoleKind = 'instance' | 'index' | 'backlog' | 'keys' | 'schedule' | 'limiter' | 'bulk';

/** A name, parsed: the role and what the name says about it. */
export type ObjectName =
	| { role: 'instance'; id: string }
	| { role: 'index'; type: string; shard: number }
	| { role: 'backlog'; type: string }
	| { role: 'keys' }
	| { role: 'schedule'; type: string }
	| { role: 'limiter'; type: string; key: string }
	| { role: 'bulk'; id: string };

/** The name of shard `n` of a type's index. */
export function shardName(type: string, n: number): string {
	return `${INDEX_PREFIX}${type}:${n}`;
}

/** The name of a type's delivery backlog. */
export function backlogName(type: string): string {
	return `${BACKLOG_PREFIX}${type}`;
}

/** The name of a type's schedule. */
export function scheduleName(type: string): string {
	return `${SCHEDULE_PREFIX}${type}`;
}

/** The name of the limiter of a type's concurrency key. */
export function limiterName(type: string, key: string): string {
	return `${LIMIT_PREFIX}${type}:${key}`;
}

/** The name of a bulk operation's object. */
export function bulkName(id: string): string {
	return `${BULK_PREFIX}${id}`;
}

/** Parses any object name (an instance's id included, with its group part; an engine object's name without it). */
export function parseObjectName(name: string): ObjectName {
	const { place, rest } = splitGroupTag(name);
	if (place.tag !== null) {
		const parsed = parseDefaultGroupName(rest);
		// An instance keeps its whole id; `__keys` has no group (a tagged one is not the key store).
		if (parsed.role === 'instance') return { role: 'instance', id: name };
		if (parsed.role === 'keys') return { role: 'instance', id: name };
		return parsed;
	}
	return parseDefaultGroupName(name);
}

function parseDefaultGroupName(name: string): ObjectName {
	if (name === KEYS_OBJECT) return { role: 'keys' };
	if (name.startsWith(INDEX_PREFIX)) {
		const rest = name.slice(INDEX_PREFIX.length);
		const colon = rest.lastIndexOf(':');
		return { role: 'index', type: rest.slice(0, colon), shard: Number(rest.slice(colon + 1)) };
	}
	if (name.startsWith(BACKLOG_PREFIX)) return { role: 'backlog', type: name.slice(BACKLOG_PREFIX.length) };
	if (name.startsWith(SCHEDULE_PREFIX)) return { role: 'schedule', type: name.slice(SCHEDULE_PREFIX.length) };
	if (name.startsWith(LIMIT_PREFIX)) {
		const rest = name.slice(LIMIT_PREFIX.length);
		const colon = rest.indexOf(':');
		return { role: 'limiter', type: rest.slice(0, colon), key: rest.slice(colon + 1) };
	}
	if (name.startsWith(BULK_PREFIX)) return { role: 'bulk', id: name.slice(BULK_PREFIX.length) };
	return { role: 'instance', id: name };
}

/** The role of an object from its name; undefined for an object without one (not created by shardflow). */
export function roleKindOf(name: string | undefined): RoleKind | undefined {
	if (name === undefined) return undefined;
	try {
		return parseObjectName(name).role;
	} catch {
		// A name with a malformed group part: no shardflow object has one (every name is built here).
		return undefined;
	}
}

/** The type a schedule object runs, from its name. */
export function scheduleTypeOf(name: string): string {
	return splitGroupTag(name).rest.slice(SCHEDULE_PREFIX.length);
}

/** The type and key of a limiter, from its name. */
export function limiterOf(name: string): { type: string; key: string } {
	const rest = splitGroupTag(name).rest.slice(LIMIT_PREFIX.length);
	const colon = rest.indexOf(':');
	return { type: rest.slice(0, colon), key: rest.slice(colon + 1) };
}
