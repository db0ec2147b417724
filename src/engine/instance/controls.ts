import { InvalidStateError } from '../support/errors';
import { restartPoint, type RestartFrom } from '../steps/restart-from';
import { stepRowsWithSmallResults } from '../steps/step-rows';
import { readRollbackState, storedRollbackState, type RollbackState } from '../steps/rollback-state';
import { FINISHED_STATUSES, type WorkflowStatus } from '../support/statuses';
import type { InstanceKernel } from './kernel';
import { RUNNABLE } from './parts/replay-loop';

// The operator's controls of an instance: pause, resume, terminate (with or without its
// rollbacks) and restart, each a status change of the kernel and what the parts do with it.

/** Options of `restart`. */
export interface RestartOptions {
	/** Run again from this step: the completed steps recorded before it return their cached results. */
	from?: RestartFrom;
}

/** Pauses a runnable instance: no pass runs until a resume. */
export function pause(k: InstanceKernel): WorkflowStatus {
	const row = k.require();
	if (!RUNNABLE.includes(row.status)) throw new InvalidStateError(`cannot pause workflow "${row.id}": it is ${row.status}`);
	k.replay.noteControl();
	k.transition({ ...row, status: 'paused' }, { kind: 'workflow.paused' });
	return 'paused';
}

/** Resumes a paused instance, or a diverged one with the code deployed since. */
export function resume(k: InstanceKernel): WorkflowStatus {
	const row = k.require();
	if (row.status !== 'paused' && row.status !== 'diverged') {
		throw new InvalidStateError(`cannot resume workflow "${row.id}": it is ${row.status}, not paused or diverged`);
	}
	k.replay.noteControl();
	// A diverged instance resumes to replay with the code deployed since; its divergence is cleared.
	const cleared = row.status === 'diverged' ? { errorName: null, errorMessage: null, errorStack: null, errorCode: null } : {};
	k.transition({ ...row, ...cleared, status: 'running' }, { kind: 'workflow.resumed' });
	k.replay.kick();
	return 'running';
}

/**
 * Ends the instance. With `rollback`, the rollbacks of its completed steps run
 * first (status `rolling_back`, then `terminated`); a plain terminate of an
 * instance that is rolling back abandons the rollbacks left.
 */
export function terminate(k: InstanceKernel, options: { rollback?: boolean } = {}): WorkflowStatus {
	const row = k.require();
	if (FINISHED_STATUSES.includes(row.status)) throw new InvalidStateError(`cannot terminate workflow "${row.id}": it is already ${row.status}`);
	const rollingBack = readRollbackState(row);
	const replay = k.replay;
	if (options.rollback === true && row.status === 'rolling_back') throw new InvalidStateError(`workflow "${row.id}" is already rolling back`);
	// An attempt whose function ran but whose row the pass had not written yet is recorded first, and cancelled below.
	replay.recordBegunAttempts();
	if (options.rollback === true) {
		replay.beginRollback(k.row!, { reason: 'terminated', state: 'running' });
		replay.interrupt('terminated');
		k.replay.kick();
		return 'rolling_back';
	}
	const abandoned: RollbackState | undefined = row.status === 'rolling_back' && rollingBack ? { ...rollingBack, state: 'abandoned' } : undefined;
	const children = k.children.toTerminate();
	k.host.store.transaction(() => {
		k.host.store.deleteAllWakeups();
		// A step (or a rollback) the terminate interrupts never finishes: it says so, instead of `running` for good.
		k.host.store.cancelUnfinishedSteps(k.host.now());
		// Durable before the children are told: the alarm retries the cascade until every one answered.
		k.children.arm(children);
		k.transition(
			{ ...k.row!, status: 'terminated', ...(abandoned ? { rollback: storedRollbackState(abandoned) } : {}) },
			{ kind: 'workflow.terminated', ...(abandoned ? { detail: { rollback: replay.rollbackSummary(abandoned) } } : {}) },
		);
	});
	replay.interrupt('terminated');
	k.children.start(children);
	return 'terminated';
}

/**
 * Runs the instance again in a new generation: from the start, or with `from`
 * from that step on (the completed steps recorded before it keep their
 * results; see restart-from.ts). An unknown step changes nothing.
 */
export function restart(k: InstanceKernel, options: RestartOptions = {}): WorkflowStatus {
	const row = k.require();
	if (!FINISHED_STATUSES.includes(row.status) && row.status !== 'diverged') {
		throw new InvalidStateError(`cannot restart workflow "${row.id}": it is ${row.status}; only completed, errored, terminated or diverged workflows restart`);
	}
	const key = k.slot.keyOf(row);
	const status: WorkflowStatus = key === undefined ? 'created' : 'queued';
	// Steps without their results: the kept ones stay where they are, so no result passes through memory.
	const point = options.from === undefined ? undefined : restartPoint([...stepRowsWithSmallResults(k.host.store)], options.from, { errored: row.status === 'errored' });
	k.host.store.transaction(() => {
		if (point) k.host.store.keepStepsBefore(point.keptBefore);
		else k.host.store.deleteSteps();
		// Events still buffered (a diverged run never consumed them) belonged to the old run: they go,
		// counted in droppedEvents and named on the restart's record, never lost without a trace.
		const dropped = k.host.store.dropEvents();
		k.host.store.deleteAllWakeups();
		k.transition(
			{ ...row, status, output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null, rollback: null, generation: row.generation + 1 },
			{
				kind: 'workflow.restarted',
				detail: {
					previousGeneration: row.generation,
					...(point ? { from: point.from.name, fromType: point.fromType, keptSteps: point.kept.filter((s) => s.kind !== 'patch').length } : {}),
					...(dropped > 0 ? { droppedEvents: dropped } : {}),
				},
			},
		);
		// A release still in flight is dropped: the limiter keeps this id's place, which the new run takes.
		if (key !== undefined) k.slot.queue(key, row.generation + 1, k.host.now());
	});
	k.replay.interrupt('restarted');
	if (key === undefined) k.replay.kick();
	else k.slot.sync();
	return status;
}
