/**
 * Groups: the policy axis of where an instance lives (docs/residency.md). A registry declares
 * its groups in code, each with a jurisdiction (or none) and an optional location hint; a type
 * pins a group or chooses one per create from the payload; a group nobody declared (or one
 * declared `deployed: false` without a jurisdiction) falls back to the default group, and the
 * create says so; an undeployed group with a jurisdiction refuses the create (GROUP_NOT_DEPLOYED)
 * unless its declaration says `fallback: true`.
 * The member axis (index shards) is per type and works inside each group alike.
 */

import { ErrorCode, ValidationError } from '../support/errors';
import { DEFAULT_PLACE, GROUP_NAME_PATTERN, groupTag, isJurisdiction, JURISDICTIONS, type GroupPlace, type Jurisdiction } from '../support/group-id';

/** Cloudflare's location hints (Durable Objects "Data location"): where a new object is placed first. */
export const LOCATION_HINTS = ['wnam', 'enam', 'sam', 'weur', 'eeur', 'apac', 'oc', 'afr', 'me'] as const;
export type LocationHint = (typeof LOCATION_HINTS)[number];

/** One group as the registry declares it. */
export interface GroupDeclaration {
	/** The jurisdiction its objects are restricted to (`env.WORKFLOW_RUNNER.jurisdiction(j)`); none: the namespace itself. */
	jurisdiction?: Jurisdiction;
	/** Where its new objects are created first (a hint: Cloudflare may place them elsewhere, within the jurisdiction). */
	locationHint?: LocationHint;
	/**
	 * `false`: declared (its ids are reserved and keep routing) but taking no creates yet: a create
	 * choosing it is refused (`GROUP_NOT_DEPLOYED`, 503) for a group with a jurisdiction, and falls
	 * back to the default group for one without (or with `fallback: true`). Default true.
	 */
	deployed?: boolean;
	/**
	 * While `deployed: false`, whether a create choosing the group goes to the default group instead
	 * (and says so) rather than being refused. Default: true for a group without a jurisdiction,
	 * false for one with: the default group has none, so falling back would write the instance's
	 * data outside the jurisdiction; `true` is that choice made explicitly.
	 */
	fallback?: boolean;
	/**
	 * The binding name of the R2 bucket its instances are archived to (create it in the same
	 * jurisdiction: `wrangler r2 bucket create <name> --jurisdiction eu`). Unset, a group with a
	 * jurisdiction archives nothing (its deletions go without an archive, an explicit
	 * `archive: true` is refused with ARCHIVE_NOT_CONFIGURED); `'ARCHIVE'`, the shared bucket,
	 * is the explicit opt-in to archive outside the jurisdiction. A group without one uses `ARCHIVE`.
	 */
	archive?: string;
}

/** The registry's groups (`defineRegistry(types, { groups })`). */
export interface GroupOptions {
	/** The default group's name (default `'default'`). It lives where every instance lived before groups: no jurisdiction, ids without a tag. */
	default?: string;
	/** Every group by name. The default group may be listed for a location hint; never with a jurisdiction. */
	groups?: Record<string, GroupDeclaration>;
}

/** How a type picks its group: pinned by name, or chosen per create from the (validated) payload. */
export type GroupChoice<Payload = any> = string | ((payload: Payload) => string);

/** A declared group, resolved. */
export interface ResolvedGroup {
	name: string;
	jurisdiction: Jurisdiction | null;
	locationHint: LocationHint | null;
	deployed: boolean;
	/** While undeployed: fall back to the default group (true) or refuse the create (false). */
	fallback: boolean;
	isDefault: boolean;
	/** Where its objects live and what their names start with. */
	place: GroupPlace;
	/** The binding of its archive bucket; null: none (archiving off for the group). */
	archive: string | null;
}

/** A registry's groups, resolved. */
export interface ResolvedGroups {
	/** The default group (always present, declared or not). */
	readonly defaultGroup: ResolvedGroup;
	/** Whether the registry declares any group besides the default: without, creates answer as before groups. */
	readonly declared: boolean;
	/** A group by name; undefined if not declared. */
	get(name: string): ResolvedGroup | undefined;
	/** Every group, the default first. */
	list(): ResolvedGroup[];
}

/** Why a create landed in the default group instead of the one chosen. */
export interface GroupFallback {
	requested: string;
	reason: 'unknown' | 'undeployed';
}

/** Where a create goes: its group, and the fallback if it is not the one chosen. */
export interface Placement {
	group: ResolvedGroup;
	fallback?: GroupFallback;
}

/** Checks and resolves a registry's group options; throws a message naming what is wrong. */
export function resolveGroups(options: GroupOptions = {}): ResolvedGroups {
	const defaultName = options.default ?? 'default';
	if (!GROUP_NAME_PATTERN.test(defaultName)) throw new Error(`groups.default must match ${GROUP_NAME_PATTERN}, got ${JSON.stringify(defaultName)}`);
	const declarations = options.groups ?? {};
	const resolved = new Map<string, ResolvedGroup>();
	const defaultDeclaration = declarations[defaultName] ?? {};
	if (defaultDeclaration.jurisdiction !== undefined) {
		throw new Error(
			`groups.groups.${defaultName} is the default group, which lives where every instance created before groups lives (the namespace without a jurisdiction): it cannot have a jurisdiction; declare another group for it`,
		);
	}
	if (defaultDeclaration.deployed === false) throw new Error(`groups.groups.${defaultName} is the default group: it cannot be undeployed (every fallback lands in it)`);
	resolved.set(defaultName, {
		name: defaultName,
		jurisdiction: null,
		locationHint: checkHint(defaultName, defaultDeclaration.locationHint),
		deployed: true,
		fallback: false,
		isDefault: true,
		place: DEFAULT_PLACE,
		archive: checkArchive(defaultName, defaultDeclaration.archive) ?? 'ARCHIVE',
	});
	for (const [name, declaration] of Object.entries(declarations)) {
		if (name === defaultName) continue;
		if (!GROUP_NAME_PATTERN.test(name)) throw new Error(`group name ${JSON.stringify(name)} must match ${GROUP_NAME_PATTERN}`);
		if (declaration === null || typeof declaration !== 'object') throw new Error(`groups.groups.${name} must be an object ({ jurisdiction?, locationHint?, deployed? })`);
		if (declaration.jurisdiction !== undefined && !isJurisdiction(declaration.jurisdiction)) {
			throw new Error(`groups.groups.${name}.jurisdiction must be one of ${JURISDICTIONS.join(', ')}, got ${JSON.stringify(declaration.jurisdiction)}`);
		}
		if (declaration.deployed !== undefined && typeof declaration.deployed !== 'boolean') throw new Error(`groups.groups.${name}.deployed must be a boolean`);
		if (declaration.fallback !== undefined && typeof declaration.fallback !== 'boolean') throw new Error(`groups.groups.${name}.fallback must be a boolean`);
		const jurisdiction = declaration.jurisdiction ?? null;
		resolved.set(name, {
			name,
			jurisdiction,
			locationHint: checkHint(name, declaration.locationHint),
			deployed: declaration.deployed ?? true,
			fallback: declaration.fallback ?? jurisdiction === null,
			isDefault: false,
			place: { group: name, jurisdiction, tag: groupTag(name, jurisdiction) },
			archive: checkArchive(name, declaration.archive) ?? (jurisdiction === null ? 'ARCHIVE' : null),
		});
	}
	const all = [...resolved.values()];
	return { defaultGroup: resolved.get(defaultName)!, declared: all.length > 1, get: (name) => resolved.get(name), list: () => all };
}

function checkArchive(group: string, binding: unknown): string | null {
	if (binding === undefined) return null;
	if (typeof binding !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(binding)) throw new Error(`groups.groups.${group}.archive must be the name of an R2 bucket binding, got ${JSON.stringify(binding)}`);
	return binding;
}

/** The declared group of a place (undefined: a group this registry does not declare). */
export function groupAt(groups: ResolvedGroups, place: GroupPlace): ResolvedGroup | undefined {
	return groups.list().find((group) => group.place.tag === place.tag);
}

function checkHint(group: string, hint: unknown): LocationHint | null {
	if (hint === undefined) return null;
	if (!(LOCATION_HINTS as readonly unknown[]).includes(hint)) throw new Error(`groups.groups.${group}.locationHint must be one of ${LOCATION_HINTS.join(', ')}, got ${JSON.stringify(hint)}`);
	return hint as LocationHint;
}

/** Checks a type's `group` option against the declared groups (at `defineRegistry`); throws a message. */
export function checkGroupChoice(type: string, choice: unknown, groups: ResolvedGroups): void {
	if (choice === undefined || typeof choice === 'function') return;
	if (typeof choice !== 'string') throw new Error(`${type}.group must be a group name or a function of the payload returning one`);
	if (!groups.get(choice)) {
		throw new Error(`${type}.group is ${JSON.stringify(choice)}, which the registry does not declare (declared: ${groups.list().map((g) => g.name).join(', ')}); declare it in defineRegistry(types, { groups: { groups: { ${choice}: { ... } } } })`);
	}
}

/**
 * The group a create goes to: the type's pinned group, else its choice from the payload, else
 * the one the create asks for, else the default. A chosen group that is not declared, or not
 * deployed, falls back to the default group (the answer and a log line say so), except an
 * undeployed group with a jurisdiction that does not opt into it (`GROUP_NOT_DEPLOYED`): a
 * residency obligation is not met by the default group. A create asking for a group the type's
 * own choice contradicts is refused (`GROUP_MISMATCH`).
 */
export function placeCreate(groups: ResolvedGroups, type: string, choice: GroupChoice | undefined, payload: unknown, requested?: string): Placement {
	if (requested !== undefined && (typeof requested !== 'string' || !GROUP_NAME_PATTERN.test(requested))) {
		throw new ValidationError(ErrorCode.InvalidGroup, `invalid group ${JSON.stringify(requested)?.slice(0, 60)}: a group name matches ${GROUP_NAME_PATTERN}`);
	}
	let chosen: string;
	if (choice === undefined) chosen = requested ?? groups.defaultGroup.name;
	else {
		chosen = typeof choice === 'string' ? choice : callChoice(type, choice, payload);
		if (requested !== undefined && requested !== chosen) {
			throw new ValidationError(
				ErrorCode.GroupMismatch,
				`workflow type "${type}" ${typeof choice === 'string' ? 'is pinned to' : 'chooses, for this payload,'} group "${chosen}", not "${requested}" that the create asks for`,
			);
		}
	}
	const group = groups.get(chosen);
	if (group === undefined) return { group: groups.defaultGroup, fallback: { requested: chosen, reason: 'unknown' } };
	if (!group.deployed) {
		if (group.fallback) return { group: groups.defaultGroup, fallback: { requested: chosen, reason: 'undeployed' } };
		throw new ValidationError(
			ErrorCode.GroupNotDeployed,
			`group "${chosen}" (jurisdiction ${group.jurisdiction}) is declared but not deployed (deployed: false), so this create of type "${type}" is refused rather than created in the default group, outside the jurisdiction; nothing was stored. Deploy the group, or declare it with fallback: true to send its creates to the default group`,
		);
	}
	return { group };
}

function callChoice(type: string, choice: (payload: unknown) => string, payload: unknown): string {
	let chosen: unknown;
	try {
		chosen = choice(payload);
	} catch (error) {
		throw new ValidationError(ErrorCode.InvalidGroup, `workflow type "${type}": its group function threw for this payload: ${(error as Error)?.message ?? String(error)}`);
	}
	if (typeof chosen !== 'string' || !GROUP_NAME_PATTERN.test(chosen)) {
		throw new ValidationError(ErrorCode.InvalidGroup, `workflow type "${type}": its group function returned ${JSON.stringify(chosen)?.slice(0, 60)}, not a group name (${GROUP_NAME_PATTERN})`);
	}
	return chosen;
}

/**
 * Refuses an id whose group part is not the place a create goes to (400 `GROUP_MISMATCH`):
 * an id of the default group for a type placed elsewhere, an id naming another group, or
 * naming its group with another jurisdiction than the declared one.
 */
export function assertIdInPlace(id: string, idPlace: GroupPlace, placement: Placement, type: string): void {
	const want = placement.group.place;
	if (idPlace.tag === want.tag) return;
	const named = idPlace.tag === null ? 'the default group (it has no group part)' : `group part "${idPlace.tag}"`;
	const wanted = want.tag === null ? 'an id without a group part' : `an id starting "${want.tag}~" (or no id, from a Worker that imports the registry: the REST API and the helpers generate one in the group)`;
	const why = placement.fallback ? ` (it chose "${placement.fallback.requested}", ${placement.fallback.reason === 'unknown' ? 'which the registry does not declare' : 'which is not deployed'}, so the default group)` : '';
	throw new ValidationError(ErrorCode.GroupMismatch, `workflow id "${id}" names ${named}, but this create of type "${type}" goes to group "${placement.group.name}"${why}: give ${wanted}`);
}
