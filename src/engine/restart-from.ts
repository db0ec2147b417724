import { ErrorCode, ValidationError } from './errors';
import type { StepRow } from './store';

/** What `restart({from})` keeps of a generation's steps, and where the new run takes over. */
export interface RestartPoint {
	/** The named step, which runs anew (with everything recorded after it). */
	from: StepRow;
	/** Completed steps recorded before it: the new generation replays their results. */
	kept: StepRow[];
	/** The kept steps are exactly the steps other than rollbacks recorded before this seq (`InstanceStore.keepStepsBefore`). */
	keptBefore: number;
}

/**
 * Picks the steps a restart from `name` keeps. Steps are ordered by `seq`, the
 * order they were first reached (the history's record order): those before the
 * named step that completed are kept, the named step and everything after it
 * (and any step before it that did not complete) run again. A name shared by
 * steps of several kinds (a `do` and a `sleep`) means the first one reached.
 * An unknown name is refused with `UNKNOWN_STEP`, naming the recorded steps.
 */
export function restartPoint(steps: readonly StepRow[], name: unknown): RestartPoint {
	if (typeof name !== 'string' || name.length === 0 || name.length > 256) {
		throw new ValidationError(ErrorCode.UnknownStep, `restart's from must be a step name of 1-256 characters, got ${JSON.stringify(name)}`);
	}
	const ordered = steps.filter((row) => row.kind !== 'patch' && row.kind !== 'rollback').sort((a, b) => a.seq - b.seq);
	const from = ordered.find((row) => row.name === name);
	if (!from) {
		const names = ordered.map((row) => row.name);
		const listed = names.length > 20 ? `${names.slice(0, 20).join(', ')}, …` : names.join(', ');
		throw new ValidationError(
			ErrorCode.UnknownStep,
			`no step ${JSON.stringify(name)} is recorded in the current run${names.length ? `; recorded steps: ${listed}` : ' (it recorded no steps)'}`,
		);
	}
	// A step whose rollback ran (or began) was undone: it runs again rather than answering a result
	// the compensation took back (and its rollback would otherwise run a second time).
	const undone = new Set(steps.filter((row) => row.kind === 'rollback').map((row) => row.name));
	// The kept steps are a prefix of the record (patch markers included: they were reached on that
	// branch): a gap would leave recorded steps the new run reaches out of order, a divergence. The
	// first step before the point that did not complete, or was undone, ends the prefix; it and
	// everything after it run again.
	const kept: StepRow[] = [];
	let keptBefore = from.seq;
	for (const row of steps.filter((r) => r.kind !== 'rollback' && r.seq < from.seq).sort((a, b) => a.seq - b.seq)) {
		if (row.status !== 'completed' || (row.kind === 'do' && undone.has(row.name))) {
			keptBefore = row.seq;
			break;
		}
		kept.push(row);
	}
	return { from, kept, keptBefore };
}
