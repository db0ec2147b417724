import { ErrorCode, ValidationError } from './errors';
import type { StepRow } from './store';

/** What `restart({from})` keeps of a generation's steps, and where the new run takes over. */
export interface RestartPoint {
	/** The named step, which runs anew (with everything recorded after it). */
	from: StepRow;
	/** Completed steps recorded before it: the new generation replays their results. */
	kept: StepRow[];
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
	const ordered = steps.filter((row) => row.kind !== 'patch').sort((a, b) => a.seq - b.seq);
	const from = ordered.find((row) => row.name === name);
	if (!from) {
		const names = ordered.map((row) => row.name);
		const listed = names.length > 20 ? `${names.slice(0, 20).join(', ')}, …` : names.join(', ');
		throw new ValidationError(
			ErrorCode.UnknownStep,
			`no step ${JSON.stringify(name)} is recorded in the current run${names.length ? `; recorded steps: ${listed}` : ' (it recorded no steps)'}`,
		);
	}
	// Patch markers before the point stay too: the kept steps were reached on that branch.
	const kept = steps.filter((row) => row.seq < from.seq && row.status === 'completed').sort((a, b) => a.seq - b.seq);
	return { from, kept };
}
