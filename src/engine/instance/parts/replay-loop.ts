import { ErrorCode, ValidationError } from '../../support/errors';
import { historyError, historyRow, type HistoryRecord, type NewHistoryRow } from '../../history/history';
import { historyRecordBytes } from '../../definition/instance-limits';
import { identifiedTracer } from '../../support/identified-tracer';
import { SPAN } from '../../support/tracer';
import { CONTINUE_WAKEUP, DEFAULT_INVOCATION_BUDGET, InvocationMeter } from '../../steps/invocation-budget';
import { fromStoredJson, toStoredJson, utf8Bytes } from '../../support/json';
import { MAX_INSTANCE_ROW_BYTES } from '../../support/limits';
import { rollbackOrder, RollbackRunner } from '../../steps/rollback-runner';
import { readRollbackState, storedRollbackState, type RollbackState } from '../../steps/rollback-state';
import { AbortSignal_, SuspendSignal, isSignal } from '../../steps/signals';
import { PassStorage } from '../../steps/pass-storage';
import { StepContext } from '../../steps/step-context';
import type { PassHooks } from '../../steps/pass-hooks';
import type { Divergence } from '../../steps/divergence';
import { StepRows } from '../../steps/step-rows';
import { applyAttributeUpdate, attributesJson, parseAttributes } from '../../index/search-attributes';
import type { ResolvedEntry } from '../../definition/registry';
import { StreamRate } from '../../streams/stream';
import type { InstanceRow, StepRow } from '../../storage/store';
import { describeThrown } from '../../support/thrown-value';
import type { StepKind } from '../../support/step-kinds';
import { FINISHED_STATUSES, type WorkflowStatus } from '../../support/statuses';
import type { InstancePart } from '../part';
import { errorOf } from '../row-views';
import { WATCHDOG_MS } from '../../support/timing';
import { PassScheduling } from './pass-scheduling';
import { childPlaceOf } from '../child-place';

/** The statuses a pass runs in. */
export const RUNNABLE: readonly WorkflowStatus[] = ['created', 'running', 'sleeping', 'waiting'];

/** The wake-ups a pass set (spared when it deletes those due as it began), and how it sets one. */
interface PassWakeups {
	keys: Set<string>;
	set(key: string, at: number): void;
}
type PassLogRecord = Parameters<PassHooks['log']>[0];

/** What a pass's run() race answers when a terminate or restart came first. */
const INTERRUPTED = Symbol('interrupted');
/** How a pass's run() ended: its output, or what it threw. */
type RunOutcome = { ok: true; output: unknown } | { ok: false; error: unknown };
/**
 * Microtask turns a first pass's run() may take before the instance is marked running: a run()
 * that returns at once (no step, nothing awaited) settles within two or three.
 */
const RUN_SETTLE_TURNS = 8;

/** Whether `work` settles within `turns` microtask turns (it awaits no I/O, no timer). */
async function settlesWithin(work: Promise<unknown>, turns: number): Promise<boolean> {
	let settled = false;
	void work.then(() => (settled = true));
	for (let turn = 0; turn < turns && !settled; turn++) await undefined;
	return settled;
}

/**
 * The replay loop: passes of `run()` from the top, completed steps answered from
 * storage, one pass at a time (a kick while one runs asks for another round; when a
 * pass runs, and the backoffs of passes that failed or were cut short, are
 * pass-scheduling.ts). It owns what a pass leaves behind (the outcome's transition,
 * a divergence, the rollbacks of a failed or terminated run).
 */
export class ReplayLoop extends PassScheduling implements InstancePart {
	/**
	 * The budget a failed forward pass leaves to the rollbacks it begins: they run in the next round
	 * of the loop, in the same invocation, so they spend what is left of it, not a budget of their own.
	 */
	private budgetLeft: InvocationMeter | undefined;
	/** The instance's publishing rate for `step.emit` (see stream.ts), across passes. */
	private readonly streamRate = new StreamRate();

	/** Rollbacks begin: durable (status, state and record in one transaction) before any runs. */
	beginRollback(row: InstanceRow, state: RollbackState, failure?: ReturnType<typeof describeThrown>): void {
		const error = failure ? { errorName: failure.name, errorMessage: failure.message, errorStack: failure.stack ?? null, errorCode: failure.code ?? null } : {};
		this.k.host.store.transaction(() => {
			// Pending sleeps, retries and timeouts of the run are over; rollback retries set their own.
			this.k.host.store.deleteAllWakeups();
			// So are its steps that had not finished (an attempt a terminate aborted, a sleep, a wait): cancelled, not rolled back.
			this.k.host.store.cancelUnfinishedSteps(this.k.host.now());
			this.k.transition(
				{ ...row, ...error, status: 'rolling_back', rollback: storedRollbackState(state) },
				{ kind: 'workflow.rolling_back', detail: { reason: state.reason, ...(failure ? { error: historyError(failure) } : {}) } },
			);
		});
	}

	rollbackSummary(state: RollbackState) {
		const completed = this.k.host.store.readStepsOfKind('rollback', 'completed').length;
		return { state: state.state as 'completed' | 'failed' | 'abandoned', completed, ...(state.failedStep ? { failedStep: state.failedStep } : {}) };
	}

	/**
	 * One replay pass: `run()` from the top, completed steps answered from
	 * storage. The instance turns `running` on the pass's first write, so a
	 * pass that only replays and suspends where it was changes nothing.
	 */
	protected async pass(): Promise<void> {
		// Every pass takes the notices that came before it, even one that returns at once: none outlives the next pass.
		const childPort = this.k.children.portForPass();
		const start = this.k.row;
		// Only the round right after the failed pass that left it may use it.
		const budgetLeft = this.budgetLeft;
		this.budgetLeft = undefined;
		if (start?.status === 'rolling_back') return this.rollbackPass(start, budgetLeft);
		if (!start || !RUNNABLE.includes(start.status)) return;
		const entry = this.k.entryOf(start);
		const generation = start.generation;
		const epoch = this.controlEpoch;
		const startedAt = this.k.host.now();
		this.k.host.ensureAlarmBy(startedAt + WATCHDOG_MS);
		const wakeups = this.passWakeups();
		const codeVersion = entry.version;
		const markRunning = () => {
			const row = this.k.row!;
			if (row.status === 'paused' || row.generation !== generation || !RUNNABLE.includes(row.status)) return;
			const newCode = (row.lastCodeVersion ?? null) !== codeVersion;
			if (row.status === 'running' && !newCode) return;
			const running: InstanceRow = { ...row, status: 'running', lastCodeVersion: codeVersion };
			// A first pass's `running` is written when someone could see it (kernel.ts `startRunning`).
			// So is a woken pass's, when the host holds it (EngineHost.holdsWokenRunning): storage keeps `sleeping` or `waiting`.
			const held = row.status === 'created' || (this.k.host.holdsWokenRunning === true && (row.status === 'sleeping' || row.status === 'waiting'));
			if (held && !newCode) return this.k.startRunning(running);
			// The first write of a pass under another code version than the last one records the change.
			this.k.transition(running, newCode ? { kind: 'workflow.code_changed', detail: { previous: row.lastCodeVersion ?? null, current: codeVersion } } : undefined);
		};
		// A first pass marks the instance running at its first write, or once run() is still pending after
		// a few microtask turns (it awaits I/O outside any step): a run that ends at once, writing nothing,
		// goes from created to its outcome in one transition instead of two. A pass under new code marks it
		// at once, with the record of the change.
		const markWhenPending = start.status === 'created' && (start.lastCodeVersion ?? null) === codeVersion;
		if (start.status === 'created' && !markWhenPending) markRunning();

		const rows = StepRows.load(this.k.host.store);
		const meter = this.newMeter(entry);
		// Records since the last status change (an event, or a pass a crash cut short): usually none.
		this.k.uncountedHistoryBytes = this.k.host.store.historySize(this.k.row!.historySeq ?? 0).bytes;
		/** A record of this pass as a history row, its bytes added to the running total. */
		const counted = (record: HistoryRecord) => {
			const row = historyRow(record, generation, this.k.host.now());
			this.k.uncountedHistoryBytes += historyRecordBytes(row);
			return row;
		};
		const storage = new PassStorage();
		const store = storage.store(this.k.host.store);
		rows.readThrough(store);
		const step = new StepContext(store, rows, entry, storage.hooks({
			...this.commonHooks(start, wakeups, counted),
			willWrite: markRunning,
			// A pass after one cut short writes each attempt's start first (see PassHooks.startsFirst).
			startsFirst: this.cutPasses !== undefined,
			invocationSpent: (at) => meter.spentBefore(at),
			attemptSettledAtOnce: () => meter.settledAtOnce(),
			logsStepCompletions: this.k.host.logStepCompletions === true,
			wrapStepFunction: this.k.host.wrapStepFunction,
			...(childPort
				? {
						children: {
							port: childPort,
							parentId: start.id,
							parentType: start.type,
							generation,
							assertRegistered: (type: string) => void this.k.host.registry.get(type),
							placeChild: (type: string, payload: unknown) => childPlaceOf(this.k.host.registry, type, payload),
							...(this.k.host.inlineChildren ? { inline: this.k.inline } : {}),
						},
					}
				: {}),
			checkBoundary: () => {
				const row = this.k.row!;
				if (row.generation !== generation) throw new AbortSignal_('restarted');
				if (row.status === 'terminated' || row.status === 'rolling_back') throw new AbortSignal_('terminated');
				if (row.status === 'paused') throw new SuspendSignal('paused');
			},
			...(this.k.host.holdStep ? { holdStep: (kind: StepKind) => this.k.host.holdStep!(kind) } : {}),
			issueWebhook: this.webhookIssuer(start, generation),
			setAttributes: (update, stepRow, stepName) => this.setAttributes(entry, update, stepRow, stepName),
			streams: {
				recordedBefore: () => store.lastStreamMessageIndex(generation),
				take: (at, topic) => this.streamRate.take(at, topic),
			},
		}), storage);

		this.activeStep = step;
		// A terminate or restart ends the pass at once, even while run() awaits an attempt that
		// ignores its signal: the attempt's outcome no longer counts, and a restart's new
		// generation must not wait for it.
		const interrupted = new Promise<typeof INTERRUPTED>((resolve) => (this.cutPass = () => resolve(INTERRUPTED)));
		const ran = (async (): Promise<RunOutcome | typeof INTERRUPTED> => {
			try {
				const workflow = new entry.workflow({ id: start.id, type: start.type, env: this.k.host.env });
				const output = await Promise.race([workflow.run(step, fromStoredJson(start.payload)), interrupted]);
				return output === INTERRUPTED ? INTERRUPTED : { ok: true, output };
			} catch (error) {
				return { ok: false, error };
			}
		})();
		if (markWhenPending && !(await settlesWithin(ran, RUN_SETTLE_TURNS))) {
			try {
				markRunning();
			} catch (error) {
				// The pass fails as if the mark had come first (before run()): its attempts stop.
				step.cancel(new DOMException('the pass failed to mark the instance running', 'AbortError'));
				this.cutPass?.();
				throw error;
			}
		}
		const outcome = await ran;
		if (outcome === INTERRUPTED) {
			if (this.activeStep === step) this.activeStep = undefined;
			return;
		}
		// Attempts still running (parallel steps) finish and checkpoint before the pass ends,
		// so the next pass never starts them again; a terminate or restart stops the wait.
		await Promise.race([step.settle(), interrupted]);
		if (this.activeStep === step) this.activeStep = undefined;
		// The storage failed under the pass: the pass fails (drivePass backs off and the alarm retries
		// it), whatever run() made of the signal it got instead of the error.
		if (step.storageFailure !== undefined) throw step.storageFailure;
		// A run() that settled short of its recorded steps dropped one (a divergence too).
		const divergence = step.divergence ?? (outcome.ok || !isSignal(outcome.error) ? await step.unreachedAtEnd() : undefined);

		const now = this.k.row!;
		if (now.generation !== generation || FINISHED_STATUSES.includes(now.status) || now.status === 'rolling_back') return;
		// Wake-ups that were due when the pass began have had their turn; those it set have not,
		// however due (a retry delay, sleep or timeout of 0 sets one at `startedAt` itself).
		this.k.host.store.deleteWakeupsDue(startedAt, wakeups.keys);
		// A pause holds whatever this pass reached, its last step included: the instance ends
		// only after a resume, whose replay reaches the same outcome from the stored steps.
		if (now.status === 'paused') return;
		const signal = step.signal;
		if (divergence) {
			this.diverge(now, divergence, codeVersion ?? null);
		} else if (step.fatal) {
			this.fail(now, step.fatal);
		} else if (signal instanceof SuspendSignal) {
			// pause() stored `paused` itself. If a control call came after this pass began
			// (a resume, say), its result stands and the next pass decides.
			if (signal.status === 'paused' || this.controlEpoch !== epoch) return;
			// The invocation's budget is spent: the instance stays `running` and its alarm, due now, continues it in a new invocation.
			if (signal.status === 'running') return this.k.host.store.transaction(() => wakeups.set(CONTINUE_WAKEUP, this.k.host.now()));
			if (now.status !== signal.status) this.k.transition({ ...now, status: signal.status });
		} else if (signal instanceof AbortSignal_) {
			return;
		} else if (outcome.ok) {
			let output: string | null;
			try {
				output = toStoredJson(outcome.output, 'workflow output');
				assertRowFits({ ...now, output });
			} catch (error) {
				this.fail(now, error);
				return;
			}
			this.k.transition({ ...now, status: 'completed', output }, { kind: 'workflow.completed', value: output });
		} else if (step.rollbacks.size > 0) {
			// run() failed for good and completed steps have rollbacks: the next pass runs them, in this invocation's budget.
			this.beginRollback(now, { reason: 'failed', state: 'running' }, describeThrown(outcome.error));
			this.budgetLeft = meter;
			this.kick();
		} else {
			this.fail(now, outcome.error);
		}
	}

	/** A pass's meter of a fresh invocation's budget: the host's, with the type's own step budget if it declares one. */
	private newMeter(entry: ResolvedEntry): InvocationMeter {
		const budget = this.k.host.invocationBudget ?? DEFAULT_INVOCATION_BUDGET;
		return new InvocationMeter({ ...budget, steps: entry.limits.stepsPerInvocation ?? budget.steps }, this.k.host.now());
	}

	/**
	 * The hooks every pass lends its step context alike (see PassHooks): the clock, the
	 * yield, the writes of its records (`toRow` makes a record a history row, counting its
	 * bytes or not), its wake-ups, the history's size and its log.
	 */
	private commonHooks(start: InstanceRow, wakeups: PassWakeups, toRow: (record: HistoryRecord) => NewHistoryRow) {
		const { host } = this.k;
		const generation = start.generation;
		return {
			now: () => host.now(),
			yieldToEventLoop: () => host.yieldToEventLoop(),
			record: (record: HistoryRecord) => host.store.appendHistory(toRow(record)),
			setWakeup: wakeups.set,
			writeStepWithRecord: (stepRow: StepRow, record: HistoryRecord) => host.store.writeStepWithRecord(stepRow, toRow(record)),
			insertStep: (stepRow: StepRow, records: readonly HistoryRecord[]) => host.store.insertStep(stepRow, records.map(toRow)),
			historyBytes: () => (this.k.row!.historyBytes ?? 0) + this.k.uncountedHistoryBytes,
			log: (record: PassLogRecord) => host.log?.({ instanceId: start.id, type: start.type, generation, ...record }),
			// Only a traced pass lends its attempts the tracer: an unsampled one stays so, and its attempts skip even the check.
			...(host.tracer && this.passTraced ? { tracer: identifiedTracer(host.tracer, { [SPAN.type]: start.type, [SPAN.instanceId]: start.id, [SPAN.generation]: generation }) } : {}),
		};
	}

	/**
	 * A `step.setAttributes`: the step's row, its `attributes.set` record, the instance row with
	 * the new attributes and its index update, in one transaction (a transition that keeps the
	 * status: the version grows, so the shards take the entry over the one they hold).
	 */
	private setAttributes(entry: ResolvedEntry, update: Record<string, unknown>, stepRow: StepRow, stepName: string): void {
		const row = this.k.row!;
		const attributes = applyAttributeUpdate(row.type, entry.attributes, parseAttributes(row.attributes), update);
		const set = Object.fromEntries(Object.entries(update).map(([name, value]) => [name, value instanceof Date ? value.getTime() : (value ?? null)]));
		this.k.host.store.transaction(() => {
			this.k.host.store.writeStep(stepRow);
			this.k.transition({ ...row, attributes: attributesJson(attributes) }, { kind: 'attributes.set', step: stepName, detail: { set, attributes } });
		});
	}

	/**
	 * How a pass sets wake-ups: through the store, noting each key, so the pass's end
	 * spares them when it deletes the wake-ups that were due as it began.
	 */
	private passWakeups(): PassWakeups {
		const keys = new Set<string>();
		return {
			keys,
			set: (key, at) => {
				this.k.host.store.setWakeup(key, at);
				keys.add(key);
			},
		};
	}

	/** Signs webhook tokens of this instance's generation, when the host can. */
	private webhookIssuer(row: InstanceRow, generation: number): ((step: string, nonce: string) => Promise<string>) | undefined {
		const port = this.k.host.webhooks;
		if (!port) return undefined;
		return (step, nonce) => port.issue({ id: row.id, generation, step, nonce });
	}

	/**
	 * A pass of an instance that is rolling back. The rollback closures live in the
	 * code, not in storage, so `run()` is replayed first in replay-only mode: every
	 * completed step answers from its record and registers its rollback, nothing
	 * new runs or is written. Then the rollbacks run, newest completion first,
	 * each checkpointed (see rollback-runner.ts); completed ones are skipped, so a
	 * crash anywhere resumes where it stopped. The same pass serves the first run
	 * of the rollbacks and every resumption (alarm, retry, eviction, continuation).
	 * Compensations count against the invocation's budget as steps do (`budgetLeft`:
	 * what the failed pass before it in this invocation left); once it is spent the
	 * pass ends and its alarm, due now, continues the rollbacks in a new invocation.
	 */
	private async rollbackPass(start: InstanceRow, budgetLeft: InvocationMeter | undefined): Promise<void> {
		const state = readRollbackState(start);
		if (!state) return;
		const entry = this.k.entryOf(start);
		const meter = budgetLeft ?? this.newMeter(entry);
		const generation = start.generation;
		const startedAt = this.k.host.now();
		this.k.host.ensureAlarmBy(startedAt + WATCHDOG_MS);
		const wakeups = this.passWakeups();
		const stillRollingBack = () => this.k.row?.status === 'rolling_back' && this.k.row.generation === generation;
		// Guarded as a forward pass's storage is: a storage failure fails this pass (and it is retried),
		// never a compensation, and never the replay that learns which compensations there are.
		const storage = new PassStorage();
		const store = storage.store(this.k.host.store);
		const rows = StepRows.load(this.k.host.store).readThrough(store);
		const hooks = storage.hooks({
			...this.commonHooks(start, wakeups, (r) => historyRow(r, generation, this.k.host.now())),
			willWrite: () => {},
			logsStepCompletions: false,
			wrapStepFunction: undefined,
			checkBoundary: () => {
				if (!stillRollingBack()) throw new AbortSignal_('terminated');
			},
			replayOnly: true,
		});
		const { record, log } = hooks;
		const step = new StepContext(store, rows, entry, hooks, storage);
		try {
			const workflow = new entry.workflow({ id: start.id, type: start.type, env: this.k.host.env });
			const run = Promise.resolve().then(() => workflow.run(step, fromStoredJson(start.payload)));
			await step.replayRecorded(run);
		} catch {
			// The constructor threw: no closures to learn; the recorded ones are all there is.
		}
		// A replay the storage cut short learned only some of the rollbacks: running those would skip the others for good.
		if (storage.failure !== undefined) throw storage.failure;
		if (!stillRollingBack()) return;
		const runner = new RollbackRunner(store, rows, {
			now: () => this.k.host.now(), record, setWakeup: wakeups.set, stillRollingBack, log,
			invocationSpent: (at) => meter.spentBefore(at),
			attemptSettledAtOnce: () => meter.settledAtOnce(),
			...(hooks.tracer ? { tracer: hooks.tracer } : {}),
		});
		this.activeRollback = runner;
		let outcome;
		try {
			outcome = await runner.run(rollbackOrder(this.k.host.store, generation, step.rollbacks.values()));
		} catch (error) {
			throw storage.failure ?? error;
		} finally {
			this.activeRollback = undefined;
		}
		const now = this.k.row!;
		if (!stillRollingBack() || outcome.kind === 'aborted') return;
		this.k.host.store.deleteWakeupsDue(startedAt, wakeups.keys);
		if (outcome.kind === 'suspended') return;
		// The invocation's budget is spent: the instance stays `rolling_back` and its alarm, due now, continues in a new invocation.
		if (outcome.kind === 'continue') return this.k.host.store.transaction(() => wakeups.set(CONTINUE_WAKEUP, this.k.host.now()));
		const done: RollbackState =
			outcome.kind === 'completed' ? { ...state, state: 'completed' } : { ...state, state: 'failed', failedStep: outcome.step, error: outcome.error };
		const rollback = storedRollbackState(done);
		const summary = this.rollbackSummary(done);
		if (state.reason === 'terminated') {
			// The children go once the parent's own rollbacks are done, as with a plain terminate (retried from the alarm).
			const children = this.k.children.toTerminate();
			this.k.host.store.transaction(() => {
				this.k.children.arm(children);
				this.k.transition({ ...now, status: 'terminated', rollback }, { kind: 'workflow.terminated', detail: { rollback: summary } });
			});
			this.k.children.start(children);
		} else {
			this.k.transition({ ...now, status: 'errored', rollback }, { kind: 'workflow.errored', detail: { error: historyError(errorOf(now)), rollback: summary } });
		}
	}

	/**
	 * The code parted from the recorded steps: stop, describe where, run nothing new until a
	 * resume or a restart. Parks the instance as `diverged`, saying which code parked it: the record carries the
	 * pass's code version and, when that differs from the last one, a `workflow.code_changed`
	 * comes first (a diverging pass often writes nothing before, so nothing else recorded it).
	 */
	private diverge(row: InstanceRow, divergence: Divergence, codeVersion: string | null): void {
		const { position, recorded, requested } = divergence;
		const asked = requested.kind === 'end' ? 'run() settled' : `the code asked for ${requested.kind} "${requested.name}"`;
		const message = recorded
			? `the code diverged from the recorded steps at position ${position}: the history has ${recorded.kind} "${recorded.name}" there, ${asked}; nothing new ran. Deploy code that replays this history (see step.patched) and resume, or restart the instance`
			: `the code diverged from the recorded steps at position ${position}: ${asked}; nothing new ran`;
		const previous = row.lastCodeVersion ?? null;
		this.k.host.store.transaction(() => {
			if (previous !== codeVersion) {
				this.k.host.store.appendHistory(historyRow({ kind: 'workflow.code_changed', detail: { previous, current: codeVersion } }, row.generation, this.k.host.now()));
			}
			this.k.transition(
				{ ...row, status: 'diverged', lastCodeVersion: codeVersion, errorName: 'DivergenceError', errorMessage: message, errorStack: null, errorCode: ErrorCode.Diverged },
				{ kind: 'workflow.diverged', detail: { position, recorded, requested, codeVersion } },
			);
		});
	}

	private fail(row: InstanceRow, error: unknown): void {
		const described = describeThrown(error);
		const { name, message, stack, code } = described;
		this.k.transition(
			{ ...row, status: 'errored', errorName: name, errorMessage: message, errorStack: stack ?? null, errorCode: code ?? null },
			{ kind: 'workflow.errored', detail: { error: historyError(described) } },
		);
	}
}


/** Refuses an instance row production's SQLite could not store (payload and output share it; see `MAX_INSTANCE_ROW_BYTES`). */
function assertRowFits(row: InstanceRow): void {
	const text = [row.payload, row.output, row.errorMessage, row.errorStack, row.rollback ?? null];
	const bytes = text.reduce((sum, value) => sum + utf8Bytes(value), 0);
	if (bytes > MAX_INSTANCE_ROW_BYTES) {
		throw new ValidationError(
			ErrorCode.TooLarge,
			`the workflow output (${utf8Bytes(row.output)} bytes) does not fit beside its payload (${utf8Bytes(row.payload)} bytes): an instance row holds at most ${MAX_INSTANCE_ROW_BYTES} bytes in production (docs/deploying.md "Production limits")`,
		);
	}
}
