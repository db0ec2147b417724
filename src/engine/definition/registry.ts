import type { StandardSchemaV1 } from '@standard-schema/spec';
import { parseDuration, type Duration } from '../support/duration';
import { ErrorCode, RegistryError, ValidationError } from '../support/errors';
import { CODE_VERSION_PATTERN } from '../support/ids';
import { resolveInstanceLimits, type InstanceLimits, type ResolvedInstanceLimits } from './instance-limits';
import { checkWorkflowDefaults } from './step-options';
import { checkAttributeDeclaration, type AttributeDeclaration } from '../index/search-attributes';
import { resolveStuckAfter, type ResolvedStuckAfter, type StuckAfterOptions } from '../index/stuck-after';
import type { DeclaredWorkflowDefaults, EventMap, Step, StreamMap, WorkflowContext } from './types';
import { learnPlacements } from '../groups/known-placements';
import { checkGroupChoice, resolveGroups, type GroupChoice, type GroupOptions, type ResolvedGroups } from '../groups/groups';

/** What the engine needs of a workflow class (the `Workflow` base class gives the rest). */
export interface WorkflowClass {
	readonly type: string;
	events?: EventMap;
	/** Topics `step.emit` publishes on (engine/streams/stream.ts). */
	streams?: StreamMap;
	payload?: StandardSchemaV1;
	defaults?: DeclaredWorkflowDefaults;
	/** Search attributes: name -> kind (engine/index/search-attributes.ts). */
	attributes?: AttributeDeclaration;
	new (ctx: WorkflowContext<any>): { run(step: Step<any, any>, payload: any): Promise<unknown> };
}

/** The statuses a retention applies to: those an instance never leaves on its own. */
export type FinishedStatus = 'completed' | 'errored' | 'terminated';

/**
 * How long a finished instance is kept, per status, before it deletes itself
 * (its own alarm, index entry included). A duration up to 365 days, or
 * `'forever'`. Unset statuses keep `DEFAULT_RETENTION`.
 */
export type RetentionOptions = Partial<Record<FinishedStatus, Duration | 'forever'>> & {
	/** With an archive bucket bound (`ARCHIVE`), write the record to it before deleting (default true). */
	archive?: boolean;
};

/** What a type keeps unless its `retention` says otherwise (docs/operations.md "Retention and deletion"). */
export const DEFAULT_RETENTION = { completed: '7 days', errored: '90 days', terminated: '7 days' } as const satisfies Record<FinishedStatus, Duration>;

/** A type's retention in milliseconds (null: forever). */
export type ResolvedRetention = Record<FinishedStatus, number | null> & { archive: boolean };

/** Per-type options. */
export interface TypeOptions {
	/** Index shards for this type (1-256, default 1). */
	shards?: number;
	/** While resizing: the shard count before the change, read alongside the new layout. */
	previousShards?: number;
	/** How long finished instances are kept (default `DEFAULT_RETENTION`). */
	retention?: RetentionOptions;
	/**
	 * The code version of this type (1-64 visible characters, e.g. a date, a semver or a
	 * build id). Each instance records the version that started it and the one that last
	 * ran it; status, history and index show them and the list API filters by them.
	 */
	version?: string;
	/**
	 * Per-instance limits (docs/deploying.md "Limits"): steps per run (default 10,000, at most
	 * 25,000) and history bytes (default 100 MiB, at most 1 GiB). A run that would
	 * pass one fails with STEP_LIMIT_EXCEEDED or HISTORY_LIMIT_EXCEEDED.
	 */
	limits?: InstanceLimits;
	/** When a `running` or `waiting` instance counts as stuck in `GET /metrics` (index/stuck-after.ts). */
	stuckAfter?: StuckAfterOptions;
	/**
	 * The group its instances live in (docs/residency.md): a declared group's name, or a
	 * function of the validated payload returning one (`(p) => p.country === 'DE' ? 'eu' : 'global'`).
	 * Unset: the group a create asks for, else the default group.
	 */
	group?: GroupChoice;
}

/** Options of the registry as a whole. */
export interface RegistryOptions {
	/** The groups instances can live in: name -> jurisdiction and location hint (docs/residency.md). */
	groups?: GroupOptions;
}

export interface RegistryEntry extends TypeOptions {
	workflow: WorkflowClass;
}

export interface ResolvedEntry {
	type: string;
	workflow: WorkflowClass;
	shards: number;
	previousShards: number | undefined;
	retention: ResolvedRetention;
	/** The type's code version, or null when the registry gives none. */
	version: string | null;
	limits: ResolvedInstanceLimits;
	stuckAfter: ResolvedStuckAfter;
	/** The class's search attributes (`{}` when it declares none). */
	attributes: AttributeDeclaration;
	/** How its instances pick their group (undefined: the create's choice, else the default group). */
	group: GroupChoice | undefined;
}

/** A typed map of workflow types; adding a type is a code change, never a config change. */
export interface Registry<T extends Record<string, RegistryEntry> = Record<string, RegistryEntry>> {
	readonly definitions: T;
	types(): string[];
	has(type: string): boolean;
	/** Throws `UNKNOWN_TYPE` naming the registered types. */
	get(type: string): ResolvedEntry;
	/**
	 * Why this registry cannot run, or null. When set, `types`, `has` and `get`
	 * throw it; `createApp` answers every request with it (500 `INVALID_REGISTRY`).
	 */
	readonly problem: RegistryError | null;
	/** The groups instances live in (only the default group when the registry declares none). */
	readonly groups: ResolvedGroups;
}

/**
 * What reading the index needs of a registry: the types and their shard
 * layout, without the workflow classes. A `Registry` is one; a Worker that
 * only calls workflows builds one with `defineIndexLayout`.
 */
export interface IndexLayout {
	types(): string[];
	/** Throws `UNKNOWN_TYPE` naming the known types. */
	get(type: string): LayoutEntry;
}

/** What the index needs of a type: its shard layout and, to check attribute queries, its search attributes. */
export type LayoutEntry = Pick<ResolvedEntry, 'type' | 'shards' | 'previousShards'> & { attributes?: AttributeDeclaration };

export const MAX_SHARDS = 256;

const TYPE_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/**
 * Declares the workflow types a deployment runs. A key must equal its class's
 * `static type` (a compile error otherwise). Problems TypeScript cannot see
 * (or that reach a Worker without a type-check: `wrangler dev` does not run
 * one) are not thrown here, at module load, where a throw stops `wrangler dev`
 * until it is restarted; they are kept in `problem`, logged by the host, and
 * thrown by every use of the registry, so the Worker keeps serving the
 * message and picks up the fix on the next reload.
 *
 * @example
 * export const registry = defineRegistry({
 *   test: { workflow: TestWorkflow },
 *   payment: { workflow: PaymentWorkflow, shards: 4 },
 * });
 */
export function defineRegistry<const T extends { [K in keyof T]: RegistryEntry & { workflow: { readonly type: K } } }>(
	definitions: T,
	options: RegistryOptions = {},
): Registry<T> {
	const resolved = new Map<string, ResolvedEntry>();
	const problems: string[] = [];
	let groups = resolveGroups();
	try {
		groups = resolveGroups(options.groups);
	} catch (error) {
		problems.push((error as Error).message);
	}
	for (const [type, entry] of Object.entries(definitions) as [string, RegistryEntry][]) {
		try {
			resolved.set(type, resolveEntry(type, entry, groups));
		} catch (error) {
			problems.push((error as Error).message);
		}
	}
	if (problems.length > 0) {
		const problem = new RegistryError(`shardflow cannot run this registry: ${problems.join('; ')}`);
		const fail = (): never => {
			throw problem;
		};
		return { definitions, problem, types: fail, has: fail, get: fail, groups };
	}
	learnPlacements(groups, [...resolved.values()].map((entry): [string, GroupChoice | undefined] => [entry.type, entry.group]));
	return { definitions, problem: null, types: () => [...resolved.keys()], has: (type) => resolved.has(type), get: (type) => lookUp(resolved, type), groups };
}

/** One registry entry checked and resolved; throws a message naming the key for whatever is wrong. */
function resolveEntry(type: string, entry: RegistryEntry, groups: ResolvedGroups): ResolvedEntry {
	// Unchecked input: JavaScript, or a cast, reaches here without the compile-time check.
	const workflow = entry.workflow as unknown as ((...args: never) => unknown) & { type?: unknown };
	if (typeof workflow !== 'function') {
		throw new Error(`registry key "${type}" must hold { workflow: <a class extending Workflow> }, got ${typeof workflow}`);
	}
	if (workflow.type !== type) {
		const declared = typeof workflow.type === 'string' ? `"${workflow.type}"` : 'missing';
		throw new Error(
			`registry key "${type}" holds class ${workflow.name || '(anonymous)'}, whose static type is ${declared}: ` +
				`the key must equal the static type (register it as ${typeof workflow.type === 'string' ? JSON.stringify(workflow.type) : 'its type'}: { workflow: ${workflow.name || 'TheClass'} }, or change its static type to "${type}")`,
		);
	}
	if (entry.version !== undefined && (typeof entry.version !== 'string' || !CODE_VERSION_PATTERN.test(entry.version))) {
		throw new Error(`${type}.version must be 1-64 visible ASCII characters, got ${JSON.stringify(entry.version)}`);
	}
	checkDefaults(type, entry.workflow);
	checkGroupChoice(type, entry.group, groups);
	// A schedule's ticks are created by the type's schedule object under ids of the default group.
	if (entry.group !== undefined && (entry.workflow as { schedule?: unknown }).schedule !== undefined) {
		throw new Error(`${type}.group: a type with a static schedule runs in the default group (schedules in other groups are not supported yet, docs/residency.md)`);
	}
	return {
		...resolveLayout(type, entry),
		workflow: entry.workflow,
		retention: resolveRetention(type, entry.retention),
		version: entry.version ?? null,
		limits: resolveInstanceLimits(type, entry.limits),
		stuckAfter: resolveStuckAfter(type, entry.stuckAfter),
		attributes: checkAttributeDeclaration(type, entry.workflow.attributes),
		group: entry.group,
	};
}

/**
 * A class's `static defaults`, checked when the Worker starts rather than at
 * the first failing step: without `satisfies WorkflowDefaults` TypeScript
 * cannot check their durations (see `DeclaredWorkflowDefaults`).
 */
function checkDefaults(type: string, workflow: WorkflowClass): void {
	try {
		checkWorkflowDefaults(workflow.defaults);
	} catch (error) {
		throw new Error(`workflow type "${type}" (class ${workflow.name}) has invalid static defaults: ${(error as Error).message}`, { cause: error });
	}
}

/**
 * The index layout of workflow types run by another Worker, for an
 * `IndexClient` in a Worker that only calls them: the same type names and
 * shard counts as the host's registry, without importing its classes.
 *
 * @example
 * const index = new IndexClient(env, defineIndexLayout({ payment: { shards: 4 } }));
 */
export function defineIndexLayout(types: Record<string, Pick<TypeOptions, 'shards' | 'previousShards'> & { attributes?: AttributeDeclaration }>): IndexLayout {
	const resolved = new Map(
		Object.entries(types).map(([type, options]): [string, LayoutEntry] => [
			type,
			{ ...resolveLayout(type, options), ...(options.attributes ? { attributes: checkAttributeDeclaration(type, options.attributes) } : {}) },
		]),
	);
	return { types: () => [...resolved.keys()], get: (type) => lookUp(resolved, type) };
}

function resolveLayout(type: string, options: TypeOptions): Pick<ResolvedEntry, 'type' | 'shards' | 'previousShards'> {
	if (!TYPE_PATTERN.test(type)) throw new Error(`workflow type "${type}" must match ${TYPE_PATTERN}`);
	for (const [name, n] of [['shards', options.shards], ['previousShards', options.previousShards]] as const) {
		if (n !== undefined && (!Number.isInteger(n) || n < 1 || n > MAX_SHARDS)) {
			throw new Error(`${type}.${name} must be a whole number from 1 to ${MAX_SHARDS}, got ${n}`);
		}
	}
	const shards = options.shards ?? 1;
	return { type, shards, previousShards: options.previousShards === shards ? undefined : options.previousShards };
}

function lookUp<E>(resolved: Map<string, E>, type: string): E {
	const entry = resolved.get(type);
	if (!entry) {
		throw new ValidationError(ErrorCode.UnknownType, `unknown workflow type ${JSON.stringify(type)}; registered types: ${[...resolved.keys()].join(', ')}`);
	}
	return entry;
}

function resolveRetention(type: string, options: RetentionOptions = {}): ResolvedRetention {
	const keep = (status: FinishedStatus): number | null => {
		const value = options[status] ?? DEFAULT_RETENTION[status];
		if (value === 'forever') return null;
		try {
			return parseDuration(value);
		} catch (error) {
			throw new Error(`${type}.retention.${status}: ${(error as Error).message} (or 'forever')`);
		}
	};
	return { completed: keep('completed'), errored: keep('errored'), terminated: keep('terminated'), archive: options.archive ?? true };
}
