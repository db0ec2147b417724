import type { StoredStep } from './compact-history';

/**
 * A step's value as storage format 5 stores it: without the fields that hold their usual value (every error field
 * and the wake-up null, not sensitive), which compact-history.ts reads back as that value. A completed step's value is
 * about a third smaller (271 -> ~180 bytes for a trivial one), so more of a run's steps share a SQLite page: a held step
 * riding in the instance record (compact-folded-steps.ts) grew the record past its page otherwise (docs/decisions.md
 * "A completed step rides in the next write of its turn").
 */
export function leanStep(step: StoredStep): void {
	const fields = step as unknown as Record<string, unknown>;
	for (const field of ['errorName', 'errorMessage', 'errorStack', 'errorCode', 'wakeAt'] as const) if (fields[field] === null) delete fields[field];
	if (fields.sensitive === false) delete fields.sensitive;
}
