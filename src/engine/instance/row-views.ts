import type { ChildOutcome } from '../children/child-workflows';
import type { InstanceRow } from '../storage/store';

/** The error a row records (an errored or diverged instance's), as logs and history records carry it. */
export function errorOf(row: { errorName: string | null; errorMessage: string | null; errorStack: string | null; errorCode: string | null }) {
	return {
		name: row.errorName ?? 'Error',
		message: row.errorMessage ?? '',
		...(row.errorCode ? { code: row.errorCode } : {}),
		...(row.errorStack ? { stack: row.errorStack } : {}),
	};
}

/** A finished instance's outcome as its parent sees it; null while it runs. */
export function outcomeOf(row: InstanceRow): ChildOutcome | null {
	if (row.status === 'completed') return { status: 'completed', output: row.output };
	if (row.status === 'errored' || row.status === 'terminated') {
		return { status: row.status, error: row.errorName === null ? null : { name: row.errorName, message: row.errorMessage ?? '', ...(row.errorCode ? { code: row.errorCode } : {}) } };
	}
	return null;
}
