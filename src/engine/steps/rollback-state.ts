import { fromStoredJson } from '../support/json';
import type { InstanceRow } from '../storage/store';
import type { RollbackInfo } from '../definition/types';

/**
 * The rollback state of an instance, stored as JSON in its row (`rollback`).
 * It is written, with status `rolling_back`, before any rollback runs: a pass
 * that finds it after a crash or an eviction goes on with the rollbacks.
 */
export interface RollbackState {
	reason: RollbackInfo['reason'];
	state: RollbackInfo['state'];
	failedStep?: string;
	error?: { name: string; message: string; code?: string };
}

export function readRollbackState(row: InstanceRow): RollbackState | undefined {
	return row.rollback ? (fromStoredJson(row.rollback) as RollbackState) : undefined;
}

export function storedRollbackState(state: RollbackState): string {
	return JSON.stringify(state);
}
