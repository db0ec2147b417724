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

/** The fields `leanStep` leaves out when null. */
const NULL_LEFT_OUT = new Set(['errorName', 'errorMessage', 'errorStack', 'errorCode', 'wakeAt']);

/**
 * `leanStep` as a copy: the same fields in the same order, the left-out ones never added. The store keeps this copy
 * (compact-instance-store.ts `storeStep`) and encodes it at every put that carries it: `delete` turns a V8 object into a
 * dictionary (its fields read by hash lookup from then on), which made the encoding of a step about twice as slow.
 */
export function leanCopy(step: StoredStep): StoredStep {
	const from = step as unknown as Record<string, unknown>;
	const copy: Record<string, unknown> = {};
	for (const field in from) {
		const value = from[field];
		if ((value === null && NULL_LEFT_OUT.has(field)) || (field === 'sensitive' && value === false)) continue;
		copy[field] = value;
	}
	return copy as unknown as StoredStep;
}
