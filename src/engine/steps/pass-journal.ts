import { HistoryLimitExceededError, StepFailedError, StepLimitExceededError, type DeterminismError } from '../support/errors';
import type { HistoryRecord } from '../history/history';
import { limitExceeded } from '../instance/instance-limits';
import type { ResolvedEntry } from '../definition/registry';
import { AbortSignal_, SuspendSignal } from './signals';
import type { PassHooks } from './step-context';
import type { StepRows } from './step-rows';
import type { PassStore, StepRow } from '../storage/store';
import type { StepKind } from '../definition/types';

/**
 * The step rows of one pass and how every step kind writes them: through to the store
 * and to the pass's in-memory copy, inside transactions that mark the instance running
 * first; the signal (a suspension or abort) and the fatal error the pass ends with; the
 * type's step and history limits, checked before a new step writes anything.
 * `StepContext` and the child steps (child-step.ts) both write through it.
 */
export class PassJournal {
	/** A suspension or abort already signalled in this pass; sticks even if `run()` catches it. */
	signal: SuspendSignal | AbortSignal_ | undefined;
	/** A determinism error or an exceeded limit; fails the workflow even if `run()` catches it. */
	fatal: DeterminismError | StepLimitExceededError | HistoryLimitExceededError | undefined;
	/** Steps of this run (patch markers aside): the rows loaded plus those begun in this pass. */
	private stepCount: number;
	private nextSeq: number;

	constructor(
		readonly store: PassStore,
		private readonly rows: StepRows,
		readonly hooks: PassHooks,
		private readonly limits: ResolvedEntry['limits'],
		recordedSteps: number,
	) {
		let max = 0;
		for (const row of rows.values()) max = Math.max(max, row.seq);
		this.nextSeq = max + 1;
		this.stepCount = recordedSteps;
	}

	row(key: string): StepRow | undefined {
		return this.rows.get(key);
	}

	/** A new step's row (not yet written); counts the step against the type's limits first. */
	newRow(key: string, name: string, kind: StepKind): StepRow {
		if (kind !== 'patch') {
			this.stepCount++;
			this.assertWithinLimits(name);
		}
		return {
			key, name, kind, status: 'running', attempts: 0, result: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
			startedAt: null, finishedAt: null, wakeAt: null, seq: this.nextSeq++, sensitive: false,
		};
	}

	/** Writes a step row through to the store and the pass's copy. */
	write(row: StepRow): void {
		this.hooks.willWrite();
		this.store.writeStep(row);
		this.rows.set(row.key, row);
	}

	/** Writes a step row and its history record together (the hot path of a step). */
	writeWithRecord(row: StepRow, record: HistoryRecord): void {
		this.hooks.willWrite();
		this.hooks.writeStepWithRecord(row, record);
		this.rows.set(row.key, row);
	}

	/** A new step's first write with its records (the hot path of a step that settled at once). */
	insertWithRecords(row: StepRow, records: readonly HistoryRecord[]): void {
		this.hooks.willWrite();
		this.hooks.insertStep(row, records);
		this.rows.set(row.key, row);
	}

	/** A transaction of step writes; the pass is marked running before it opens. */
	transact(fn: () => void): void {
		this.hooks.willWrite();
		this.store.transaction(fn);
	}

	/** The pass suspends (sleeping or waiting); the signal sticks even if `run()` catches it. */
	suspend(status: SuspendSignal['status']): SuspendSignal {
		this.signal = new SuspendSignal(status);
		return this.signal;
	}

	/** Throws when a terminate or restart came while the step awaited; a pause lets the step checkpoint. */
	checkAbort(): void {
		try {
			this.hooks.checkBoundary();
		} catch (signal) {
			if (signal instanceof AbortSignal_) {
				this.signal = signal;
				throw signal;
			}
		}
	}

	failedRow(row: StepRow, attempts: number, errorName: string, errorMessage: string, now: number): StepRow {
		return { ...row, status: 'failed', attempts, errorName, errorMessage, errorStack: null, errorCode: null, finishedAt: now, wakeAt: null };
	}

	failure(row: StepRow): StepFailedError {
		return new StepFailedError(row.name, row.attempts, row.errorName ?? 'Error', row.errorMessage ?? '');
	}

	/**
	 * Fails the run for good (even if `run()` catches the error) when one more step, or one
	 * more attempt, would pass the type's limits. Called before anything of the step is written.
	 */
	assertWithinLimits(name: string): void {
		const exceeded = limitExceeded(this.limits, this.stepCount, this.hooks.historyBytes(), name);
		if (!exceeded) return;
		this.fatal ??= exceeded;
		throw this.fatal;
	}
}
