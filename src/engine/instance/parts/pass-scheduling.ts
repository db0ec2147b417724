import { SPAN, type TraceSpan } from '../../support/tracer';
import { CONTINUE_WAKEUP } from '../../steps/invocation-budget';
import type { RollbackRunner } from '../../steps/rollback-runner';
import type { StepContext } from '../../steps/step-context';
import type { CutPasses, StepRow } from '../../storage/store';
import { SingleFlight } from '../../support/single-flight';
import { describeThrown } from '../../support/thrown-value';
import type { PartKernel } from '../part';
import type { PassFailures } from '../pass-failures';
import { FailingPassReporter } from '../failing-passes';
import { cutAttempt } from '../cut-attempt';
import { cutPassBackoffMs, outboxBackoffMs, WATCHDOG_MS } from '../../support/timing';

/**
 * When a replay pass runs (replay-loop.ts holds what a pass does): one pass at a time (a kick
 * while one runs asks for another round), the alarm and the watchdog, the backoffs of passes
 * that failed or were cut short, and the interrupts of a terminate or restart.
 */
export abstract class PassScheduling {
	private readonly loop: SingleFlight;
	/** Grows on every pause, resume, terminate and restart: a pass that began before one must not undo it. */
	protected controlEpoch = 0;
	/**
	 * Ends the pass in flight (its run() and its wait for attempts) at a terminate or restart.
	 * One promise per pass, dropped when the pass ends: a promise shared by every pass and
	 * settled only by an interrupt would collect one handler per pass for the instance's life.
	 */
	protected cutPass: (() => void) | undefined;
	/** The step context of the pass in flight, so a terminate can abort its running attempts. */
	protected activeStep: StepContext | undefined;
	/** The rollbacks running now, so a terminate that abandons them aborts the attempt in flight. */
	protected activeRollback: RollbackRunner | undefined;
	/** Passes cut short in a row, as stored (see `cutPassBackoffMs`); read once when the engine starts. */
	protected cutPasses: CutPasses | undefined;
	/** Whether the pass in flight has a span (its invocation is sampled): its attempts are traced only then. */
	protected passTraced = false;
	/** Reports runs of failed or cut passes to the type's backlog object (failing-passes.ts). */
	private readonly failing: FailingPassReporter;

	constructor(
		protected readonly k: PartKernel,
		private readonly failures: PassFailures,
	) {
		this.cutPasses = k.row ? k.host.store.readCutPasses() : undefined;
		this.failing = new FailingPassReporter(k.host);
		this.loop = new SingleFlight({
			background: (flight) => k.host.background(flight),
			before: () => Promise.resolve(),
			round: () => this.drivePass(),
			after: () => k.rearm(),
		});
	}

	get inFlight(): Promise<void> | undefined {
		return this.loop.inFlight;
	}

	/** Starts the replay loop, or asks the running one to go round once more. */
	kick(): void {
		this.loop.request();
	}

	/** A pause or resume: a pass that began before it must not undo it. */
	noteControl(): void {
		this.controlEpoch++;
	}

	/** A step row written outside the pass (a webhook's call): the pass in flight sees it. */
	noteStepRow(row: StepRow): void {
		this.activeStep?.noteStepRow(row);
	}

	/** Passes that failed in a row (threw outside run(): storage, registry, bug), and when the next may run. */
	private get passFailures(): number {
		return this.failures.failures(this.k.row?.id ?? '');
	}
	private get passRetryAt(): number {
		return this.failures.retryAt(this.k.row?.id ?? '');
	}

	/**
	 * The wake-ups of the run (sleeps, retries, timeouts, a continuation; the child cascade's
	 * too), unless paused; and the watchdog: a pass in flight, one that failed and left the
	 * instance runnable, or a first pass not started yet is checked again later. If the isolate
	 * dies before that first pass, this alarm starts it (crash-point exploration found a create
	 * stuck in `created` without it).
	 */
	dueAt(now: number): number | undefined {
		const wake = this.k.host.store.earliestWakeup();
		const status = this.k.row?.status;
		const paused = status === 'paused' || status === 'diverged';
		const watchdog = status === 'running' || status === 'created' || (status === 'rolling_back' && wake === undefined) ? now + WATCHDOG_MS : undefined;
		const due = paused ? undefined : wake;
		if (due === undefined) return watchdog;
		return watchdog === undefined ? due : Math.min(due, watchdog);
	}

	/**
	 * After failed passes, nothing is due before the backoff ends (see `drivePass`); nor after passes cut short again and
	 * again (`backingOffCutPass`): their alarm stays at the backoff's end. Without it, an alarm that found the backoff
	 * running and was re-pointed where the parts are due (InstanceEngine.alarmAwaitingPass re-arms when its handler ends)
	 * went to the cut attempt's retry wake-up, already past: an alarm that never came again under local workerd (a run left
	 * `running` for good, found from outside: two kill -9 in a row during a retry's attempt awaiting I/O), or one firing
	 * in a loop until the backoff ended.
	 */
	holdUntil(): number | undefined {
		const failed = this.passFailures > 0 ? this.passRetryAt : undefined;
		const cut = this.cutPasses?.retryAt;
		return failed === undefined ? cut : cut === undefined ? failed : Math.max(failed, cut);
	}

	/**
	 * The alarm: while a pass is in flight it only re-arms the watchdog; the loop runs only
	 * when there is work for it (a due wake-up, or a pass a crash interrupted).
	 */
	onAlarm(now: number): boolean {
		if (this.loop.inFlight) {
			this.k.host.ensureAlarmBy(now + WATCHDOG_MS);
			return true;
		}
		if (!this.hasWork(now)) return false;
		if (!this.backingOffCutPass(now)) this.kick();
		return true;
	}

	/** One round of the loop: a pass, and what its end means for the backoffs. */
	private async drivePass(): Promise<void> {
		// The pass's span (none when this invocation is not traced): the step attempts' spans are its children.
		// Its attributes name the instance, so a pass after a crash is found beside the one it cut short.
		const before = this.k.row;
		const tracer = this.k.host.tracer;
		let span: TraceSpan | undefined;
		try {
			if (tracer && before) {
				const attrs = {
					[SPAN.type]: before.type, [SPAN.instanceId]: before.id, [SPAN.generation]: before.generation, [SPAN.status]: before.status,
					...(before.status === 'rolling_back' ? { [SPAN.rollback]: true } : {}),
				};
				await tracer.run('shardflow.pass', attrs, (s) => ((span = s), (this.passTraced = s !== undefined), this.pass()));
			} else {
				this.passTraced = false;
				await this.pass();
			}
			span?.set({ [SPAN.outcome]: this.k.gone ? 'deleted' : (this.k.row?.status ?? 'unknown') });
			if (before) this.failing.ended(before.type, before.id, this.passFailures, (this.cutPasses?.count ?? 1) - 1);
			if (this.k.row) this.failures.clear(this.k.row.id);
			// A pass that ended (however) ends the run of cut passes.
			if (this.cutPasses && !this.k.gone) {
				this.cutPasses = undefined;
				this.k.host.store.writeCutPasses(undefined);
			}
		} catch (error) {
			// Storage refused a write, a registry that cannot run, or a bug: the instance stays
			// runnable and the alarm armed by `rearm` tries again, backing off (1 s doubling to
			// 5 minutes) so that a lasting cause costs a few alarms, not a loop.
			const row = this.k.row;
			const failures = this.passFailures + 1;
			this.failures.note(row?.id ?? '', failures, this.k.host.now() + outboxBackoffMs(failures));
			if (row) this.failing.failed(row.type, row.id, 'failed', failures);
			const described = describeThrown(error);
			span?.fail(described);
			span?.set({ [SPAN.outcome]: 'pass_failed' });
			this.k.host.log?.({
				severity: 'error', event: 'pass.failed', instanceId: row?.id ?? '(none)', type: row?.type ?? '(none)', failures: this.passFailures,
				retryAt: new Date(this.passRetryAt).toISOString(), error: described,
			});
		} finally {
			span?.end();
			this.cutPass = undefined;
		}
	}

	/**
	 * The alarm of an instance left `running` or `created` with no pass in this engine: the
	 * watchdog of a pass that was cut short, or a continuation (invocation-budget.ts). Counts
	 * the passes the alarm starts without a pass ending in between, in storage, and answers
	 * true (the alarm moved to the backoff's end) while the backoff has not passed; false when
	 * the pass may start now. A pass that ends clears the count, and a continuation is not
	 * counted, so only passes cut short again and again (a crash loop) back off.
	 */
	private backingOffCutPass(now: number): boolean {
		const status = this.k.row!.status;
		if (status !== 'running' && status !== 'created' && !this.mayHideCutPass(now) && !this.cutAttemptAtRest()) return false;
		// A pass that spent its invocation's budget asked for this one (a continuation): not a cut pass. It takes the
		// wake-up now, so if this pass is cut short the next alarm counts it.
		if (this.k.host.store.takeWakeup(CONTINUE_WAKEUP)) return false;
		const cut = this.cutPasses;
		if (cut && now < cut.retryAt) {
			this.k.host.setAlarm(cut.retryAt);
			return true;
		}
		const count = (cut?.count ?? 0) + 1;
		this.cutPasses = { count, retryAt: now + cutPassBackoffMs(count) };
		this.k.host.store.writeCutPasses(this.cutPasses);
		if (count > 1) {
			this.failing.failed(this.k.row!.type, this.k.row!.id, 'cut', count - 1);
			// Named as pass.failed names them (failures in a row, retryAt: here the earliest the pass after this one may start
			// if this one is cut too), with the attempt the last cut interrupted.
			const attempt = cutAttempt(this.k.host.store);
			this.k.host.log?.({
				severity: 'error', event: 'pass.cut', instanceId: this.k.row!.id, type: this.k.row!.type, failures: count - 1,
				retryAt: new Date(this.cutPasses.retryAt).toISOString(), ...(attempt ? { step: attempt.name, attempt: attempt.attempts } : {}),
			});
		}
		return false;
	}

	/** Whether a pass would do anything now: a status that means a pass was cut short, or a due wake-up. */
	private hasWork(now: number): boolean {
		const status = this.k.row?.status;
		if (status === 'created' || status === 'running') return true;
		if (status === 'rolling_back') {
			// A rollback waiting for its retry has a wake-up; without one, a pass was cut short.
			const wake = this.k.host.store.earliestWakeup();
			return wake === undefined || wake <= now;
		}
		if (status !== 'sleeping' && status !== 'waiting') return false;
		const wake = this.k.host.store.earliestWakeup();
		if (wake !== undefined && wake <= now) return true;
		// A sleeping instance always has a wake-up; without one, a replay restores it.
		if (wake === undefined && status === 'sleeping') return true;
		// An event accepted just before a crash, whose pass never ran.
		if (this.k.host.store.eventBuffer().count > 0) return true;
		return this.mayHideCutPass(now);
	}

	/**
	 * A `sleeping` or `waiting` instance whose alarm finds nothing due (no wake-up, no buffered event), on a host whose
	 * woken passes hold `running` in memory (EngineHost.holdsWokenRunning): the alarm may be the watchdog of a woken
	 * pass cut short after it took its wake-up or its event, which storage cannot tell from a wait. A pass finds out:
	 * it replays and writes nothing if the run still waits, and resumes if it had gone on (counted as a cut pass, so a
	 * crash loop backs off as it does for a stored `running`). An alarm of such an instance with nothing due is rare
	 * otherwise (an index delivery's retry), but for a host that leaves an idle wait's alarm set
	 * (EngineHost.leavesIdleAlarm): there a woken pass that took its wake-up or its event recorded it (`sleep.finished`,
	 * `event.consumed`), so nothing recorded since the stored status change means no pass was cut: nothing to run.
	 */
	private mayHideCutPass(now: number): boolean {
		if (this.k.host.holdsWokenRunning !== true) return false;
		const status = this.k.row?.status;
		if (status !== 'sleeping' && status !== 'waiting') return false;
		const wake = this.k.host.store.earliestWakeup();
		if (wake !== undefined && wake <= now) return false;
		if (this.k.host.store.eventBuffer().count > 0) return false;
		return this.k.host.leavesIdleAlarm !== true || this.k.host.store.historyLastSeq() !== this.k.row!.historySeq;
	}

	/**
	 * An instance at rest in a status that hides a cut pass, with a step attempt stored `running`: a pass was cut short
	 * while the attempt awaited I/O. At rest no attempt is left `running` (a pass waits for every attempt it started
	 * before it ends, StepOpening.settle; a terminate or restart leaves another status), so it is counted as a stored
	 * `running` is. Two such statuses: `rolling_back` (a rollback's attempt writes its start and takes its retry's
	 * wake-up, and the instance stays `rolling_back`), and, on a host whose woken passes hold `running` in memory,
	 * `sleeping` or `waiting` with the pass killed before that `running` was written (kernel.ts `startRunning`: within
	 * RUNNING_SHOWN_WITHIN_MS): the wake-up it took is still stored and due. Without this, the restart was ordinary work,
	 * and a crash loop in such an attempt started it again at once instead of backing off (found from outside: kill -9
	 * in a retried step's first half-second), bounded only by its retry limit. Reads the step index (in memory in the
	 * compact layout, and the replay reads the same rows); no row is written unless a cut is counted.
	 */
	private cutAttemptAtRest(): boolean {
		const status = this.k.row?.status;
		const woken = this.k.host.holdsWokenRunning === true && (status === 'sleeping' || status === 'waiting');
		if (!woken && status !== 'rolling_back') return false;
		return cutAttempt(this.k.host.store) !== undefined;
	}

	/** Before a terminate is stored: the pass in flight writes the attempts it began and has not written yet, so the terminate cancels them. */
	recordBegunAttempts(): void {
		this.activeStep?.recordBegunAttempts();
	}

	/** A terminate or restart: the pass in flight stops at once, its running attempts aborted. */
	interrupt(reason: 'terminated' | 'restarted'): void {
		// A running step's signal aborts, so its fetch (or anything that listens) stops now.
		this.activeStep?.cancel(new DOMException(`the workflow was ${reason} while this step ran`, 'AbortError'));
		this.activeRollback?.cancel(new DOMException(`the workflow was ${reason} while this rollback ran`, 'AbortError'));
		this.controlEpoch++;
		this.cutPass?.();
		this.cutPass = undefined;
	}

	/** One replay pass (replay-loop.ts). */
	protected abstract pass(): Promise<void>;
}
