import {
	childPollDelayMs,
	FIRST_OUTCOME_WAIT_MS,
	inlineParentsOf,
	isTransient,
	readChildRef,
	type ChildOutcome,
	type ChildRef,
} from '../children/child-workflows';
import {
	type ChildClass,
	type ChildOptions,
} from '../definition/child-options';
import { ChildWorkflowError } from '../support/errors';
import { historyError, type HistoryRecord } from '../history/history';
import { fromStoredJson } from '../support/json';
import { isSignal } from './signals';
import type { StepRow } from '../storage/store';
import type { PassJournal } from './pass-journal';
import type { ChildStepHooks, InlineChildHooks } from './pass-hooks';
import type { AttemptAbort } from './attempt';
import type { ChildTransplant, TransplantHeader } from '../children/transplant';
import { INLINE_BUDGET, type InlineRequest, type InlineRunEnd } from './inline-run';
import { outcomeOf } from '../children/child-workflows';
import { describeThrown } from '../support/thrown-value';
import { checkChildPlacement } from '../children/cross-group-child';

/**
 * A new or unfinished child step (`step.invoke` / `step.start`; replays of finished ones
 * answer in `StepContext`). Its row is written (with `child.started`) before the child's
 * create is sent, so a crash re-sends the same create (idempotent by id): a replay never
 * starts a second child. A child run inline writes nothing before its first row is kept here,
 * nor does its invoke: a crash before it runs the child inline again. An `invoke`'s create asks for the outcome too: a child that finishes
 * within `FIRST_OUTCOME_WAIT_MS` answers in that call. Else the invoke waits in status
 * `waiting`, asking the child for its outcome on every pass: a pass comes when the child's
 * notice wakes the parent, and from the alarm on a backoff (`childPollDelayMs`) should a
 * notice be lost.
 */
export async function runChildStep(
	step: PassJournal,
	children: ChildStepHooks,
	key: string,
	mode: ChildRef['mode'],
	name: string,
	Child: ChildClass,
	options: ChildOptions<unknown>,
	live: Set<AttemptAbort>,
): Promise<unknown> {
	let row = step.row(key);
	let now = step.hooks.now();
	/** An inline invoke's start, not written yet (`writeStart` writes it, once). */
	let unwrittenStart: { row: StepRow; record: HistoryRecord } | undefined;
	const writeStart = () => {
		const start = unwrittenStart;
		if (!start) return;
		unwrittenStart = undefined;
		step.transact(() => {
			step.write(start.row);
			step.hooks.record(start.record);
		});
	};
	if (!row) {
		const checked = checkChildPlacement(children, mode, name, Child, options);
		// The short child of an invoke, under its default id, runs inside this instance first (instance/inline-child.ts),
		// when that id names this instance (a read by the id asks the instances it names: a step name with `::`, or a
		// hashed id that keeps only the start of a long parent id, names another) and it is to end with this instance
		// (an inline run ends with its parent's pass: an abandoned child must run on after a terminate).
		// A child in another group never runs inline: its run would write its data in its parent's jurisdiction.
		const inline = mode === 'invoke' && !checked.crossGroup && options.id === undefined && checked.onParentTerminate === 'terminate' && children.inline?.eligible(checked.childType)
			&& inlineParentsOf(checked.childId).includes(children.parentId);
		const ref: ChildRef = inline ? { ...checked, inline: true } : checked;
		const begun: StepRow = { ...step.newRow(key, name, 'child'), status: 'running', startedAt: now, result: JSON.stringify(ref) };
		const record: HistoryRecord = { kind: 'child.started', step: name, detail: { childId: ref.childId, childType: ref.childType, mode }, at: now };
		if (inline) {
			// Written once the child first writes anything here (its rows must never be found without the invoke that
			// ran it: a crash, a terminate and a read by the child's id look for them through it), or with the step's
			// completion when it finishes first: a one-step child then costs its invoke one row, not two.
			unwrittenStart = { row: begun, record };
			row = begun;
		} else {
			step.transact(() => {
				step.write(begun);
				step.hooks.record(record);
			});
			row = step.row(key)!;
		}
	}
	const ref = readChildRef(row);
	if (row.status === 'running' || row.status === 'retrying') {
		if (row.wakeAt !== null && row.wakeAt > now) throw step.suspend('sleeping');
		const parent = { id: children.parentId, type: children.parentType, step: name, ...(ref.crossGroup ? { crossGroup: true as const } : {}) };
		let inline = ref.inline ? children.inline : undefined;
		let transplant: ChildTransplant | undefined;
		// Handed over because an event or a control waits for the child: its create must not also wait for its outcome.
		let wanted = false;
		if (inline) {
			let inlined: Awaited<ReturnType<typeof runInline>>;
			try {
				inlined = await runInline(step, inline, { id: ref.childId, type: ref.childType, payload: options?.payload, parent }, live, writeStart);
			} catch (error) {
				if (isSignal(error)) throw error;
				step.checkAbort();
				writeStart();
				return startFailed(step, row, error);
			}
			if ('outcome' in inlined) {
				// Finished inline: the step completes with the child kept here, published to its own object afterwards
				// (and its `child.started`, if nothing was written since it began, recorded with its completion).
				const { outcome, header, unwritten } = inlined;
				const kept = inline;
				const startRecord = unwrittenStart?.record;
				unwrittenStart = undefined;
				try {
					return settle(step, row, ref, outcome, step.hooks.now(), () => kept.keep(ref.childId, parent, header, true, unwritten), startRecord);
				} finally {
					kept.publishSoon();
				}
			}
			if ('ownObject' in inlined) {
				// It starts in its own object, for good: a start retried after a lost answer or a crash must not run it here too.
				row = { ...row, result: JSON.stringify({ ...ref, inline: undefined }) };
				const own = row;
				const startRecord = unwrittenStart?.record;
				unwrittenStart = undefined;
				step.transact(() => {
					step.write(own);
					if (startRecord) step.hooks.record(startRecord);
				});
				inline = undefined;
			} else {
				transplant = inlined.transplant;
				wanted = 'wanted' in inlined && inlined.wanted === true;
			}
		}
		let outcome: ChildOutcome | null;
		try {
			// Just created, a child may well finish in its first pass: an invoke's create lets it run (bounded) and answers its outcome.
			outcome = await children.port.start({
				id: ref.childId, type: ref.childType, payload: options?.payload, parent,
				...(mode === 'invoke' && !wanted ? { waitMs: FIRST_OUTCOME_WAIT_MS } : {}),
				...(transplant ? { transplant } : {}),
			});
		} catch (error) {
			if (isSignal(error)) throw error;
			step.checkAbort();
			return startFailed(step, row, error);
		}
		step.checkAbort();
		now = step.hooks.now();
		// A handed-over child lives in its own object now: its rows here go, and its ref no longer says inline.
		const started: StepRow = inline ? { ...row, result: JSON.stringify({ ...ref, inline: undefined }) } : row;
		const handedOver = inline ? () => inline.forget(ref.childId) : undefined;
		if (mode === 'start') {
			step.transact(() => {
				step.store.deleteWakeup(key);
				step.write({ ...started, status: 'completed', attempts: started.attempts + 1, finishedAt: now, wakeAt: null });
			});
			return ref.childId;
		}
		if (outcome) return settle(step, { ...started, errorName: null, errorMessage: null, errorCode: null }, ref, outcome, now, handedOver);
		const wakeAt = now + childPollDelayMs(1);
		step.transact(() => {
			handedOver?.();
			step.hooks.setWakeup(key, wakeAt);
			step.write({ ...started, status: 'waiting', attempts: 0, wakeAt, errorName: null, errorMessage: null, errorCode: null });
		});
		throw step.suspend('waiting');
	}
	return childOutcome(step, row, ref, children);
}

/**
 * An inline child's run (instance/inline-child.ts): its outcome, when it finished here; else
 * the transplant its own object takes it on from (handed over). A child an earlier pass already
 * ran here is not run again: what that run left is handed over, its finished steps with it; nor
 * is one beyond `MAX_INLINE_RUNS` at once (a fan-out), or one its parent's invocation has too little
 * budget left for: it starts in its own object (`ownObject`), and its step says so before the create
 * is sent.
 */
async function runInline(
	step: PassJournal,
	inline: InlineChildHooks,
	request: InlineRequest,
	live: Set<AttemptAbort>,
	/** Writes the invoke's start, if it is not written yet: before anything of the child is kept here. */
	writeStart: () => void,
): Promise<{ outcome: ChildOutcome; header: TransplantHeader; unwritten?: StepRow[] } | { transplant: ChildTransplant; wanted?: boolean } | { ownObject: true }> {
	const stored = inline.stored(request.id);
	if (stored.transplant) return { transplant: stored.transplant };
	if (stored.steps.length > 0) return { transplant: inline.fromSteps(request, stored.steps) };
	const reserved = inline.busy() ? 0 : reserveAttempts(step, INLINE_BUDGET.steps);
	if (reserved === 0) return { ownObject: true };
	const run = inline.run(request, writeStart);
	// A terminate or restart of the parent aborts the child's attempts too (and keeps nothing more of it).
	const abort: AttemptAbort = () => run.abort();
	live.add(abort);
	let end: InlineRunEnd;
	try {
		end = await run.run();
	} finally {
		live.delete(abort);
		refundAttempts(step, reserved - Math.min(reserved, run.awaitingAttempts));
	}
	step.checkAbort();
	const outcome = end.finished ? outcomeOf(end.header.row) : null;
	if (outcome) return { outcome, header: end.header, ...(end.unwritten ? { unwritten: end.unwritten } : {}) };
	writeStart();
	step.transact(() => inline.keep(request.id, request.parent, end.header, false));
	return { transplant: { ...end.header, steps: end.steps }, wanted: run.wanted };
}

/**
 * An inline child's attempts run in its parent's invocation: its run takes its budget of attempts
 * that await I/O out of the parent's pass first (invocation-budget.ts), all of it or nothing (0:
 * the parent's invocation has too little left, and the child starts in its own object).
 */
function reserveAttempts(step: PassJournal, count: number): number {
	const spent = step.hooks.invocationSpent;
	if (!spent) return count;
	const now = step.hooks.now();
	for (let taken = 0; taken < count; taken++) {
		if (spent(now)) {
			refundAttempts(step, taken);
			return 0;
		}
	}
	return count;
}

/** Gives back reserved attempts the inline run did not use. */
function refundAttempts(step: PassJournal, count: number): void {
	for (let i = 0; i < count; i++) step.hooks.attemptSettledAtOnce?.();
}

/** An invoke whose child was created: its outcome if it has finished, else the wait goes on. */
async function childOutcome(step: PassJournal, row: StepRow, ref: ChildRef, children: ChildStepHooks): Promise<unknown> {
	let outcome: ChildOutcome | null;
	try {
		outcome = await children.port.outcome(ref.childId);
	} catch (error) {
		if (isSignal(error)) throw error;
		// Gone (deleted by hand): the child cannot answer any more, which fails the invoke.
		outcome = isTransient(error) ? null : { status: 'errored', error: { name: 'ChildWorkflowGone', message: describeThrown(error).message } };
	}
	step.checkAbort();
	const now = step.hooks.now();
	if (!outcome) {
		// A pass that came before the next poll was due (another wake-up) keeps that poll.
		if (row.wakeAt === null || row.wakeAt <= now) {
			const polls = row.attempts + 1;
			const wakeAt = now + childPollDelayMs(polls);
			step.transact(() => {
				step.hooks.setWakeup(row.key, wakeAt);
				step.write({ ...row, attempts: polls, wakeAt });
			});
		}
		throw step.suspend('waiting');
	}
	return settle(step, row, ref, outcome, now);
}

/** An invoke's child finished: the step completes with its output, or fails with a `ChildWorkflowError` (`alsoWrite` in the same transaction). */
function settle(step: PassJournal, row: StepRow, ref: ChildRef, outcome: ChildOutcome, now: number, alsoWrite?: () => void, started?: HistoryRecord): unknown {
	if (outcome.status === 'completed') {
		const output = outcome.output;
		step.transact(() => {
			alsoWrite?.();
			step.store.deleteWakeup(row.key);
			step.write({ ...row, status: 'completed', result: output, finishedAt: now, wakeAt: null });
			if (started) step.hooks.record(started);
			step.hooks.record({ kind: 'child.completed', step: row.name, value: output, detail: { childId: ref.childId } });
		});
		return fromStoredJson(output);
	}
	const { status, error: childError } = outcome;
	const error = new ChildWorkflowError(ref.childId, ref.childType, status, childError);
	step.transact(() => {
		alsoWrite?.();
		step.store.deleteWakeup(row.key);
		step.write({
			...row, status: 'failed', result: JSON.stringify({ ...ref, status, error: childError }), finishedAt: now, wakeAt: null,
			errorName: error.name, errorMessage: error.message, errorStack: null, errorCode: error.code,
		});
		if (started) step.hooks.record(started);
		step.hooks.record({ kind: 'child.failed', step: row.name, detail: { childId: ref.childId, status, error: childError } });
	});
	throw error;
}

/** The child's create failed: a refusal (payload, type) fails the step for good, anything else is retried. */
function startFailed(step: PassJournal, row: StepRow, error: unknown): never {
	const now = step.hooks.now();
	const attempts = row.attempts + 1;
	const described = describeThrown(error);
	if (isTransient(error)) {
		const wakeAt = now + childPollDelayMs(attempts);
		step.hooks.log({ severity: 'warn', event: 'child.start_failed', step: row.name, attempt: attempts, willRetry: true, retryAt: wakeAt, error: described });
		step.transact(() => {
			step.hooks.setWakeup(row.key, wakeAt);
			step.write({ ...row, status: 'retrying', attempts, wakeAt, errorName: described.name, errorMessage: described.message, errorCode: described.code ?? null });
		});
		throw step.suspend('sleeping');
	}
	step.hooks.log({ severity: 'error', event: 'step.failed', step: row.name, attempt: attempts, willRetry: false, error: described });
	step.transact(() => {
		step.store.deleteWakeup(row.key);
		step.write({ ...step.failedRow(row, attempts, described.name, described.message, now), errorCode: described.code ?? null });
		step.hooks.record({ kind: 'child.failed', step: row.name, detail: { childId: readChildRef(row).childId, status: 'refused', error: historyError({ ...described, stack: null }) } });
	});
	throw step.failure(step.row(row.key)!);
}
