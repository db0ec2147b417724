import { DeterminismError, HistoryLimitExceededError, StepLimitExceededError } from '../support/errors';
import type { PassHooks } from './pass-hooks';
import type { PassStorage } from './pass-storage';
import { ReplayFrontier, type Divergence } from './divergence';
import { PassJournal } from './pass-journal';
import { fromStoredJson } from '../support/json';
import type { ResolvedEntry } from '../definition/registry';
import { DEFAULT_RETRY_POLICY } from '../definition/retry-policy';
import type { RegisteredRollback } from './rollback-runner';
import { AbortSignal_, SuspendSignal } from './signals';
import type { AttemptAbort } from './attempt';
import { stepKey } from './step-key';
import { assertValidStepName } from './step-name';
import type { PassStore, StepRow } from '../storage/store';
import { StepRows } from './step-rows';
import type { StepDoOptions } from '../definition/types';
import type { StepKind } from '../support/step-kinds';
import { StartGate } from './start-gate';

/** The shared opening's answer for a step (`StepContext.open`): its recorded outcome, or a replay-only pass's promise that never settles. */
export interface Answered<T> {
	answer: T | Promise<T>;
}

/**
 * A step the shared opening lets go on: its key, its row when it began in an earlier pass, and
 * what to await before anything is written, when there is something: its turn to begin when
 * the slice between two yields is used up (start-gate.ts), and, for a new step while recorded
 * steps remain unreached, the divergence check.
 */
export interface Opened {
	key: string;
	row: StepRow | undefined;
	ready: Promise<void> | undefined;
}

/** What a step kind gives the shared opening. */
export interface Opening<T> {
	/** Checks run on replays too, right after the step is claimed (its options). */
	check?: () => void;
	/** The step's answer from its row, when the row holds its outcome; undefined: the step goes on. */
	recorded?: (row: StepRow) => Answered<T> | undefined;
}

/**
 * Replayed (cached) steps between two yields. A replayed step costs a lookup and a
 * JSON.parse, about a tenth of a new one, but a replay of thousands of them used to run
 * without ever yielding and held every other request of the isolate meanwhile.
 */
export const REPLAYED_STEPS_PER_YIELD = 256;

/**
 * How every step of one pass begins (step-context.ts holds the step kinds): the pass's state,
 * the shared opening (`open`: claim, recorded answer, replay-only park, divergence check),
 * replayed answers, and the pass's boundaries (signals, cancellation, settling).
 */
export abstract class StepOpening {
	/** Which steps this pass reached, against those recorded before it (divergence tracking). */
	protected readonly frontier: ReplayFrontier;
	/** The pass's step rows and how they are written (shared with child-step.ts). */
	protected readonly journal: PassJournal;
	/** Attempts started and not yet stored; the pass waits for them before it ends. */
	protected running = 0;
	protected whenIdle: (() => void) | undefined;
	/** Set once `run()` has settled: steps called after that (orphaned branches) do not run. */
	private closed = false;
	/** Which new steps begin now and when the pass yields (start-gate.ts). */
	protected readonly gate: StartGate;
	private replayedSinceYield = 0;
	/** Set when the code asked for something the recorded steps do not have; the pass stops there. */
	divergence: Divergence | undefined;
	/** Abort handles of the attempts in flight, and why they were cancelled (terminate, restart). */
	protected readonly liveAttempts = new Set<AttemptAbort>();
	protected cancelled: unknown;
	/** The rollbacks of the completed steps this pass reached, by step name (see rollback-runner.ts). */
	readonly rollbacks = new Map<string, RegisteredRollback>();
	/** Keys of the completed `do` steps recorded before this pass: a replay-only pass is done once it reached them all. */
	private readonly completedDo: ReadonlySet<string>;

	constructor(
		protected readonly store: PassStore,
		protected readonly rows: StepRows,
		protected readonly entry: ResolvedEntry,
		protected readonly hooks: PassHooks,
		/** The pass's guarded storage (pass-storage.ts), whose failure ends the pass, not the run. */
		private readonly storage?: PassStorage,
	) {
		storage?.listen((signal) => (this.journal.signal ??= signal));
		this.gate = new StartGate(hooks, () => this.signal !== undefined || this.closed);
		this.frontier = new ReplayFrontier(rows.values(), () => hooks.yieldToEventLoop());
		this.journal = new PassJournal(store, rows, hooks, entry.limits, this.frontier.recordedCount);
		this.completedDo = new Set([...rows.values()].filter((row) => row.kind === 'do' && row.status === 'completed').map((row) => row.key));
	}

	/** A suspension or abort already signalled in this pass; sticks even if `run()` catches it. */
	get signal(): SuspendSignal | AbortSignal_ | undefined {
		return this.journal.signal;
	}

	/** A failure of the storage under this pass: the pass fails (and is retried), whatever `run()` did. */
	get storageFailure(): unknown {
		return this.storage?.failure;
	}

	/** A determinism error or an exceeded limit; fails the workflow even if `run()` catches it. */
	get fatal(): DeterminismError | StepLimitExceededError | HistoryLimitExceededError | undefined {
		return this.journal.fatal;
	}

	/**
	 * Lets a replay-only pass's `run()` go as far as the recorded outcomes take it:
	 * resolves once it settled, reached every completed `do` step, or a turn of the
	 * event loop passed with no step reached (every branch waits on a step that
	 * has no outcome: those never settle in a replay-only pass).
	 */
	async replayRecorded(run: Promise<unknown>): Promise<void> {
		let settled = false;
		void run.then(
			() => (settled = true),
			() => (settled = true),
		);
		const reachedAll = () => [...this.completedDo].every((key) => this.frontier.has(key));
		for (;;) {
			const before = this.frontier.claimedCount;
			await this.hooks.yieldToEventLoop();
			if (settled || reachedAll() || this.frontier.claimedCount === before) return;
		}
	}

	/** A write made outside the pass (a webhook's POST): later reads of the pass see it. */
	noteStepRow(row: StepRow): void {
		if (this.rows.has(row.key)) this.rows.set(row.key, row);
	}

	/** What a replay-only pass answers for a step without a recorded outcome: nothing, ever. */
	protected parked<T>(): Promise<T> {
		return new Promise<T>(() => {});
	}

	/** Remembers a completed step's rollback; its result is read again (from storage when large) only if the rollback runs. */
	protected registerRollback(name: string, key: string, options: StepDoOptions | undefined): void {
		const fn = options?.rollback;
		if (typeof fn !== 'function') return;
		const retries = options?.rollbackRetries ?? this.entry.workflow.defaults?.retries ?? DEFAULT_RETRY_POLICY;
		this.rollbacks.set(name, { name, fn, retries, timeout: options?.rollbackTimeout, result: () => this.rows.get(key)?.result ?? null });
	}

	/**
	 * Aborts the signal of every attempt in flight (and of any attempt this pass still
	 * starts): a terminate or restart reaches a `fetch(url, {signal})` that is running.
	 */
	cancel(reason: unknown): void {
		this.cancelled ??= reason;
		for (const abort of this.liveAttempts) abort(reason);
	}

	/** Before a terminate is stored: the attempts begun and not yet written get their rows and records (see `PassJournal.writeUnwrittenStarts`). */
	recordBegunAttempts(): void {
		this.journal.writeUnwrittenStarts();
	}

	/**
	 * Stops new steps and resolves once every attempt in flight has stored its
	 * outcome. Parallel steps (Promise.all/allSettled/race) can leave an attempt
	 * running after run() has settled; waiting for it means no later pass starts
	 * the same step again. Completions that arrive after a terminate or restart
	 * are dropped by the boundary check, so the engine need not wait for them.
	 */
	async settle(): Promise<void> {
		this.closed = true;
		if (this.running > 0) await new Promise<void>((resolve) => (this.whenIdle = resolve));
	}

	/**
	 * The steps `run()` never reached although they were recorded, when it settled
	 * without a suspension: the code dropped a step the history has.
	 */
	unreachedAtEnd(): Promise<Divergence | undefined> {
		if (!this.frontier.behind() || this.signal || this.fatal) return Promise.resolve(undefined);
		return this.frontier.unreachedAtEnd();
	}

	/**
	 * A step with no record while recorded steps remain unreached: the code changed
	 * under this instance (or a step name is not deterministic). Nothing new runs.
	 */
	private async assertOnRecord(kind: StepKind, name: string): Promise<void> {
		const divergence = await this.frontier.divergenceAt(kind, name);
		if (!divergence) return;
		if (this.signal) throw this.signal;
		this.divergence ??= divergence;
		throw (this.journal.signal = new AbortSignal_('diverged'));
	}

	/**
	 * The opening every keyed step kind shares (do, sleep, sleepUntil, waitForEvent, invoke and
	 * start, setAttributes, webhook, patched, deprecatePatch): claims the step in the pass
	 * (`enter`), runs the kind's `check`, reads its row from the rows loaded for the pass and
	 * lets `recorded` answer from it; parks a step with no recorded answer in a replay-only pass;
	 * and for a new step while recorded steps remain unreached hands back the divergence check
	 * (divergence.ts) to await before the step writes anything. A patch marker is never a
	 * divergence: `patched` asks the frontier whether the history passed its point instead.
	 * Synchronous: a step adds no turn of the event loop to what it did before.
	 */
	protected open<T>(kind: StepKind, name: string, opening: Opening<T>): Answered<T> | Opened {
		const key = this.enter(kind, name);
		opening.check?.();
		const row = this.rows.get(key);
		if (row && opening.recorded) {
			const answered = opening.recorded(row);
			if (answered) return answered;
		}
		if (this.hooks.replayOnly) return { answer: this.parked<T>() };
		// An inline child's run hands over before a step it does not take (instance/inline-child.ts).
		const held = row ? undefined : this.hooks.holdStep?.(kind);
		if (held) return { key, row, ready: held };
		const onRecord = kind !== 'patch' && !row && this.frontier.behind() ? this.assertOnRecord(kind, name) : undefined;
		const admitted = this.gate.admit();
		if (!admitted) return { key, row, ready: onRecord };
		// Its turn came after yields: a pause, terminate or restart may have come meanwhile, or the pass stopped.
		const turn = admitted.then(() => this.assertStillOpen());
		return { key, row, ready: onRecord ? Promise.all([turn, onRecord]).then(() => undefined) : turn };
	}

	/** A replayed `do`: its result, and its rollback remembered; every REPLAYED_STEPS_PER_YIELD replays, after a yield. */
	protected replayedDo<T>(name: string, row: StepRow, options: StepDoOptions | undefined): T | Promise<T> {
		this.registerRollback(name, row.key, options);
		if (++this.replayedSinceYield < REPLAYED_STEPS_PER_YIELD) return fromStoredJson(row.result) as T;
		this.replayedSinceYield = 0;
		return this.hooks.yieldToEventLoop().then(() => fromStoredJson(row.result) as T);
	}

	/** Throws the pass's signal, or `finished` once `run()` has settled. */
	protected assertOpen(): void {
		if (this.signal) throw this.signal;
		if (this.closed) throw new AbortSignal_('finished');
	}

	/** Every step starts here: replay rules, then pause/terminate checks. */
	private enter(kind: StepKind, name: string): string {
		if (this.signal) throw this.signal;
		assertValidStepName(name);
		const key = stepKey(kind, name);
		if (this.closed) {
			// Not run, but reached: a recorded step asked for after run() settled is no divergence.
			this.frontier.reachAfterClose(key);
			throw new AbortSignal_('finished');
		}
		if (!this.frontier.claim(key)) {
			this.journal.fatal = new DeterminismError(
				`step name "${name}" (${kind}) is used twice in one run; step names must be unique and deterministic (no Date.now() or random values in names)`,
			);
			throw this.journal.fatal;
		}
		this.checkBoundary();
		return key;
	}

	/** A step that waited for its turn to begin (start-gate.ts) begins only if the pass is still open and no control came meanwhile. */
	private assertStillOpen(): void {
		this.assertOpen();
		this.checkBoundary();
	}

	/** Throws (and keeps) the signal of a pause, terminate or restart since the pass began. */
	private checkBoundary(): void {
		try {
			this.hooks.checkBoundary();
		} catch (signal) {
			if (signal instanceof SuspendSignal || signal instanceof AbortSignal_) this.journal.signal = signal;
			throw signal;
		}
	}
}
