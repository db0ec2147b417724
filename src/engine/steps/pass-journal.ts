import { HistoryLimitExceededError, StepFailedError, StepLimitExceededError, type DeterminismError } from '../support/errors';
import type { HistoryRecord } from '../history/history';
import { limitExceeded } from '../definition/instance-limits';
import type { ResolvedEntry } from '../definition/registry';
import { AbortSignal_, SuspendSignal } from './signals';
import type { PassHooks } from './pass-hooks';
import type { StepRows } from './step-rows';
import type { PassStore, StepRow } from '../storage/store';
import type { StepKind } from '../support/step-kinds';

/** An attempt's `running` row and `step.started` record, and whether they are written yet. */
export interface AttemptStart {
	readonly row: StepRow;
	readonly record: HistoryRecord;
	/** The step's first write (a new step): the store may keep the record in the row (store.insertStep). */
	readonly first: boolean;
	written: boolean;
}

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
	/** Attempts begun and not yet written (see `beginAttempt`), in the order they began. */
	private readonly unwrittenStarts: AttemptStart[] = [];

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
		this.willWrite();
		this.store.writeStep(row);
		this.rows.set(row.key, row);
	}

	/** Writes a step row and its history record together (the hot path of a step). */
	writeWithRecord(row: StepRow, record: HistoryRecord): void {
		this.willWrite();
		this.hooks.writeStepWithRecord(row, record);
		this.rows.set(row.key, row);
	}

	/**
	 * A transaction of step writes; the pass is marked running first, and attempts begun and not yet written are written
	 * in it: an attempt's start and its outcome are one transaction (the compact store puts the step once).
	 */
	transact(fn: () => void): void {
		this.store.transaction(() => {
			this.willWrite();
			fn();
		});
	}

	/**
	 * An attempt begins: its `running` row and `step.started` record are written now, or, with
	 * `defer` (a new step's first attempt), left unwritten until the attempt settles
	 * (`completeAttempt`), is still pending after its first microtask turns
	 * (`writeStart`), or any other write of the pass comes first: then the unwritten starts
	 * are written before it, in the order they began, so the history holds the same records in
	 * the same order as if each had been written when it began (docs/decisions.md "A step's
	 * records in its row").
	 */
	beginAttempt(row: StepRow, record: HistoryRecord, { first, defer }: { first: boolean; defer: boolean }): AttemptStart {
		const start: AttemptStart = { row, record, first, written: false };
		this.unwrittenStarts.push(start);
		if (!defer) this.writeStart(start);
		return start;
	}

	/** Writes `start` (and every start begun before it that is still unwritten) if it is not written yet. */
	writeStart(start: AttemptStart): void {
		if (!start.written) this.willWrite();
	}

	/**
	 * An attempt's completion: one insert with both records when its start is the only one
	 * unwritten (nothing was written since it began), else its start first (with the others)
	 * and then the completion.
	 */
	completeAttempt(start: AttemptStart, row: StepRow, record: HistoryRecord): void {
		if (!start.written && start.first && this.unwrittenStarts.length === 1) {
			this.hooks.willWrite();
			this.unwrittenStarts.length = 0;
			start.written = true;
			this.hooks.insertStep(row, [start.record, record]);
			this.rows.set(row.key, row);
			return;
		}
		// A retry's start not written yet (it settled at once): written with its outcome, in one transaction.
		if (!start.written) return this.transact(() => this.writeWithRecord(row, record));
		this.writeWithRecord(row, record);
	}

	/** Before every write of the pass: the unwritten starts first, then the engine's own `willWrite` (marking the instance running). */
	willWrite(): void {
		if (this.unwrittenStarts.length > 0) {
			// One begun in this pass may be written after a terminate or restart came: then none is.
			this.checkAbort();
			this.hooks.willWrite();
			for (const start of this.unwrittenStarts.splice(0)) {
				if (start.first) this.hooks.insertStep(start.row, [start.record]);
				else this.hooks.writeStepWithRecord(start.row, start.record);
				this.rows.set(start.row.key, start.row);
				start.written = true;
			}
		}
		this.hooks.willWrite();
	}

	/**
	 * A terminate is about to be stored: attempts begun and not yet written (their function ran,
	 * or runs) are written now, before it, so the terminate finds them and cancels them: an
	 * attempt that ran always has its record, even when the terminate came within its first
	 * microtask turns (issue 49).
	 */
	writeUnwrittenStarts(): void {
		if (this.unwrittenStarts.length === 0) return;
		try {
			this.willWrite();
		} catch (signal) {
			// An earlier terminate or restart cut this pass already: its attempts were not this terminate's to record.
			if (!(signal instanceof AbortSignal_)) throw signal;
		}
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
