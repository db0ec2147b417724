import { reportInvalidSetting } from './invalid-setting';

/**
 * What a compact instance writes (docs/decisions.md "Wake-ups in their steps' keys"):
 * - 1: as the compact layout shipped: every wake-up under a `w:` key of its own, and a pass woken from `sleeping` or
 *   `waiting` writes `running` at its first write;
 * - 2: a step's wake-up in the step's own key (compact-step-wakeups.ts) and a woken pass's `running` held in memory
 *   as a first pass's is (kernel.ts `startRunning`): 2 rows fewer per sleep, 3 per retried step, 1 per woken pass.
 * A build reads both whatever the setting; only a build before format 2 cannot run an instance format 2 left asleep
 * (it finds no wake-up), so a deployment that may still roll back to one keeps 1: storage format 4 writes 2
 * (runtime/storage-format.ts), which a new project (the starter) sets.
 */
export type CompactFormat = 1 | 2;

/** `SHARDFLOW_COMPACT_FORMAT` (an older switch; set, it wins over the storage format's level): "1" or "2". A malformed value is logged and 1 used. */
export function compactFormatOf(env: { SHARDFLOW_COMPACT_FORMAT?: unknown }): CompactFormat {
	const value = env.SHARDFLOW_COMPACT_FORMAT;
	if (value === undefined || value === '' || value === '1' || value === 1) return 1;
	if (value === '2' || value === 2) return 2;
	reportInvalidSetting(env, 'SHARDFLOW_COMPACT_FORMAT', value, `SHARDFLOW_COMPACT_FORMAT must be "1" or "2", got ${JSON.stringify(value)}; compact instances write format 1`);
	return 1;
}

/** What the compact store knows of its object before reading it. */
export interface CompactStart {
	/** A new object: nothing is stored, so the first reads need no storage call. */
	empty?: boolean;
	/** Told after every history write (the instance's stream, roles/instance-stream-feed.ts). */
	historyAppended?: () => void;
	/** What it writes (above); 1 when not given. Both are read whatever it says. */
	format?: CompactFormat;
	/**
	 * Storage format 5: a sleep's writes folded into the writes around it (compact-folded-steps.ts). Read whatever it
	 * says; only a build before it cannot read what it writes.
	 */
	foldSleeps?: boolean;
}
