import type { IndexEntry } from '../../src/engine/index/index-entry';

/**
 * Shared between the tests and the Durable Objects they drive (the Workers
 * vitest integration runs both in one isolate): counts of step executions.
 */
export const executions = new Map<string, number>();

export function countExecution(key: string): number {
	const n = (executions.get(key) ?? 0) + 1;
	executions.set(key, n);
	return n;
}

/** The index entries each instance id delivered, in the order its shard accepted them (test/worker/index.ts `recordDeliveries`). */
export const indexDeliveries = new Map<string, IndexEntry[]>();

/** Index writes the test Worker's shards refuse before accepting again (failure injection). */
export const indexFaults = { failWrites: 0, refused: 0 };

/** Slot releases the test Worker's limiters refuse before accepting again (failure injection). */
export const limiterFaults = { failReleases: 0 };
/** While set, parents drop the notices of their finished children (a crash between the child's end and the notice). */
export const childNotices = { drop: false, dropped: 0 };

/** Alarm invocations per object name, counted by the test Worker's runner. */
export const alarmInvocations = new Map<string, number>();

/**
 * Test hook: the storage layout an object's next construction gives the Worker's setting, by object name (test/worker/index.ts),
 * so a test can change the setting under an instance that exists (abortAllDurableObjects, then the next call builds the object anew).
 */
export const layoutSettings = new Map<string, 'compact' | 'table'>();
