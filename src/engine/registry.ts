import type { StandardSchemaV1 } from '@standard-schema/spec';
import { parseDuration, type Duration } from './duration';
import { ErrorCode, ValidationError } from './errors';
import { resolveInstanceLimits, type InstanceLimits, type ResolvedInstanceLimits } from './instance-limits';
import type { EventMap, Step, WorkflowContext, WorkflowDefaults } from './types';

/** What the engine needs of a workflow class (the `Workflow` base class gives the rest). */
export interface WorkflowClass {
	readonly type: string;
	events?: EventMap;
	payload?: StandardSchemaV1;
	defaults?: WorkflowDefaults;
	new (ctx: WorkflowContext<any>): { run(step: Step<any>, payload: any): Promise<unknown> };
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

/** What a type keeps unless its `retention` says otherwise (README "Retention and deletion"). */
export const DEFAULT_RETENTION = { completed: '30 days', errored: '90 days', terminated: '7 days' } as const satisfies Record<FinishedStatus, Duration>;

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
	 * Per-instance limits (README "Limits"): steps per run (default 10,000, at most
	 * 25,000) and history bytes (default 100 MiB, at most 1 GiB). A run that would
	 * pass one fails with STEP_LIMIT_EXCEEDED or HISTORY_LIMIT_EXCEEDED.
	 */
	limits?: InstanceLimits;
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
}

/** A typed map of workflow types; adding a type is a code change, never a config change. */
export interface Registry<T extends Record<string, RegistryEntry> = Record<string, RegistryEntry>> {
	readonly definitions: T;
	types(): string[];
	has(type: string): boolean;
	/** Throws `UNKNOWN_TYPE` naming the registered types. */
	get(type: string): ResolvedEntry;
}

/**
 * What reading the index needs of a registry: the types and their shard
 * layout, without the workflow classes. A `Registry` is one; a Worker that
 * only calls workflows builds one with `defineIndexLayout`.
 */
export interface IndexLayout {
	types(): string[];
	/** Throws `UNKNOWN_TYPE` naming the known types. */
	get(type: string): Pick<ResolvedEntry, 'type' | 'shards' | 'previousShards'>;
}

export const MAX_SHARDS = 256;

const TYPE_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** A code version label: what the list API's `codeVersion` filter accepts too. */
export const CODE_VERSION_PATTERN = /^[\x21-\x7e]{1,64}$/;

/**
 * Declares the workflow types a deployment runs.
 *
 * @example
 * export const registry = defineRegistry({
 *   test: { workflow: TestWorkflow },
 *   payment: { workflow: PaymentWorkflow, shards: 4 },
 * });
 */
export function defineRegistry<const T extends { [K in keyof T]: RegistryEntry & { workflow: { readonly type: K } } }>(
	definitions: T,
): Registry<T> {
	const resolved = new Map<string, ResolvedEntry>();
	for (const [type, entry] of Object.entries(definitions) as [string, RegistryEntry][]) {
		if (entry.workflow.type !== type) {
			throw new Error(`registry key "${type}" holds a workflow whose static type is "${entry.workflow.type}"`);
		}
		if (entry.version !== undefined && (typeof entry.version !== 'string' || !CODE_VERSION_PATTERN.test(entry.version))) {
			throw new Error(`${type}.version must be 1-64 visible ASCII characters, got ${JSON.stringify(entry.version)}`);
		}
		resolved.set(type, {
			...resolveLayout(type, entry),
			workflow: entry.workflow,
			retention: resolveRetention(type, entry.retention),
			version: entry.version ?? null,
			limits: resolveInstanceLimits(type, entry.limits),
		});
	}
	return { definitions, types: () => [...resolved.keys()], has: (type) => resolved.has(type), get: (type) => lookUp(resolved, type) };
}

/**
 * The index layout of workflow types run by another Worker, for an
 * `IndexClient` in a Worker that only calls them: the same type names and
 * shard counts as the host's registry, without importing its classes.
 *
 * @example
 * const index = new IndexClient(env, defineIndexLayout({ payment: { shards: 4 } }));
 */
export function defineIndexLayout(types: Record<string, Pick<TypeOptions, 'shards' | 'previousShards'>>): IndexLayout {
	const resolved = new Map(Object.entries(types).map(([type, options]) => [type, resolveLayout(type, options)]));
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
