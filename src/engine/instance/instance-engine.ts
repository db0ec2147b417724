import { ErrorCode, InvalidStateError, NotFoundError, ValidationError } from '../support/errors';
import { WATCHDOG_MS } from '../support/timing';
import type { HistoryPage, HistoryQuery } from '../history/history';
import { historyPage } from '../views/history-page';
import { assertValidWorkflowId } from '../support/ids';
import { toIndexEntry, type IndexEntry } from '../index/index-entry';
import type { SendEventOptions } from './event-keys';
import { matchesDeleteFilter, type DeleteOptions, type DeleteResult } from '../lifecycle/deletion';
import { FIRST_OUTCOME_WAIT_MS, type ChildOutcome } from '../children/child-workflows';
import { statusView, stepPage } from '../views/status-view';
import type { InstanceRow } from '../storage/store';
import type { WebhookTarget } from '../webhooks/webhook';
import type { StepPage, WorkflowStatusInfo } from '../definition/types';
import { FINISHED_STATUSES, type WorkflowStatus } from '../support/statuses';
import type { EngineHost } from './engine-host';
import { InstanceKernel } from './kernel';
import { RUNNABLE } from './parts/replay-loop';
import { checkInlineRead, readInline } from './inline-child';
import { outcomeOf } from '../children/child-workflows';
import type { GrantAnswer } from '../limiter/concurrency-slot';
import { assertNotDeleting, assertSameType, prepareCreate, storeCreate, type CreateResult, type PreparedCreate } from './create';
import { pause, restart, resume, terminate, type RestartOptions } from './controls';
import { sendEvent } from './send-event';
import { completeWebhook } from './webhook-call';
import { applyBulkAction, checkBulkCall, hasBulkReceipt } from './bulk-receipt';

/**
 * One workflow instance: the operations the Durable Object serves (src/operations/
 * declares them), each a few lines over the instance's kernel (instance/kernel.ts), its
 * parts (instance/parts/) and the verbs beside it: create.ts, controls.ts (pause, resume,
 * terminate, restart), send-event.ts, webhook-call.ts. Pure TypeScript over `EngineHost`;
 * the Durable Object is a thin shell around it.
 */
export class InstanceEngine {
	private readonly k: InstanceKernel;
	/** The first pass (or slot request) of a create, started on the next macrotask. */
	private starting: Promise<void> | undefined;
	/** Starts that first pass now instead (see `childOutcome`); unset once it has started. */
	private startNow: (() => void) | undefined;

	constructor(private readonly host: EngineHost) {
		this.k = new InstanceKernel(host);
	}

	/** An instance lives here (not one being deleted, nor one deleted). */
	get exists(): boolean {
		return this.k.exists;
	}

	/** `transplant`: what the child's inline run in its parent left (children/transplant.ts); a parent's invoke sends it. */
	async create(id: string, type: string, payloadInput: unknown, parent?: unknown, attributes?: unknown, transplant?: unknown, group?: unknown): Promise<CreateResult> {
		assertValidWorkflowId(id);
		this.host.registry.get(type);
		assertNotDeleting(this.k, id);
		if (this.k.row) assertSameType(this.k, type);
		return this.commitCreate(await prepareCreate(this.host.registry, id, type, payloadInput, parent, attributes, transplant, group, this.k.row !== undefined));
	}

	/** Stores an instance whose input `prepareCreate` has already checked (see create.ts). */
	commitCreate(prepared: PreparedCreate): CreateResult {
		const { result, queued } = storeCreate(this.k, prepared);
		if (!result.created) return result;
		// A transplanted child goes on where its inline run stopped (a pass replays up to there); a finished one is done.
		if (prepared.transplant) {
			// A finished one arms no alarm: its publisher delivers its entry before it is answered (`deliverIndexNow`).
			if (!RUNNABLE.includes(result.status) && result.status !== 'rolling_back') return result;
			this.k.rearm();
		}
		// Start the run on the next macrotask: the create answer then leaves as soon as the
		// instance row is durable, instead of waiting for the first pass's writes too.
		const start = () => {
			if (this.startNow !== start) return;
			this.startNow = undefined;
			this.starting = undefined;
			if (queued) this.k.slot.sync();
			else this.kick();
		};
		this.startNow = start;
		this.starting = new Promise<void>((resolve) =>
			this.host.defer(() => {
				start();
				resolve();
			}),
		);
		return result;
	}

	/** Starts a create's first pass now instead of on the next macrotask (an inline child's run, inline-child.ts). */
	start(): void {
		this.startNow?.();
	}

	/**
	 * The limiter granted this queued instance a slot (RPC `slotGranted`): it starts. An instance
	 * that no longer waits (terminated meanwhile) declines, and starts nothing (see `ConcurrencySlot.granted`).
	 */
	slotGranted(): GrantAnswer {
		this.require();
		return this.k.slot.granted();
	}

	/** The instance's status, bounded in size (see `statusView`). */
	status(): WorkflowStatusInfo {
		return statusView(this.require(), this.host.store);
	}

	/** A webhook's POST (see webhook-call.ts). */
	completeWebhook(target: WebhookTarget, bodyInput: unknown, bodyText?: string): void {
		completeWebhook(this.k, target, bodyInput, bodyText);
	}

	/** One page of the step history, every step with its result. */
	steps(options: { cursor?: string | null; limit?: number } = {}): StepPage {
		this.require();
		return stepPage(this.host.store, options);
	}

	/** One page of the history of one generation (the current one by default); see history.ts. */
	history(query: HistoryQuery = {}): HistoryPage {
		return historyPage(this.require(), this.host.store, query);
	}

	/** An event for the instance (see send-event.ts). */
	sendEvent(name: string, payloadInput: unknown, options: SendEventOptions = {}): Promise<void> {
		return sendEvent(this.k, name, payloadInput, options);
	}

	pause(): WorkflowStatus {
		return pause(this.k);
	}

	resume(): WorkflowStatus {
		return resume(this.k);
	}

	/** Ends the instance, with `rollback` after running its rollbacks (see controls.ts). */
	terminate(options: { rollback?: boolean } = {}): WorkflowStatus {
		return terminate(this.k, options);
	}

	/** A bulk job's action, applied at most once per job with its receipt (see bulk-receipt.ts); `already` when it was. */
	applyBulkAction(jobId: unknown, action: unknown): Promise<'applied' | 'already'> {
		const call = checkBulkCall(jobId, action);
		return applyBulkAction(this.k, call.jobId, call.action);
	}

	/** Whether job `jobId`'s action reached this instance: the question a job resumed after a crash asks. Reads only. */
	bulkReceipt(jobId: unknown, action: unknown): boolean {
		const call = checkBulkCall(jobId, action);
		return hasBulkReceipt(this.k, call.jobId, call.action);
	}

	/**
	 * The outcome of this instance as its parent sees it: null until it has finished. With
	 * `waitMs` (a parent's invoke that has just created it), the answer waits until the run
	 * has nothing left to do (finished, or suspended on a sleep or a wait), for at most
	 * `waitMs` (at most `FIRST_OUTCOME_WAIT_MS`, whatever the caller asks): a short child then answers its parent
	 * in the parent's first pass, with no notice and no second pass. The outcome answered is
	 * durable: the RPC's answer leaves once the writes before it are. `askedBy`: the id of the
	 * instance asking; while the recorded parent waits so, the notice is held back, and not
	 * sent at all if the answer carries the outcome (see `ChildCascade.parentAskBegan`).
	 */
	async childOutcome(waitMs?: unknown, askedBy?: unknown): Promise<ChildOutcome | null> {
		const row = this.require();
		const wait = typeof waitMs === 'number' && Number.isFinite(waitMs) ? Math.min(Math.max(0, waitMs), FIRST_OUTCOME_WAIT_MS) : 0;
		if (wait === 0 || outcomeOf(row)) return outcomeOf(row);
		// The asker waits for the run anyway (a parent's create that asks too): it starts now, not on the next macrotask.
		this.startNow?.();
		const byParent = typeof askedBy === 'string' && askedBy === row.parentId;
		if (byParent) this.k.children.parentAskBegan();
		let answer: ChildOutcome | null = null;
		try {
			await this.idleWithin(wait);
			answer = outcomeOf(this.require());
			return answer;
		} finally {
			if (byParent) this.k.children.parentAskEnded(answer);
		}
	}

	/**
	 * `idle({ index: false })`, or `ms` of wall time from now, whichever comes first. The timer
	 * goes as soon as the run is idle: a pending timer would keep the object active (billed).
	 */
	private idleWithin(ms: number): Promise<void> {
		let timer: ReturnType<typeof setTimeout> | undefined;
		return Promise.race([this.idle({ index: false }).catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() => {
			if (timer !== undefined) clearTimeout(timer);
		});
	}

	/**
	 * A child of this instance finished: a waiting invoke takes the outcome the notice
	 * carries (kept in memory for the next pass only, which this wakes; after an eviction,
	 * or past the budget, the pass asks the child), or asks the child now instead of at its
	 * next poll. An instance that runs no pass soon (finished, paused) keeps nothing.
	 */
	childFinished(childId?: unknown, outcomeInput?: unknown): void {
		const row = this.require();
		if (row.status !== 'waiting' && row.status !== 'sleeping' && row.status !== 'running') return;
		this.k.children.notice(childId, outcomeInput);
		this.kick();
	}

	/**
	 * A read of a child this instance runs (or ran) inline and has not published yet, answered as
	 * the child's own object will once it holds it (instance/inline-child.ts); NOT_FOUND when this
	 * instance holds no such child.
	 */
	inlineChild(childId: unknown, readInput: unknown): ReturnType<typeof readInline> {
		this.require();
		const view = typeof childId === 'string' ? this.k.inline.view(childId) : undefined;
		if (!view) throw new NotFoundError('no such workflow instance');
		return readInline(view, checkInlineRead(readInput));
	}

	/** Publishes a child this instance runs (or ran) inline now, for an event or a control sent to it (parts/inline-children.ts `publishNow`). */
	publishInlineChild(childId: unknown): Promise<boolean> {
		this.require();
		return typeof childId === 'string' ? this.k.inline.publishNow(childId) : Promise.resolve(false);
	}

	/** Runs the instance again in a new generation, from the start or from a step (see controls.ts). */
	restart(options: RestartOptions = {}): WorkflowStatus {
		return restart(this.k, options);
	}

	/**
	 * Deletes the instance: its whole storage and its index entry, after writing its
	 * archive record when asked (see instance/parts/deletion.ts: durable before anything
	 * goes, resumed from the alarm after a crash). From the first write on the instance
	 * answers NOT_FOUND (or from its archive) and a create of its id is refused until
	 * the storage is gone; a create after that starts a new incarnation, which the
	 * index orders after this one (`compareEntries`). Resolves once the storage is
	 * gone, or once the deletion is durable and left to the alarm (the index or the
	 * archive is unavailable).
	 */
	async delete(options: DeleteOptions = {}): Promise<DeleteResult> {
		const row = this.require();
		if (options.reason === 'retention') return this.expire(row, options);
		if (options.only && !matchesDeleteFilter(row, options.only)) return { id: row.id, deleted: false };
		const archive = options.archive === true;
		if (archive && !this.host.archive) {
			throw new ValidationError(ErrorCode.ArchiveNotConfigured, 'archive requested, but no archive bucket is bound (ARCHIVE); see docs/operations.md "Retention and deletion"');
		}
		if (!FINISHED_STATUSES.includes(row.status)) {
			if (!options.terminate) {
				throw new InvalidStateError(`cannot delete workflow "${row.id}": it is ${row.status}; terminate it first, or delete with terminate=true`);
			}
			terminate(this.k);
		}
		this.k.deletion.begin(options.reason ?? 'delete', archive);
		await this.k.deletion.continue();
		return { id: row.id, deleted: true };
	}

	/**
	 * The index shard's retention sweep (engine/index/retention-sweep.ts): deletes the instance if it
	 * is the incarnation the shard listed (`only`) and its retention has run out by its own clock and
	 * its own type's `retention`, archived first as that says. Otherwise changes nothing.
	 */
	private async expire(row: InstanceRow, options: DeleteOptions): Promise<DeleteResult> {
		if ((options.only && !matchesDeleteFilter(row, options.only)) || !this.k.retention.expire(this.host.now())) return { id: row.id, deleted: false };
		await this.k.deletion.continue();
		return { id: row.id, deleted: true };
	}

	/** What the index should hold for this instance; null if it does not exist (or is being deleted). Reads only. */
	currentIndexEntry(): IndexEntry | null {
		return this.exists ? toIndexEntry(this.k.row!) : null;
	}

	/**
	 * Writes the current entry into the outbox again (as if the last transition
	 * had just happened) and waits for its delivery: repairs an entry that a
	 * shard lost. The shard keeps the highest version, so this never regresses it.
	 */
	republishIndex(): Promise<{ entry: IndexEntry; delivered: boolean }> {
		return this.k.outbox.republish(this.require());
	}

	/** The alarm (see InstanceKernel.alarm). */
	alarm(): void {
		this.k.alarm();
	}

	/**
	 * The alarm on its first try, on a host whose runtime runs an alarm again when its handler dies ("guaranteed
	 * at-least-once execution": the Durable Objects alarms page; kill -9 under local workerd: test/tooling/hard-crash.test.ts).
	 * The handler awaits the work the alarm starts (a woken pass, its index delivery), at most `WATCHDOG_MS`, with the
	 * alarm writes that only guard against a crash held (EngineHost.holdAlarmRetries): a crash meanwhile is retried by the
	 * runtime, so the woken pass writes no watchdog and its outcome's entry no retry alarm (1 alarm write fewer per pass an
	 * alarm wakes). Then the alarm is pointed where the parts are due, as a flight's end points it: the next wake-up, or,
	 * while work is still in flight after the wait, its watchdog.
	 */
	async alarmAwaitingPass(): Promise<void> {
		const release = this.host.holdAlarmRetries?.();
		if (!release) return this.alarm();
		try {
			this.k.alarm();
			const wait: { cancel?: () => void } = {};
			await Promise.race([this.idle().catch(() => {}), new Promise<void>((resolve) => (wait.cancel = this.host.defer(resolve, WATCHDOG_MS) as (() => void) | undefined))]);
			wait.cancel?.();
		} finally {
			release();
			if (this.k.row) this.k.rearm();
		}
	}

	/** Delivers the pending index update off the critical path; failures wait for the alarm. */
	deliverIndex(): void {
		this.k.outbox.deliver();
	}

	/** Starts the replay loop, or asks the running one to go round once more. */
	kick(): void {
		this.k.replay.kick();
	}

	/**
	 * Delivers the pending index entry now and resolves once no delivery is in flight: a published
	 * finished child's (`transplantChild`), whose object arms no alarm for it (create.ts
	 * `storeTransplant`). A failed delivery arms the alarm for its retry.
	 */
	async deliverIndexNow(): Promise<void> {
		await this.k.outbox.deliverNow();
	}

	/** Resolves once the replay loop (and, unless `index` is false, index delivery and the publishing of inline children) has nothing left to do. */
	async idle(options: { index?: boolean } = {}): Promise<void> {
		const index = options.index ?? true;
		for (;;) {
			const pending = this.starting ?? this.k.inFlight(index);
			if (!pending) return;
			await pending;
		}
	}

	/** The row of an instance that exists; NOT_FOUND for one being deleted too (it answers from its archive, if any). */
	private require(): InstanceRow {
		return this.k.require();
	}
}
