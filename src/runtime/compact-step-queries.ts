import type { StepKind } from '../engine/support/step-kinds';
import type { StepStatus } from '../engine/support/statuses';
import type { StepCount, StepMeta, StepRange, StepRef, StepRow } from '../engine/storage/store';
import { unpack } from './compact-keys';
import { toStepMeta, toStepRow, type StoredStep } from './compact-history';
import type { StepIndex } from './compact-step-index';

/**
 * The read-only questions a compact instance answers about its steps, over its step index and a way to
 * read one step's value wherever it is kept (its own key, the record, or the step after it:
 * compact-folded-steps.ts). One step's value at a time: a status's window of 100 steps may hold
 * results of up to 1 MiB each.
 */
export interface StepSource {
	index(): StepIndex;
	get(seq: number): StoredStep | undefined;
}

export function stepMetaIn(source: StepSource, range: StepRange): StepMeta[] {
	const seqs = source.index().seqs();
	const picked = 'last' in range ? (range.last > 0 ? seqs.slice(-range.last) : []) : seqs.filter((seq) => seq > range.afterSeq).slice(0, range.limit);
	return picked.map((seq) => source.get(seq)).filter((step) => step !== undefined).map(toStepMeta);
}

export function stepResultsIn(source: StepSource, refs: readonly StepRef[]): Map<string, string | null> {
	const results = new Map<string, string | null>();
	for (const ref of refs) {
		const step = source.get(ref.seq);
		if (step && step.key === ref.key) results.set(ref.key, unpack(step.result));
	}
	return results;
}

/** From the index alone: a status counts its steps without reading their results. */
export function stepCountsIn(source: StepSource): StepCount[] {
	const counts = new Map<string, StepCount>();
	for (const [, { kind, status }] of source.index().entries()) {
		const count = counts.get(`${kind} ${status}`);
		if (count) count.n++;
		else counts.set(`${kind} ${status}`, { kind, status, n: 1 });
	}
	return [...counts.values()];
}

export function stepRowAt(source: StepSource, seq: number): StepRow | undefined {
	const step = source.get(seq);
	return step && toStepRow(step);
}

export function stepsOfKindIn(source: StepSource, kind: StepKind, status?: StepStatus): StepRow[] {
	const rows: StepRow[] = [];
	for (const [seq, step] of source.index().entries()) {
		if (step.kind !== kind || (status !== undefined && step.status !== status)) continue;
		const row = stepRowAt(source, seq);
		if (row) rows.push(row);
	}
	return rows;
}

/** The last seq the steps' records take (0: none): the last step with records holds it, as they ascend. */
export function stepsLastRecordSeq(index: StepIndex): number {
	const seqs = index.seqs();
	for (let i = seqs.length - 1; i >= 0; i--) {
		const last = index.get(seqs[i]!)!.last;
		if (last !== undefined) return last;
	}
	return 0;
}
