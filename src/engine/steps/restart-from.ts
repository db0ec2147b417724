import { RESTART_FROM_TYPES, type RestartFromType } from '../support/step-kinds';
import { ErrorCode, ValidationError } from '../support/errors';
import type { StepRow } from '../storage/store';
import type { StepKind } from '../support/step-kinds';

/**
 * Where `restart({from})` takes over: a step name, or (as Cloudflare's
 * `restart({from: {name, type, count}})`) the name with the kind of step and
 * its occurrence. Without a `type`, the `do` step of that name is meant when
 * there is one (Cloudflare's default), else the step of any kind that has it.
 * Step names are unique per kind within a shardflow run, so `count` can only be 1.
 * @example await PaymentWorkflow.restart(env, id, { from: { name: 'checkpoint', type: 'sleep' } });
 */
export type RestartFrom = string | RestartFromStep;

export interface RestartFromStep {
	name: string;
	/** The step call that recorded it: `sleep` covers `sleepUntil`, `invoke` covers `start`. */
	type?: RestartFromType;
	/** Which occurrence of the name; 1, the only one a shardflow run can have. */
	count?: number;
}


const KIND_OF_TYPE: Record<RestartFromType, StepKind> = { do: 'do', sleep: 'sleep', waitForEvent: 'wait', webhook: 'webhook', invoke: 'child' };
const TYPE_OF_KIND: Partial<Record<StepKind, RestartFromType>> = { do: 'do', sleep: 'sleep', wait: 'waitForEvent', webhook: 'webhook', child: 'invoke' };

/** What `restart({from})` keeps of a generation's steps, and where the new run takes over. */
export interface RestartPoint {
	/** The named step, which runs anew (with everything recorded after it). */
	from: StepRow;
	/** Its kind as `restart({from: {type}})` names it (the history's `fromType`). */
	fromType: RestartFromType;
	/** Settled steps recorded before it (completed; failed for good or timed out unless the run errored): the new generation replays their outcomes. */
	kept: StepRow[];
	/** The kept steps are exactly the steps other than rollbacks recorded before this seq (`InstanceStore.keepStepsBefore`). */
	keptBefore: number;
}

/**
 * Picks the steps a restart from `name` keeps. Steps are ordered by `seq`, the
 * order they were first reached (the history's record order): those before the
 * named step that settled are kept, the named step and everything after it
 * (and any step before it that did not settle) run again. Which step a name
 * means is `RestartFrom`'s rule. An unknown step is refused with `UNKNOWN_STEP`,
 * naming the recorded steps; a malformed `from` (one that cannot name a step: `''`, a
 * number, an unknown field) with `INVALID_OPTIONS`.
 */
export function restartPoint(steps: readonly StepRow[], given: unknown, previous: { errored: boolean } = { errored: false }): RestartPoint {
	const { name, type, count } = checkRestartFrom(given);
	const ordered = steps.filter((row) => row.kind !== 'patch' && row.kind !== 'rollback').sort((a, b) => a.seq - b.seq);
	const named = ordered.filter((row) => row.name === name);
	const from = type === undefined ? (named.find((row) => row.kind === 'do') ?? named[0]) : named.find((row) => row.kind === KIND_OF_TYPE[type]);
	if (!from) {
		const names = ordered.map((row) => row.name);
		const listed = names.length > 20 ? `${names.slice(0, 20).join(', ')}, …` : names.join(', ');
		throw new ValidationError(
			ErrorCode.UnknownStep,
			`no ${type === undefined ? '' : `${type} `}step ${JSON.stringify(name)} is recorded in the current run${names.length ? `; recorded steps: ${listed}` : ' (it recorded no steps)'}`,
		);
	}
	if (count !== 1) {
		throw new ValidationError(
			ErrorCode.UnknownStep,
			`restart's from asks for occurrence ${count} of step ${JSON.stringify(name)}, but step names are unique per kind within a run: only count 1 exists`,
		);
	}
	// A step whose rollback ran (or began) was undone: it runs again rather than answering a result
	// the compensation took back (and its rollback would otherwise run a second time). A rollback that
	// failed for good undid nothing as far as the engine knows: its step's effect is in place, so the
	// step is kept (running it again would repeat the effect, a second charge), and a new failure of
	// the run tries its rollback again.
	const undone = new Set(steps.filter((row) => row.kind === 'rollback' && row.status !== 'failed').map((row) => row.name));
	// The kept steps are a prefix of the record (patch markers included: they were reached on that
	// branch): a gap would leave recorded steps the new run reaches out of order, a divergence. The
	// first step before the point that did not settle, or was undone, ends the prefix; it and
	// everything after it run again. A step that failed for good or a wait that timed out settled too:
	// the run went on past it (it caught the error), and replaying it answers the same error, so the
	// steps after it are not run again. Except after a run that errored: one of those failures may be
	// what ended it, and a restart of a failed run is there to try it again.
	const settled = (row: StepRow) => row.status === 'completed' || (!previous.errored && (row.status === 'failed' || row.status === 'timed_out'));
	const kept: StepRow[] = [];
	let keptBefore = from.seq;
	for (const row of steps.filter((r) => r.kind !== 'rollback' && r.seq < from.seq).sort((a, b) => a.seq - b.seq)) {
		if (!settled(row) || (row.kind === 'do' && undone.has(row.name))) {
			keptBefore = row.seq;
			break;
		}
		kept.push(row);
	}
	return { from, fromType: TYPE_OF_KIND[from.kind]!, kept, keptBefore };
}

/** `from` as a name, type and count, checked: the plain string is `{name}`. */
export function checkRestartFrom(given: unknown): { name: string; type: RestartFromType | undefined; count: number } {
	if (typeof given === 'string' || typeof given !== 'object' || given === null || Array.isArray(given)) {
		// Anything but an object is a name (the plain string form); one that cannot be a name is a malformed
		// request (INVALID_OPTIONS, as a malformed {name, type, count}), not a step the run lacks (UNKNOWN_STEP).
		if (typeof given !== 'string' || given.length === 0 || given.length > 256) {
			throw new ValidationError(ErrorCode.InvalidOptions, `restart's from must be a step name of 1-256 characters or {name, type?, count?}, got ${JSON.stringify(given)}`);
		}
		return { name: given, type: undefined, count: 1 };
	}
	const { name, type, count = 1, ...rest } = given as Record<string, unknown>;
	const extra = Object.keys(rest);
	if (extra.length > 0) {
		throw new ValidationError(ErrorCode.InvalidOptions, `restart's from has unknown field ${JSON.stringify(extra[0])}; it takes {name, type?, count?}`);
	}
	if (typeof name !== 'string' || name.length === 0 || name.length > 256) {
		throw new ValidationError(ErrorCode.InvalidOptions, `restart's from.name must be a step name of 1-256 characters, got ${JSON.stringify(name)}`);
	}
	if (type !== undefined && !(RESTART_FROM_TYPES as readonly unknown[]).includes(type)) {
		throw new ValidationError(ErrorCode.InvalidOptions, `restart's from.type must be one of ${RESTART_FROM_TYPES.map((t) => `"${t}"`).join(', ')}, got ${JSON.stringify(type)}`);
	}
	if (!Number.isInteger(count) || (count as number) < 1) {
		throw new ValidationError(ErrorCode.InvalidOptions, `restart's from.count must be a whole number from 1, got ${JSON.stringify(count)}`);
	}
	return { name, type: type as RestartFromType | undefined, count: count as number };
}
