import { reportInvalidSetting } from './invalid-setting';
import { type CompactFormat, compactFormatOf } from './compact-format';
import { type StorageLayout, storageLayoutOf } from './storage-layout';

/**
 * `SHARDFLOW_STORAGE_FORMAT`: the newest storage format a deployment may write, as one numbered level
 * (docs/decisions.md "One setting for the storage format"). Every build reads every format up to its own
 * whatever the level, and a release never raises it by itself: an operator raises it once no deploy can
 * roll back to a build before that level (a "finalize" step, as a database's cluster version).
 * - 1: the table layout with the outbox table: what 0.1.0 and every build read (the default);
 * - 2: + a status change's pending index entry in the instance row (`SHARDFLOW_OUTBOX_IN_ROW`; main 9edbff2);
 * - 3: + the compact layout for new instances, format 1 (`SHARDFLOW_STORAGE_LAYOUT=compact`; main 9f914ac);
 * - 4: + compact format 2 and a finished inline child kept in one row (`SHARDFLOW_COMPACT_FORMAT=2`,
 *   `SHARDFLOW_INLINE_ONE_ROW`; main 397ec1e, which holds both).
 * - 5: + a compact instance's sleeps folded into the writes around them (no switch of its own; compact-folded-steps.ts).
 */
export type StorageFormat = 1 | 2 | 3 | 4 | 5;

export const NEWEST_STORAGE_FORMAT: StorageFormat = 5;

/** What a deployment writes, each part a switch of its own before the level existed. */
export interface StorageSettings {
	/** The layout a new instance takes (storage-layout.ts). */
	layout: StorageLayout;
	/**
	 * A table instance's status change writes its pending index entry into the instance row (1 row written), not the
	 * outbox table (2). A build before drizzle/0019 reads only the outbox table and would never deliver an entry pending
	 * in the row (docs/decisions.md "The outbox in the instance row"). Turning it off again is safe: this build reads both.
	 */
	outboxInRow: boolean;
	/** What a compact instance writes (compact-format.ts). */
	compactFormat: CompactFormat;
	/**
	 * A child that finishes inside its parent's pass is kept there as one row until published (its header carries its
	 * last steps): 2 rows written fewer per one-step child. A build before it reads such a row without its steps and
	 * would publish the child stepless, or not at all (docs/decisions.md "Rows of a `step.invoke` child").
	 */
	inlineOneRow: boolean;
	/**
	 * A compact instance's sleep is written with the `sleeping` status and completed in the woken pass's next write
	 * (compact-folded-steps.ts): 2 rows fewer per sleep. A build before it finds no sleep in a key of its own and would
	 * sleep again (docs/decisions.md "Sleeps folded into the writes around them"). Level 5 only: no switch of its own.
	 */
	foldSleeps: boolean;
}

/** The old switches a deployment set explicitly (undefined: not set); each wins over the level for its own part. */
export type ExplicitSwitches = Partial<Omit<StorageSettings, 'foldSleeps'>>;

/**
 * The settings a level and the explicitly set old switches give. Pure: a deployment from a build before the
 * level keeps its wrangler.jsonc's switches, so each one set wins for its own part; an unset part follows the level.
 */
export function effectiveStorage(level: StorageFormat, explicit: ExplicitSwitches = {}): StorageSettings {
	const compactFormat = explicit.compactFormat ?? (level >= 4 ? 2 : 1);
	return {
		layout: explicit.layout ?? (level >= 3 ? 'compact' : 'table'),
		outboxInRow: explicit.outboxInRow ?? level >= 2,
		compactFormat,
		inlineOneRow: explicit.inlineOneRow ?? level >= 4,
		// Built on format 2's wake-ups in their steps' keys and its woken pass's held `running`: a format 1 kept holds it back.
		foldSleeps: level >= 5 && compactFormat === 2,
	};
}

/** `SHARDFLOW_STORAGE_FORMAT`: "1" to "5"; unset means 1. A malformed value is logged and 1 used. */
export function storageFormatOf(env: { SHARDFLOW_STORAGE_FORMAT?: unknown }): StorageFormat {
	const value = env.SHARDFLOW_STORAGE_FORMAT;
	if (value === undefined || value === '') return 1;
	const level = typeof value === 'number' ? value : typeof value === 'string' && /^[1-5]$/.test(value.trim()) ? Number(value.trim()) : NaN;
	if (level === 1 || level === 2 || level === 3 || level === 4 || level === 5) return level;
	reportInvalidSetting(env, 'SHARDFLOW_STORAGE_FORMAT', value, `SHARDFLOW_STORAGE_FORMAT must be "1", "2", "3", "4" or "5", got ${JSON.stringify(value)}; storage format 1 used`);
	return 1;
}

interface StorageEnv {
	SHARDFLOW_STORAGE_FORMAT?: unknown;
	SHARDFLOW_STORAGE_LAYOUT?: unknown;
	SHARDFLOW_OUTBOX_IN_ROW?: unknown;
	SHARDFLOW_COMPACT_FORMAT?: unknown;
	SHARDFLOW_INLINE_ONE_ROW?: unknown;
}

const isSet = (value: unknown) => value !== undefined && value !== '';
/** The two boolean switches as they always read: "true" on, any other value set off. */
const flag = (value: unknown) => value === 'true' || value === true;

/** The deployment's storage settings: `SHARDFLOW_STORAGE_FORMAT` and the old switches it set (each parsed as before). */
export function storageSettingsOf(env: StorageEnv): StorageSettings {
	return effectiveStorage(storageFormatOf(env), {
		...(isSet(env.SHARDFLOW_STORAGE_LAYOUT) ? { layout: storageLayoutOf(env) } : {}),
		...(isSet(env.SHARDFLOW_OUTBOX_IN_ROW) ? { outboxInRow: flag(env.SHARDFLOW_OUTBOX_IN_ROW) } : {}),
		...(isSet(env.SHARDFLOW_COMPACT_FORMAT) ? { compactFormat: compactFormatOf(env) } : {}),
		...(isSet(env.SHARDFLOW_INLINE_ONE_ROW) ? { inlineOneRow: flag(env.SHARDFLOW_INLINE_ONE_ROW) } : {}),
	});
}
