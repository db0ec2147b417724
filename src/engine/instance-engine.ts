import {
	ErrorCode,
	IdempotencyKeyReusedError,
	InvalidStateError,
	NotFoundError,
	PayloadMismatchError,
	TypeMismatchError,
	ValidationError,
	WebhookExpiredError,
	WebhookNotFoundError,
	WebhookUsedError,
} from './errors';
import { historyError, historyPage, historyRow, type HistoryPage, type HistoryQuery, type HistoryRecord } from './history';
import { assertValidWorkflowId } from './ids';
import type { EngineLogger } from './engine-log';
import { removalEntry, toIndexEntry, type IndexEntry } from './index-entry';
import { applyAttributeUpdate, attributesJson, parseAttributes } from './search-attributes';
import type { ArchiveBucket } from './archive';
import { writeArchive } from './archive-writer';
import { assertEventBufferRoom, assertValidIdempotencyKey, eventDigest, type SendEventOptions } from './event-keys';
import { assertJsonDepth, canonicalJson, fromStoredJson, toStoredJson, utf8Bytes } from './json';
import { MAX_EVENT_KEYS, MAX_INSTANCE_ROW_BYTES } from './limits';
import { historyRecordBytes } from './instance-limits';
import type { FinishedStatus, Registry, ResolvedEntry } from './registry';
import { matchesDeleteFilter, type DeleteOptions, type DeleteResult } from './deletion';
import { validateEventPayload, validateWith } from './schema-validation';
import { AbortSignal_, SuspendSignal, isSignal } from './signals';
import { restartPoint, type RestartFrom } from './restart-from';
import { checkChildOutcome, checkParentRef, childrenToTerminate, CASCADE_WAKEUP, NoticedOutcomes, type ChildOutcome, type ChildPort, type ParentRef } from './child-workflows';
import { StepContext, type Divergence } from './step-context';
import type { YieldReport } from './yield-pacer';
import { statusView, stepPage } from './status-view';
import type { StepFunctionWrapper } from './step-function-wrapper';
import type { CutPasses, DeletionReason, DeletionRow, InstanceRow, InstanceStore, StepRow } from './store';
import { StepRows, stepRowsWithSmallResults } from './step-rows';
import { CONTINUE_WAKEUP, DEFAULT_INVOCATION_BUDGET, InvocationMeter, type InvocationBudget } from './invocation-budget';
import { describeThrown } from './thrown-value';
import { readRollbackState, storedRollbackState, type RollbackState } from './rollback-state';
import { rollbackOrder, RollbackRunner } from './rollback-runner';
import { stepKey } from './step-key';
import { readWebhookRecord, storedWebhookRecord, type WebhookTarget } from './webhook';
import { deliverTracked, noteFailedDelivery, type BacklogPort } from './index-backlog';
import { StreamRate } from './stream';
import { FINISHED_STATUSES, type StepPage, type WorkflowStatus, type WorkflowStatusInfo } from './types';
import { concurrencyKey, concurrencyOf } from './concurrency';
import type { LimiterPort, SlotRow, SlotStore } from './concurrency-slot';

/** What the Durable Object shell (or a test) provides to the engine. */
export interface EngineHost {
	store: InstanceStore;
	registry: Registry;
	env: unknown;
	now(): number;
	/** Sets the single alarm to exactly `at`, or deletes it. */
	setAlarm(at: number | undefined): void;
	/** Makes sure the alarm fires no later than `at` (an earlier one stays: an early alarm is harmless). */
	ensureAlarmBy(at: number): void;
	/** Keeps background work (the replay loop, index delivery) alive after the request returns. */
	background(work: Promise<unknown>): void;
	/** Sends one index entry to its shard (and removes it from a previous-layout shard). */
	sendIndexEntry(entry: IndexEntry): Promise<void>;
	/** Lets other work of the isolate run; reports whether any did (see yield-pacer.ts). */
	yieldToEventLoop(): Promise<YieldReport>;
	/** Runs `fn` on a later macrotask, at least `ms` later. */
	defer(fn: () => void, ms?: number): void;
	/** Structured log records (status changes, step failures); the host filters by level. */
	log?: EngineLogger;
	/** Also log every completed step (debug level); off, the replay loop builds no record per step. */
	logStepCompletions?: boolean;
	/** What one pass may do in one invocation before it continues in a new one (invocation-budget.ts); the default when unset. */
	invocationBudget?: InvocationBudget;
	/** The type's delivery backlog (see index-backlog.ts); without it, failures are not reported anywhere. */
	backlog?: BacklogPort;
	/** Test kits only (see step-function-wrapper.ts): replaces or wraps a `step.do` attempt's function. Unset in production. */
	wrapStepFunction?: StepFunctionWrapper;
	/** Signs webhook tokens (`step.webhook`); absent: the host offers no webhooks. */
	webhooks?: WebhookPort;
	/** Where finished instances are archived before they are deleted; absent: no archive configured. */
	archive?: ArchiveBucket;
	/** Reaches other instances for child workflows (see child-workflows.ts); absent: `step.invoke`/`step.start` are refused. */
	children?: ChildPort;
	/**
	 * Frees the instance's whole storage and its alarm (`deleteAll`): the last
	 * step of a deletion. Afterwards this engine is gone; the id can be created
	 * again, by a new engine.
	 */
	destroy?(): Promise<void>;
	/** Where the instance keeps its concurrency slot, and the limiters (types with `static concurrency`; see concurrency-slot.ts). */
	slots?: SlotStore;
	limiter?: LimiterPort;
}

/** What the host lends `step.webhook`: the URL of a signed token for a target (see webhook.ts). */
export interface WebhookPort {
	issue(target: WebhookTarget): Promise<string>;
}

/** Retry schedule of index deliveries: 1 s doubling to at most 5 minutes. */
export function outboxBackoffMs(attempts: number): number {
	return Math.min(1000 * 2 ** Math.max(0, attempts - 1), 300_000);
}
/** How long a fresh outbox row may wait for its in-memory delivery before the alarm retries it. */
export const OUTBOX_GRACE_MS = 10_000;
/**
 * While a pass runs, the alarm stays armed this far ahead: if the isolate
 * dies mid-step, the alarm brings the instance back and the replay goes on.
 * An alarm that fires while the pass still runs arms the next one, so the
 * watchdog covers a step or a run of any length.
 */
export const WATCHDOG_MS = OUTBOX_GRACE_MS;

/**
 * How long after the n-th pass in a row that was cut short (the isolate died mid-pass) the
 * next may start: the watchdog's 10 s, doubling from the second to at most 5 minutes. A crash
 * is usually a one-off; a pass that a memory or CPU limit kills every time would otherwise
 * restart every 10 s forever, resetting every object of its isolate each time.
 */
export function cutPassBackoffMs(count: number): number {
	return Math.min(WATCHDOG_MS * 2 ** Math.max(0, count - 1), 300_000);
}
/** How long an index update waits for newer transitions to supersede it before it is sent. */
export const INDEX_COALESCE_MS = 20;

const RUNNABLE: readonly WorkflowStatus[] = ['created', 'running', 'sleeping', 'waiting'];

/** A create whose input passed every check: nothing is stored until `commitCreate`. */
export interface PreparedCreate {
	id: string;
	type: string;
	payloadJson: string | null;
	/** The concurrency key, for a type with `static concurrency`: the instance starts `queued`. */
	concurrencyKey?: string;
	/** The instance that started this one as its child (`step.invoke` / `step.start`). */
	parent?: ParentRef;
	/** The search attributes given at create, checked against the type's declaration (sorted JSON). */
	attributesJson?: string;
}

/** Checks a create's id, type, payload (the type's schema) and search attributes without touching storage. */
export async function prepareCreate(
	registry: Registry,
	id: string,
	type: string,
	payloadInput: unknown,
	parentInput?: unknown,
	attributesInput?: unknown,
): Promise<PreparedCreate> {
	assertValidWorkflowId(id);
	const entry = registry.get(type);
	const parent = parentInput === undefined ? undefined : checkParentRef(parentInput, id);
	const attributes = attributesInput === undefined ? null : attributesJson(applyAttributeUpdate(type, entry.attributes, {}, attributesInput));
	assertJsonDepth(payloadInput, 'payload');
	const payload = await validateWith(entry.workflow.payload, payloadInput, ErrorCode.InvalidPayload, `payload for workflow type "${type}"`);
	const concurrency = concurrencyOf(registry, type);
	const payloadJson = toStoredJson(payload, 'payload');
	return {
		id, type, payloadJson,
		...(concurrency ? { concurrencyKey: concurrencyKey(type, concurrency, payload) } : {}),
		...(parent ? { parent } : {}),
		...(attributes ? { attributesJson: attributes } : {}),
	};
}

/** Options of `restart`. */
export interface RestartOptions {
	/** Run again from this step: the completed steps recorded before it return their cached results. */
	from?: RestartFrom;
}

export interface CreateResult {
	id: string;
	type: string;
	status: WorkflowStatus;
	created: boolean;
}

/**
 * Failed passes per instance id, for the backoff of `drive`. Per isolate rather than per
 * engine: an object evicted between two failing passes (an idle one is evicted within
 * seconds locally) comes back as a new engine in the same isolate and keeps its backoff.
 * Bounded: the oldest entries go first.
 */
const failedPasses = new Map<string, { failures: number; retryAt: number }>();
const MAX_FAILED_PASSES_KEPT = 1000;

function notePassFailure(id: string, failures: number, retryAt: number): void {
	failedPasses.delete(id);
	failedPasses.set(id, { failures, retryAt });
	if (failedPasses.size > MAX_FAILED_PASSES_KEPT) failedPasses.delete(failedPasses.keys().next().value!);
}

/**
 * One workflow instance: its lifecycle, its replay loop and its index outbox.
 * Pure TypeScript over `EngineHost`; the Durable Object is a thin shell around it.
 */
export class InstanceEngine {
	private loop: Promise<void> | undefined;
	private starting: Promise<void> | undefined;
	private rerun = false;
	private delivering: Promise<void> | undefined;
	private redeliver = false;
	/** Mirrors the stored row so boundary checks cost no query. */
	private row: InstanceRow | undefined;
	/** Grows on every pause, resume, terminate and restart: a pass that began before one must not undo it. */
	private controlEpoch = 0;
	/** Resolved by terminate and restart, so a pass stops waiting for attempts whose outcome no longer counts. */
	/**
	 * Ends the pass in flight (its run() and its wait for attempts) at a terminate or restart.
	 * One promise per pass, dropped when the pass ends: a promise shared by every pass and
	 * settled only by an interrupt would collect one handler per pass for the instance's life.
	 */
	private cutPass: (() => void) | undefined;
	/** The step context of the pass in flight, so a terminate can abort its running attempts. */
	private activeStep: StepContext | undefined;
	/** The rollbacks running now, so a terminate that abandons them aborts the attempt in flight. */
	private activeRollback: RollbackRunner | undefined;
	/** Mirrors the stored deletion row: set, the instance is being deleted and answers as if it were gone. */
	private deletion: DeletionRow | undefined;
	/** The deletion steps running now (one at a time). */
	private deleting: Promise<void> | undefined;
	/** The storage is gone: this engine does nothing more (a new one serves the id). */
	private gone = false;
	/** Mirrors the stored concurrency slot row (types with `static concurrency`). */
	private slot: SlotRow | undefined;
	/** Passes cut short in a row, as stored (see `cutPassBackoffMs`); read once when the engine starts. */
	private cutPasses: CutPasses | undefined;
	/** The slot request or release being delivered to the limiter (one at a time). */
	private slotWork: Promise<void> | undefined;
	private reslot = false;
	/**
	 * Bytes of history records appended since the row's running total (`historyBytes`
	 * through `historySeq`) was last written: a pass's steps add theirs here, and the next
	 * status change folds everything into the row. The history limit reads the sum.
	 */
	private uncountedHistoryBytes = 0;
	/** The instance's publishing rate for `step.emit` (see stream.ts), across passes. */
	private readonly streamRate = new StreamRate();
	/** Outcomes that children's notices brought, for the next pass only (bounded; see NoticedOutcomes). */
	private readonly noticedOutcomes = new NoticedOutcomes();
	/** Passes that failed in a row (threw outside run(): storage, registry, bug), and when the next may run. */
	private get passFailures(): number {
		return failedPasses.get(this.row?.id ?? '')?.failures ?? 0;
	}
	private get passRetryAt(): number {
		return failedPasses.get(this.row?.id ?? '')?.retryAt ?? 0;
	}
	/** Failed rounds of the child cascade of a terminate since this engine started (its backoff). */
	private cascadeAttempts = 0;

	constructor(private readonly host: EngineHost) {
		this.row = host.store.readInstance();
		this.deletion = this.row ? host.store.readDeletion() : undefined;
		this.slot = this.row ? host.slots?.readSlot() : undefined;
		this.cutPasses = this.row ? host.store.readCutPasses() : undefined;
	}

	/** An instance lives here (not one being deleted, nor one deleted). */
	get exists(): boolean {
		return this.row !== undefined && this.deletion === undefined && !this.gone;
	}

	async create(id: string, type: string, payloadInput: unknown, parent?: unknown, attributes?: unknown): Promise<CreateResult> {
		assertValidWorkflowId(id);
		this.host.registry.get(type);
		this.assertNotDeleting(id);
		if (this.row) this.assertSameType(type);
		return this.commitCreate(await prepareCreate(this.host.registry, id, type, payloadInput, parent, attributes));
	}

	/** Stores an instance whose input `prepareCreate` has already checked. */
	commitCreate({ id, type, payloadJson, concurrencyKey: key, parent, attributesJson: attributes }: PreparedCreate): CreateResult {
		this.assertNotDeleting(id);
		// An existing id (or a concurrent create that won while the schema validated).
		if (this.row) return this.existing(type, payloadJson);
		const now = this.host.now();
		const codeVersion = this.host.registry.get(type).version;
		// A type with a concurrency limit starts queued: it runs once its limiter grants a slot.
		const queued = key !== undefined && this.host.slots !== undefined && this.host.limiter !== undefined;
		const status: WorkflowStatus = queued ? 'queued' : 'created';
		const store = () =>
			this.transition(
				{
					id, type, status, payload: payloadJson, output: null, errorName: null, errorMessage: null, errorStack: null, errorCode: null,
					createdAt: now, updatedAt: now, version: 0, generation: 0, codeVersion, lastCodeVersion: codeVersion, parentId: parent?.id ?? null,
					attributes: attributes ?? null,
				},
				{
					kind: 'workflow.created',
					value: payloadJson,
					...(codeVersion !== null || parent ? { detail: { ...(codeVersion !== null ? { codeVersion } : {}), ...(parent ? { parent } : {}) } } : {}),
				},
			);
		// Only a queued create needs a transaction around the transition's own (no savepoint on the common path).
		if (queued) {
			this.host.store.transaction(() => {
				store();
				this.queue(key, 0, now);
			});
		} else store();
		// Start the run on the next macrotask: the create answer then leaves as soon as the
		// instance row is durable, instead of waiting for the first pass's writes too.
		this.starting = new Promise<void>((resolve) =>
			this.host.defer(() => {
				this.starting = undefined;
				if (queued) this.syncSlot();
				else this.kick();
				resolve();
			}),
		);
		return { id, type, status, created: true };
	}

	/** Inside the transaction that makes the instance `queued`: its history record and its slot request. */
	private queue(key: string, generation: number, now: number): void {
		this.host.store.appendHistory(historyRow({ kind: 'workflow.queued', detail: { key } }, generation, now));
		this.writeSlot({ key, state: 'requested', attempts: 0, nextAttemptAt: now });
	}

	/**
	 * The limiter granted this queued instance a slot (RPC `slotGranted`): it starts.
	 * A grant for an instance that no longer waits (terminated meanwhile) changes nothing.
	 */
	slotGranted(): void {
		this.require();
		const slot = this.slot;
		if (slot && (slot.state === 'requested' || slot.state === 'waiting')) this.startWithSlot(slot);
	}

	private startWithSlot(slot: SlotRow): void {
		const row = this.row!;
		if (row.status !== 'queued') return;
		const now = this.host.now();
		this.host.store.transaction(() => {
			this.writeSlot({ ...slot, state: 'held', attempts: 0, nextAttemptAt: null });
			this.transition({ ...row, status: 'created' }, { kind: 'slot.acquired', detail: { key: slot.key, waitedMs: Math.max(0, now - row.updatedAt) } });
		});
		this.kick();
	}

	/** Delivers the slot's pending request or release to the limiter; a failure waits for the alarm, with backoff. */
	private syncSlot(): void {
		if (this.slotWork) {
			this.reslot = true;
			return;
		}
		this.slotWork = this.slotLoop().finally(() => {
			this.slotWork = undefined;
			this.rearm();
		});
		this.host.background(this.slotWork);
	}

	private async slotLoop(): Promise<void> {
		do {
			this.reslot = false;
			const slot = this.slot;
			const row = this.row;
			if (!slot || !row || this.gone || !this.host.limiter) return;
			if (slot.state !== 'requested' && slot.state !== 'releasing') return;
			try {
				if (slot.state === 'requested') {
					const answer = await this.host.limiter.acquire(row.type, slot.key, row.id);
					const current = this.slot;
					// A terminate (or a grant) while the request was in flight decided already.
					if (current?.state !== 'requested') continue;
					if (answer === 'holding') this.startWithSlot(current);
					else this.writeSlot({ ...current, state: 'waiting', attempts: 0, nextAttemptAt: null });
				} else {
					await this.host.limiter.release(row.type, slot.key, row.id);
					if (this.slot?.state !== 'releasing' || this.gone) continue;
					this.host.store.transaction(() => {
						this.writeSlot(undefined);
						this.host.store.appendHistory(historyRow({ kind: 'slot.released', detail: { key: slot.key } }, this.row!.generation, this.host.now()));
					});
				}
			} catch (error) {
				const current = this.slot;
				if (!current || current.state !== slot.state || this.gone) continue;
				const attempts = current.attempts + 1;
				this.writeSlot({ ...current, attempts, nextAttemptAt: this.host.now() + outboxBackoffMs(attempts) });
				this.host.log?.({ severity: 'warn', event: 'workflow.slot_delivery_failed', instanceId: row.id, type: row.type, state: slot.state, attempts, error: describeThrown(error) });
			}
		} while (this.reslot);
	}

	private writeSlot(slot: SlotRow | undefined): void {
		this.host.slots!.writeSlot(slot);
		this.slot = slot;
	}

	/** The instance's status, bounded in size (see `statusView`). */
	status(): WorkflowStatusInfo {
		return statusView(this.require(), this.host.store);
	}

	/**
	 * The one POST a webhook accepts (see webhook.ts; the Worker checked the token's
	 * signature): its body completes the step's wait. Refused, changing nothing:
	 * a token of another incarnation or generation (WEBHOOK_NOT_FOUND), a second
	 * call (WEBHOOK_USED), a call after the timeout or after the instance ended
	 * (WEBHOOK_EXPIRED). The body's limits are those of an event payload. With
	 * `bodyText` (the POST as it came), the body is parsed only after those checks, so a
	 * URL that no longer works answers why whatever its body (README "Webhook waits").
	 */
	completeWebhook(target: WebhookTarget, bodyInput: unknown, bodyText?: string): void {
		const row = this.require();
		const key = stepKey('webhook', target.step);
		const step = row.generation === target.generation ? this.host.store.readStep(key) : undefined;
		const record = step ? readWebhookRecord(step.result) : undefined;
		if (!step || !record || record.nonce !== target.nonce) {
			throw new WebhookNotFoundError(`workflow "${row.id}" has no such webhook (the instance was restarted or re-created since the URL was issued)`);
		}
		if (step.status === 'completed') throw new WebhookUsedError(`webhook "${target.step}" of workflow "${row.id}" was already called; a webhook URL works once`);
		const now = this.host.now();
		if (step.status === 'timed_out' || (record.expiresAt !== null && record.expiresAt <= now)) {
			throw new WebhookExpiredError(`webhook "${target.step}" of workflow "${row.id}" expired at ${new Date(record.expiresAt ?? now).toISOString()}`);
		}
		if (FINISHED_STATUSES.includes(row.status) || row.status === 'rolling_back') {
			throw new WebhookExpiredError(`workflow "${row.id}" is ${row.status}; its webhook "${target.step}" no longer accepts calls`);
		}
		if (bodyText !== undefined) bodyInput = parseWebhookBody(bodyText);
		assertJsonDepth(bodyInput, `body of webhook "${target.step}"`);
		const body = toStoredJson(bodyInput, `body of webhook "${target.step}"`);
		const done: StepRow = {
			...step,
			status: 'completed',
			result: storedWebhookRecord({ ...record, body: fromStoredJson(body), receivedAt: now }),
			finishedAt: now,
			wakeAt: null,
		};
		this.host.store.transaction(() => {
			this.host.store.writeStep(done);
			this.host.store.deleteWakeup(key);
			this.host.store.appendHistory(historyRow({ kind: 'webhook.received', step: target.step, value: body }, row.generation, now));
		});
		this.activeStep?.noteStepRow(done);
		if (row.status === 'paused' || row.status === 'diverged') return;
		this.host.ensureAlarmBy(now + WATCHDOG_MS);
		this.kick();
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

	async sendEvent(name: string, payloadInput: unknown, options: SendEventOptions = {}): Promise<void> {
		const key = options?.idempotencyKey;
		if (key !== undefined) assertValidIdempotencyKey(key);
		const row = this.require();
		// A keyed send may be the retry of one accepted before the instance finished: answer it below.
		if (key === undefined) this.assertAcceptsEvents(row);
		const { workflow } = this.entryOf(row);
		const events = workflow.events ?? {};
		if (typeof name !== 'string' || !Object.hasOwn(events, name)) {
			const declared = Object.keys(events);
			throw new ValidationError(
				ErrorCode.UnknownEvent,
				`workflow type "${row.type}" does not declare event ${JSON.stringify(name)}${declared.length ? `; declared events: ${declared.join(', ')}` : ' (it declares no events)'}`,
			);
		}
		assertJsonDepth(payloadInput, `payload of event "${name}"`);
		const payload = await validateEventPayload(events[name], payloadInput, name, ErrorCode.InvalidEventPayload);
		const json = toStoredJson(payload, `payload of event "${name}"`);
		const digest = key === undefined ? undefined : await eventDigest(name, json);
		// No await from here on: the key check, the limits and the append are one step, so
		// concurrent retries of one key buffer it once.
		const current = this.require();
		if (key !== undefined) {
			const seen = this.host.store.readEventKey(key);
			if (seen) {
				if (seen.digest === digest) return;
				throw new IdempotencyKeyReusedError(
					`idempotency key ${JSON.stringify(key)} was already used for ${seen.name === name ? `event "${name}" with another payload` : `event "${seen.name}"`}; use a new key for a new event`,
				);
			}
		}
		this.assertAcceptsEvents(current);
		assertEventBufferRoom(this.host.store, name, json, current.id);
		const now = this.host.now();
		this.host.store.transaction(() => {
			this.host.store.appendEvent(name, json, now);
			this.host.store.appendHistory(historyRow({ kind: 'event.received', value: json, detail: { event: name } }, current.generation, now));
			if (key !== undefined) this.host.store.writeEventKey({ key, name, digest: digest! }, now, MAX_EVENT_KEYS);
		});
		if (current.status === 'paused' || current.status === 'diverged') return;
		// If the process dies before the pass that consumes the event, the alarm finds it buffered.
		this.host.ensureAlarmBy(now + WATCHDOG_MS);
		this.kick();
	}

	private assertAcceptsEvents(row: InstanceRow): void {
		if (FINISHED_STATUSES.includes(row.status)) {
			throw new InvalidStateError(`workflow "${row.id}" is ${row.status} and accepts no more events`);
		}
	}

	pause(): WorkflowStatus {
		const row = this.require();
		if (!RUNNABLE.includes(row.status)) throw new InvalidStateError(`cannot pause workflow "${row.id}": it is ${row.status}`);
		this.controlEpoch++;
		this.transition({ ...row, status: 'paused' }, { kind: 'workflow.paused' });
		return 'paused';
	}

	resume(): WorkflowStatus {
		const row = this.require();
		if (row.status !== 'paused' && row.status !== 'diverged') {
			throw new InvalidStateError(`cannot resume workflow "${row.id}": it is ${row.status}, not paused or diverged`);
		}
		this.controlEpoch++;
		// A diverged instance resumes to replay with the code deployed since; its divergence is cleared.
		const cleared = row.status === 'diverged' ? { errorName: null, errorMessage: null, errorStack: null, errorCode: null } : {};
		this.transition({ ...row, ...cleared, status: 'running' }, { kind: 'workflow.resumed' });
		this.kick();
		return 'running';
	}

	/**
	 * Ends the instance. With `rollback`, the rollbacks of its completed steps run
	 * first (status `rolling_back`, then `terminated`); a plain terminate of an
	 * instance that is rolling back abandons the rollbacks left.
	 */
	terminate(options: { rollback?: boolean } = {}): WorkflowStatus {
		const row = this.require();
		if (FINISHED_STATUSES.includes(row.status)) throw new InvalidStateError(`cannot terminate workflow "${row.id}": it is already ${row.status}`);
		const rollingBack = readRollbackState(row);
		if (options.rollback === true) {
			if (row.status === 'rolling_back') throw new InvalidStateError(`workflow "${row.id}" is already rolling back`);
			this.beginRollback(row, { reason: 'terminated', state: 'running' });
			this.interrupt('terminated');
			this.kick();
			return 'rolling_back';
		}
		const abandoned: RollbackState | undefined = row.status === 'rolling_back' && rollingBack ? { ...rollingBack, state: 'abandoned' } : undefined;
		const children = this.host.children ? childrenToTerminate(stepRowsWithSmallResults(this.host.store)) : [];
		this.host.store.transaction(() => {
			this.host.store.deleteAllWakeups();
			// Durable before the children are told: the alarm retries the cascade until every one answered.
			if (children.length > 0) this.host.store.setWakeup(CASCADE_WAKEUP, this.host.now());
			this.transition(
				{ ...row, status: 'terminated', ...(abandoned ? { rollback: storedRollbackState(abandoned) } : {}) },
				{ kind: 'workflow.terminated', ...(abandoned ? { detail: { rollback: this.rollbackSummary(abandoned) } } : {}) },
			);
		});
		this.interrupt('terminated');
		if (children.length > 0) this.host.background(this.terminateChildren());
		return 'terminated';
	}

	/** Rollbacks begin: durable (status, state and record in one transaction) before any runs. */
	private beginRollback(row: InstanceRow, state: RollbackState, failure?: ReturnType<typeof describeThrown>): void {
		const error = failure ? { errorName: failure.name, errorMessage: failure.message, errorStack: failure.stack ?? null, errorCode: failure.code ?? null } : {};
		this.host.store.transaction(() => {
			// Pending sleeps, retries and timeouts of the run are over; rollback retries set their own.
			this.host.store.deleteAllWakeups();
			this.transition(
				{ ...row, ...error, status: 'rolling_back', rollback: storedRollbackState(state) },
				{ kind: 'workflow.rolling_back', detail: { reason: state.reason, ...(failure ? { error: historyError(failure) } : {}) } },
			);
		});
	}

	private rollbackSummary(state: RollbackState) {
		const completed = this.host.store.readStepsOfKind('rollback', 'completed').length;
		return { state: state.state as 'completed' | 'failed' | 'abandoned', completed, ...(state.failedStep ? { failedStep: state.failedStep } : {}) };
	}


	/**
	 * Terminates the unfinished children of a terminated instance (those started without
	 * `onParentTerminate: 'abandon'`). The cascade's wake-up was written with the terminate;
	 * it goes once every child answered, else the alarm tries again with backoff.
	 */
	private async terminateChildren(): Promise<void> {
		const port = this.host.children;
		if (!port || this.row?.status !== 'terminated') return;
		const children = childrenToTerminate(stepRowsWithSmallResults(this.host.store));
		const results = await Promise.allSettled(children.map((id) => port.terminate(id)));
		const failed = results.filter((r) => r.status === 'rejected').length;
		if (this.gone || this.row?.status !== 'terminated') return;
		if (failed === 0) this.host.store.deleteWakeup(CASCADE_WAKEUP);
		else {
			this.cascadeAttempts++;
			this.host.store.setWakeup(CASCADE_WAKEUP, this.host.now() + outboxBackoffMs(this.cascadeAttempts));
			this.host.log?.({ severity: 'warn', event: 'child.terminate_failed', instanceId: this.row.id, type: this.row.type, failed });
		}
		this.rearm();
	}

	/** The host's child port, answering a child's outcome from the notices this pass took when one came. */
	private childPortOfPass(port: ChildPort, noticed: Map<string, ChildOutcome>): ChildPort {
		return {
			...port,
			outcome: async (id) => {
				const outcome = noticed.get(id);
				if (!outcome) return port.outcome(id);
				noticed.delete(id);
				return outcome;
			},
		};
	}

	/** The outcome of this instance as its parent sees it: null until it has finished. */
	childOutcome(): ChildOutcome | null {
		return outcomeOf(this.require());
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
		const outcome = checkChildOutcome(outcomeInput);
		if (typeof childId === 'string' && outcome) this.noticedOutcomes.keep(childId, outcome);
		this.kick();
	}

	/**
	 * Runs the instance again in a new generation: from the start, or with `from`
	 * from that step on (the completed steps recorded before it keep their
	 * results; see restart-from.ts). An unknown step changes nothing.
	 */
	restart(options: RestartOptions = {}): WorkflowStatus {
		const row = this.require();
		if (!FINISHED_STATUSES.includes(row.status) && row.status !== 'diverged') {
			throw new InvalidStateError(`cannot restart workflow "${row.id}": it is ${row.status}; only completed, errored, terminated or diverged workflows restart`);
		}
		const key = this.concurrencyKeyOf(row);
		const status: WorkflowStatus = key === undefined ? 'created' : 'queued';
		// Steps without their results: the kept ones stay where they are, so no result passes through memory.
		const point = options.from === undefined ? undefined : restartPoint([...stepRowsWithSmallResults(this.host.store)], options.from);
		this.host.store.transaction(() => {
			if (point) this.host.store.keepStepsBefore(point.keptBefore);
			else this.host.store.deleteSteps();
			// Events still buffered (a diverged run never consumed them) belonged to the old run: they go,
			// counted in droppedEvents and named on the restart's record, never lost without a trace.
			const dropped = this.host.store.dropEvents();
			this.host.store.deleteAllWakeups();
			this.transition(
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
			if (key !== undefined) this.queue(key, row.generation + 1, this.host.now());
		});
		this.interrupt('restarted');
		if (key === undefined) this.kick();
		else this.syncSlot();
		return status;
	}

	/**
	 * Deletes the instance: its whole storage (SQLite data and alarm) and its
	 * index entry, after writing its archive record when asked. The deletion is
	 * durable before anything goes: a `deletion` row and the removal entry in the
	 * outbox, written together, so a crash at any point resumes it from the
	 * alarm. The storage goes only once the archive record is written (if asked)
	 * and the index has acknowledged the removal, which travels like every index
	 * entry (retried with backoff, backlogged). From the first write on the
	 * instance answers NOT_FOUND (or from its archive) and a create of its id is
	 * refused until the storage is gone; a create after that starts a new
	 * incarnation, which the index orders after this one (`compareEntries`).
	 * Resolves once the storage is gone, or once the deletion is durable and
	 * left to the alarm (the index or the archive is unavailable).
	 */
	async delete(options: DeleteOptions = {}): Promise<DeleteResult> {
		const row = this.require();
		if (options.only && !matchesDeleteFilter(row, options.only)) return { id: row.id, deleted: false };
		const archive = options.archive === true;
		if (archive && !this.host.archive) {
			throw new ValidationError(ErrorCode.ArchiveNotConfigured, 'archive requested, but no archive bucket is bound (ARCHIVE); see README "Retention and deletion"');
		}
		if (!FINISHED_STATUSES.includes(row.status)) {
			if (!options.terminate) {
				throw new InvalidStateError(`cannot delete workflow "${row.id}": it is ${row.status}; terminate it first, or delete with terminate=true`);
			}
			this.terminate();
		}
		this.beginDeletion(options.reason ?? 'delete', archive);
		await this.continueDeletion();
		return { id: row.id, deleted: true };
	}

	/** The durable start of a deletion: the deletion row and the removal entry, in one transaction. */
	private beginDeletion(reason: DeletionReason, archive: boolean): void {
		const row = this.row!;
		const now = this.host.now();
		// Like a transition: a removal while the shard is failing inherits the backoff.
		const pending = this.host.store.readOutbox();
		const backingOff = pending !== undefined && pending.attempts > 0;
		const nextAttemptAt = backingOff ? pending.nextAttemptAt : now + OUTBOX_GRACE_MS;
		const deletion: DeletionRow = { requestedAt: now, reason, archive, archivedKey: null, attempts: 0, nextAttemptAt: null };
		this.host.store.transaction(() => {
			this.host.store.deleteAllWakeups();
			this.host.store.writeDeletion(deletion);
			this.host.store.writeOutbox({ entry: removalEntry(row), attempts: backingOff ? pending.attempts : 0, nextAttemptAt });
		});
		this.deletion = deletion;
		this.host.log?.({ severity: 'info', event: 'workflow.deleting', instanceId: row.id, type: row.type, status: row.status, reason, archive });
		this.host.ensureAlarmBy(nextAttemptAt);
		if (!backingOff || nextAttemptAt <= now) this.deliverIndex();
	}

	/** Runs the remaining steps of the deletion in progress (one run at a time). */
	private continueDeletion(): Promise<void> {
		return (this.deleting ??= this.runDeletion().finally(() => {
			this.deleting = undefined;
			this.rearm();
		}));
	}

	private async runDeletion(): Promise<void> {
		const deletion = this.deletion;
		if (!deletion || this.gone) return;
		if (deletion.archive && deletion.archivedKey === null && !(await this.writeArchive(deletion))) return;
		// The removal is delivered like every index entry; a failure waits for the alarm's retry.
		if (this.host.store.readOutbox()) {
			this.deliverIndex();
			while (this.delivering) await this.delivering;
			if (this.host.store.readOutbox()) return;
		}
		// The concurrency slot goes back before the storage (and the slot row with it) goes.
		if (this.slot) {
			this.syncSlot();
			while (this.slotWork) await this.slotWork;
			if (this.slot) return;
		}
		const row = this.row!;
		// A later incarnation takes its createdAt after this point, so the index orders it after this one.
		if (this.host.now() <= row.createdAt) return;
		if (!this.host.destroy) throw new Error('this engine host cannot free storage (EngineHost.destroy)');
		await this.host.destroy();
		this.gone = true;
		this.host.log?.({ severity: 'info', event: 'workflow.deleted', instanceId: row.id, type: row.type, reason: deletion.reason, archivedKey: this.deletion?.archivedKey ?? null });
	}

	/** Writes the archive (in bounded parts, see archive-writer.ts); false (and a retry scheduled with backoff) if it could not. */
	private async writeArchive(deletion: DeletionRow): Promise<boolean> {
		if (deletion.nextAttemptAt !== null && deletion.nextAttemptAt > this.host.now()) return false;
		const row = this.row!;
		try {
			if (!this.host.archive) throw new Error('no archive bucket is bound (ARCHIVE)');
			// deletedAt is the request's time, so a write repeated after a crash is the same record.
			const key = await writeArchive(this.host.archive, row, this.host.store, deletion.requestedAt, deletion.reason);
			this.writeDeletion({ ...deletion, archivedKey: key, nextAttemptAt: null });
			return true;
		} catch (error) {
			const attempts = deletion.attempts + 1;
			this.writeDeletion({ ...deletion, attempts, nextAttemptAt: this.host.now() + outboxBackoffMs(attempts) });
			this.host.log?.({ severity: 'error', event: 'workflow.archive_failed', instanceId: row.id, type: row.type, attempts, error: describeThrown(error) });
			return false;
		}
	}

	private writeDeletion(row: DeletionRow): void {
		this.host.store.writeDeletion(row);
		this.deletion = row;
	}

	/** When the alarm must continue the deletion in progress (the outbox retry covers an unacknowledged removal). */
	private deletionDueAt(now: number, outboxAt: number | undefined): number | undefined {
		const deletion = this.deletion;
		if (!deletion) return undefined;
		if (this.deleting) return now + WATCHDOG_MS;
		if (deletion.archive && deletion.archivedKey === null) return deletion.nextAttemptAt ?? now;
		if (outboxAt !== undefined) return undefined;
		return Math.max(now, this.row!.createdAt + 1);
	}

	/** When this finished instance's retention runs out; undefined while it runs, is kept forever or is being deleted. */
	private expiresAt(): number | undefined {
		const row = this.row;
		if (!row || this.deletion || this.gone || !FINISHED_STATUSES.includes(row.status) || !this.host.registry.has(row.type)) return undefined;
		const keep = this.entryOf(row).retention[row.status as FinishedStatus];
		return keep === null ? undefined : row.updatedAt + keep;
	}

	private expired(now: number): boolean {
		const at = this.expiresAt();
		return at !== undefined && at <= now;
	}

	/** Retention ran out: the instance deletes itself, archived first when an archive is configured. */
	private expire(): void {
		const { retention } = this.entryOf(this.row!);
		this.beginDeletion('retention', retention.archive && this.host.archive !== undefined);
		this.host.background(this.continueDeletion());
	}

	/** The concurrency key of a type with `static concurrency` (from the stored payload), else undefined. */
	private concurrencyKeyOf(row: InstanceRow): string | undefined {
		if (!this.host.slots || !this.host.limiter) return undefined;
		const definition = concurrencyOf(this.host.registry, row.type);
		return definition && concurrencyKey(row.type, definition, fromStoredJson(row.payload));
	}

	private assertNotDeleting(id: string): void {
		if (this.deletion || this.gone) {
			throw new InvalidStateError(`workflow id "${id}" is being deleted; create it again once the deletion has finished`);
		}
	}

	/** What the index should hold for this instance; null if it does not exist (or is being deleted). Reads only. */
	currentIndexEntry(): IndexEntry | null {
		return this.exists ? toIndexEntry(this.row!) : null;
	}

	/**
	 * Writes the current entry into the outbox again (as if the last transition
	 * had just happened) and waits for its delivery: repairs an entry that a
	 * shard lost. The shard keeps the highest version, so this never regresses it.
	 */
	async republishIndex(): Promise<{ entry: IndexEntry; delivered: boolean }> {
		const entry = toIndexEntry(this.require());
		const now = this.host.now();
		this.host.store.writeOutbox({ entry, attempts: 0, nextAttemptAt: now + OUTBOX_GRACE_MS });
		this.host.ensureAlarmBy(now + OUTBOX_GRACE_MS);
		this.deliverIndex();
		while (this.delivering) await this.delivering;
		return { entry, delivered: this.host.store.readOutbox() === undefined };
	}

	/**
	 * The alarm: a due index retry is sent, and the loop runs only when there
	 * is work for it (a due wake-up, or a pass a crash interrupted). While a
	 * pass is in flight the alarm only re-arms the watchdog.
	 */
	alarm(): void {
		// No instance here (or its storage is gone): nothing to do.
		if (!this.row || this.gone) return;
		const now = this.host.now();
		const outbox = this.host.store.readOutbox();
		if (outbox && outbox.nextAttemptAt <= now) this.deliverIndex();
		const slotDue = this.slot?.nextAttemptAt;
		if (slotDue != null && slotDue <= now) this.syncSlot();
		if (this.deletion) {
			// A deletion a crash (or a failed delivery or archive write) left unfinished.
			this.host.background(this.continueDeletion());
			return;
		}
		if (this.loop) {
			this.host.ensureAlarmBy(now + WATCHDOG_MS);
			return;
		}
		// A terminated instance's only wake-up is its child cascade (see terminate).
		const wake = this.row.status === 'terminated' ? this.host.store.earliestWakeup() : undefined;
		if (wake !== undefined && wake <= now) this.host.background(this.terminateChildren());
		else if (this.hasWork(now)) {
			if (this.backingOffCutPass(now)) return;
			this.kick();
		}
		else if (this.expired(now)) this.expire();
		else this.rearm();
	}

	/**
	 * The alarm of an instance left `running` or `created` with no pass in this engine: the
	 * watchdog of a pass that was cut short, or a continuation (invocation-budget.ts). Counts
	 * the passes the alarm starts without a pass ending in between, in storage, and answers
	 * true (the alarm moved to the backoff's end) while the backoff has not passed; false when
	 * the pass may start now. A pass that ends clears the count, so a continuation counts 1 at
	 * most, and only passes cut short again and again (a crash loop) back off.
	 */
	private backingOffCutPass(now: number): boolean {
		const status = this.row!.status;
		if (status !== 'running' && status !== 'created') return false;
		const cut = this.cutPasses;
		if (cut && now < cut.retryAt) {
			this.host.setAlarm(cut.retryAt);
			return true;
		}
		const count = (cut?.count ?? 0) + 1;
		this.cutPasses = { count, retryAt: now + cutPassBackoffMs(count) };
		this.host.store.writeCutPasses(this.cutPasses);
		if (count > 1) {
			const retryAt = new Date(this.cutPasses.retryAt).toISOString();
			this.host.log?.({ severity: 'error', event: 'pass.cut', instanceId: this.row!.id, type: this.row!.type, count: count - 1, nextRetryAt: retryAt });
		}
		return false;
	}

	/** Whether a pass would do anything now: a status that means a pass was cut short, or a due wake-up. */
	private hasWork(now: number): boolean {
		const status = this.row?.status;
		if (status === 'created' || status === 'running') return true;
		if (status === 'rolling_back') {
			// A rollback waiting for its retry has a wake-up; without one, a pass was cut short.
			const wake = this.host.store.earliestWakeup();
			return wake === undefined || wake <= now;
		}
		if (status !== 'sleeping' && status !== 'waiting') return false;
		const wake = this.host.store.earliestWakeup();
		if (wake !== undefined && wake <= now) return true;
		// A sleeping instance always has a wake-up; without one, a replay restores it.
		if (wake === undefined && status === 'sleeping') return true;
		// An event accepted just before a crash, whose pass never ran.
		return this.host.store.eventBuffer().count > 0;
	}

	private interrupt(reason: 'terminated' | 'restarted'): void {
		// A running step's signal aborts, so its fetch (or anything that listens) stops now.
		this.activeStep?.cancel(new DOMException(`the workflow was ${reason} while this step ran`, 'AbortError'));
		this.activeRollback?.cancel(new DOMException(`the workflow was ${reason} while this rollback ran`, 'AbortError'));
		this.controlEpoch++;
		this.cutPass?.();
		this.cutPass = undefined;
	}

	/** Resolves once the replay loop (and, unless `index` is false, index delivery) has nothing left to do. */
	async idle(options: { index?: boolean } = {}): Promise<void> {
		const index = options.index ?? true;
		for (;;) {
			const pending = this.starting ?? this.loop ?? this.deleting ?? this.slotWork ?? (index ? this.delivering : undefined);
			if (!pending) return;
			await pending;
		}
	}

	/** Starts the replay loop, or asks the running one to go round once more. */
	kick(): void {
		if (this.loop) {
			this.rerun = true;
			return;
		}
		this.loop = this.drive();
		this.host.background(this.loop);
	}

	private async drive(): Promise<void> {
		await Promise.resolve();
		try {
			do {
				this.rerun = false;
				try {
					await this.pass();
					if (this.row) failedPasses.delete(this.row.id);
					// A pass that ended (however) ends the run of cut passes.
					if (this.cutPasses && !this.gone) {
						this.cutPasses = undefined;
						this.host.store.writeCutPasses(undefined);
					}
				} catch (error) {
					// Storage refused a write, a registry that cannot run, or a bug: the instance stays
					// runnable and the alarm armed by `rearm` tries again, backing off (1 s doubling to
					// 5 minutes) so that a lasting cause costs a few alarms, not a loop.
					const row = this.row;
					const failures = this.passFailures + 1;
					notePassFailure(row?.id ?? '', failures, this.host.now() + outboxBackoffMs(failures));
					this.host.log?.({
						severity: 'error', event: 'pass.failed', instanceId: row?.id ?? '(none)', type: row?.type ?? '(none)', failures: this.passFailures,
						retryAt: new Date(this.passRetryAt).toISOString(), error: describeThrown(error),
					});
				} finally {
					this.cutPass = undefined;
				}
			} while (this.rerun);
		} finally {
			// Cleared in the same turn as the last `rerun` check, so no kick is lost in between.
			this.loop = undefined;
		}
		this.rearm();
	}

	/**
	 * One replay pass: `run()` from the top, completed steps answered from
	 * storage. The instance turns `running` on the pass's first write, so a
	 * pass that only replays and suspends where it was changes nothing.
	 */
	private async pass(): Promise<void> {
		// Every pass takes the notices that came before it, even one that returns at once: none outlives the next pass.
		const noticed = this.noticedOutcomes.takeAll();
		const start = this.row;
		if (start?.status === 'rolling_back') return this.rollbackPass(start);
		if (!start || !RUNNABLE.includes(start.status)) return;
		const entry = this.entryOf(start);
		const generation = start.generation;
		const epoch = this.controlEpoch;
		const startedAt = this.host.now();
		this.host.ensureAlarmBy(startedAt + WATCHDOG_MS);
		const wakeups = this.passWakeups();
		const codeVersion = entry.version;
		const markRunning = () => {
			const row = this.row!;
			if (row.status === 'paused' || row.generation !== generation || !RUNNABLE.includes(row.status)) return;
			const newCode = (row.lastCodeVersion ?? null) !== codeVersion;
			if (row.status === 'running' && !newCode) return;
			// The first write of a pass under another code version than the last one records the change.
			this.transition(
				{ ...row, status: 'running', lastCodeVersion: codeVersion },
				newCode ? { kind: 'workflow.code_changed', detail: { previous: row.lastCodeVersion ?? null, current: codeVersion } } : undefined,
			);
		};
		if (start.status === 'created') markRunning();

		const rows = StepRows.load(this.host.store);
		const budget = this.host.invocationBudget ?? DEFAULT_INVOCATION_BUDGET;
		const meter = new InvocationMeter({ ...budget, steps: entry.limits.stepsPerInvocation ?? budget.steps }, this.host.now());
		// Records since the last status change (an event, or a pass a crash cut short): usually none.
		this.uncountedHistoryBytes = this.host.store.historySize(this.row!.historySeq ?? 0).bytes;
		/** A record of this pass as a history row, its bytes added to the running total. */
		const counted = (record: HistoryRecord) => {
			const row = historyRow(record, generation, this.host.now());
			this.uncountedHistoryBytes += historyRecordBytes(row);
			return row;
		};
		const step = new StepContext(this.host.store, rows, entry, {
			now: () => this.host.now(),
			yieldToEventLoop: () => this.host.yieldToEventLoop(),
			willWrite: markRunning,
			record: (record) => this.host.store.appendHistory(counted(record)),
			setWakeup: wakeups.set,
			writeStepWithRecord: (stepRow, record) => this.host.store.writeStepWithRecord(stepRow, counted(record)),
			historyBytes: () => (this.row!.historyBytes ?? 0) + this.uncountedHistoryBytes,
			invocationSpent: (at) => meter.spentBefore(at),
			logsStepCompletions: this.host.logStepCompletions === true,
			wrapStepFunction: this.host.wrapStepFunction,
			log: (record) => this.host.log?.({ instanceId: start.id, type: start.type, generation, ...record }),
			...(this.host.children
				? {
						children: {
							port: this.childPortOfPass(this.host.children, noticed),
							parentId: start.id,
							parentType: start.type,
							generation,
							assertRegistered: (type: string) => void this.host.registry.get(type),
						},
					}
				: {}),
			checkBoundary: () => {
				const row = this.row!;
				if (row.generation !== generation) throw new AbortSignal_('restarted');
				if (row.status === 'terminated' || row.status === 'rolling_back') throw new AbortSignal_('terminated');
				if (row.status === 'paused') throw new SuspendSignal('paused');
			},
			issueWebhook: this.webhookIssuer(start, generation),
			streams: {
				recordedBefore: () => this.host.store.lastStreamMessageIndex(generation),
				take: (at, topic) => this.streamRate.take(at, topic),
			},
			setAttributes: (update, stepRow, stepName) => this.setAttributes(entry, update, stepRow, stepName),
		});

		this.activeStep = step;
		// A terminate or restart ends the pass at once, even while run() awaits an attempt that
		// ignores its signal: the attempt's outcome no longer counts, and a restart's new
		// generation must not wait for it.
		const interrupted = new Promise<typeof INTERRUPTED>((resolve) => (this.cutPass = () => resolve(INTERRUPTED)));
		let outcome: { ok: true; output: unknown } | { ok: false; error: unknown };
		try {
			const workflow = new entry.workflow({ id: start.id, type: start.type, env: this.host.env });
			const output = await Promise.race([workflow.run(step, fromStoredJson(start.payload)), interrupted]);
			if (output === INTERRUPTED) {
				if (this.activeStep === step) this.activeStep = undefined;
				return;
			}
			outcome = { ok: true, output };
		} catch (error) {
			outcome = { ok: false, error };
		}
		// Attempts still running (parallel steps) finish and checkpoint before the pass ends,
		// so the next pass never starts them again; a terminate or restart stops the wait.
		await Promise.race([step.settle(), interrupted]);
		if (this.activeStep === step) this.activeStep = undefined;
		// A run() that settled short of its recorded steps dropped one (a divergence too).
		const divergence = step.divergence ?? (outcome.ok || !isSignal(outcome.error) ? await step.unreachedAtEnd() : undefined);

		const now = this.row!;
		if (now.generation !== generation || FINISHED_STATUSES.includes(now.status) || now.status === 'rolling_back') return;
		// Wake-ups that were due when the pass began have had their turn; those it set have not,
		// however due (a retry delay, sleep or timeout of 0 sets one at `startedAt` itself).
		this.host.store.deleteWakeupsDue(startedAt, wakeups.keys);
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
			if (signal.status === 'running') return this.host.store.transaction(() => wakeups.set(CONTINUE_WAKEUP, this.host.now()));
			if (now.status !== signal.status) this.transition({ ...now, status: signal.status });
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
			this.transition({ ...now, status: 'completed', output }, { kind: 'workflow.completed', value: output });
		} else if (step.rollbacks.size > 0) {
			// run() failed for good and completed steps have rollbacks: the next pass runs them.
			this.beginRollback(now, { reason: 'failed', state: 'running' }, describeThrown(outcome.error));
			this.kick();
		} else {
			this.fail(now, outcome.error);
		}
	}

	/**
	 * How a pass sets wake-ups: through the store, noting each key, so the pass's end
	 * spares them when it deletes the wake-ups that were due as it began.
	 */
	private passWakeups(): { keys: Set<string>; set: (key: string, at: number) => void } {
		const keys = new Set<string>();
		return {
			keys,
			set: (key, at) => {
				this.host.store.setWakeup(key, at);
				keys.add(key);
			},
		};
	}

	/** Signs webhook tokens of this instance's generation, when the host can. */
	private webhookIssuer(row: InstanceRow, generation: number): ((step: string, nonce: string) => Promise<string>) | undefined {
		const port = this.host.webhooks;
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
	 * of the rollbacks and every resumption (alarm, retry, eviction).
	 */
	private async rollbackPass(start: InstanceRow): Promise<void> {
		const state = readRollbackState(start);
		if (!state) return;
		const entry = this.entryOf(start);
		const generation = start.generation;
		const startedAt = this.host.now();
		this.host.ensureAlarmBy(startedAt + WATCHDOG_MS);
		const wakeups = this.passWakeups();
		const stillRollingBack = () => this.row?.status === 'rolling_back' && this.row.generation === generation;
		const rows = StepRows.load(this.host.store);
		const record = (r: HistoryRecord) => this.host.store.appendHistory(historyRow(r, generation, this.host.now()));
		const log = (r: { severity: 'error' | 'warn' | 'info' | 'debug'; event: string; [field: string]: unknown }) =>
			this.host.log?.({ instanceId: start.id, type: start.type, generation, ...r });
		const step = new StepContext(this.host.store, rows, entry, {
			now: () => this.host.now(),
			yieldToEventLoop: () => this.host.yieldToEventLoop(),
			willWrite: () => {},
			record,
			setWakeup: wakeups.set,
			writeStepWithRecord: (stepRow, r) => this.host.store.writeStepWithRecord(stepRow, historyRow(r, generation, this.host.now())),
			historyBytes: () => (this.row!.historyBytes ?? 0) + this.uncountedHistoryBytes,
			logsStepCompletions: false,
			wrapStepFunction: undefined,
			log,
			checkBoundary: () => {
				if (!stillRollingBack()) throw new AbortSignal_('terminated');
			},
			replayOnly: true,
		});
		try {
			const workflow = new entry.workflow({ id: start.id, type: start.type, env: this.host.env });
			const run = Promise.resolve().then(() => workflow.run(step, fromStoredJson(start.payload)));
			await step.replayRecorded(run);
		} catch {
			// The constructor threw: no closures to learn; the recorded ones are all there is.
		}
		if (!stillRollingBack()) return;
		const runner = new RollbackRunner(this.host.store, rows, { now: () => this.host.now(), record, setWakeup: wakeups.set, stillRollingBack, log });
		this.activeRollback = runner;
		let outcome;
		try {
			outcome = await runner.run(rollbackOrder(this.host.store, generation, step.rollbacks.values()));
		} finally {
			this.activeRollback = undefined;
		}
		const now = this.row!;
		if (!stillRollingBack() || outcome.kind === 'aborted') return;
		this.host.store.deleteWakeupsDue(startedAt, wakeups.keys);
		if (outcome.kind === 'suspended') return;
		const done: RollbackState =
			outcome.kind === 'completed' ? { ...state, state: 'completed' } : { ...state, state: 'failed', failedStep: outcome.step, error: outcome.error };
		const rollback = storedRollbackState(done);
		const summary = this.rollbackSummary(done);
		if (state.reason === 'terminated') {
			// The children go once the parent's own rollbacks are done, as with a plain terminate (retried from the alarm).
			const children = this.host.children ? childrenToTerminate(stepRowsWithSmallResults(this.host.store)) : [];
			this.host.store.transaction(() => {
				if (children.length > 0) this.host.store.setWakeup(CASCADE_WAKEUP, this.host.now());
				this.transition({ ...now, status: 'terminated', rollback }, { kind: 'workflow.terminated', detail: { rollback: summary } });
			});
			if (children.length > 0) this.host.background(this.terminateChildren());
		} else {
			this.transition({ ...now, status: 'errored', rollback }, { kind: 'workflow.errored', detail: { error: historyError(errorOf(now)), rollback: summary } });
		}
	}

	/** The code parted from the recorded steps: stop, describe where, run nothing new until a resume or a restart. */
	/**
	 * Parks the instance as `diverged`, saying which code parked it: the record carries the
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
		this.host.store.transaction(() => {
			if (previous !== codeVersion) {
				this.host.store.appendHistory(historyRow({ kind: 'workflow.code_changed', detail: { previous, current: codeVersion } }, row.generation, this.host.now()));
			}
			this.transition(
				{ ...row, status: 'diverged', lastCodeVersion: codeVersion, errorName: 'DivergenceError', errorMessage: message, errorStack: null, errorCode: ErrorCode.Diverged },
				{ kind: 'workflow.diverged', detail: { position, recorded, requested, codeVersion } },
			);
		});
	}

	private fail(row: InstanceRow, error: unknown): void {
		const described = describeThrown(error);
		const { name, message, stack, code } = described;
		this.transition(
			{ ...row, status: 'errored', errorName: name, errorMessage: message, errorStack: stack ?? null, errorCode: code ?? null },
			{ kind: 'workflow.errored', detail: { error: historyError(described) } },
		);
	}

	/**
	 * A `step.setAttributes`: the step's row, its `attributes.set` record, the instance row with
	 * the new attributes and its index update, in one transaction (a transition that keeps the
	 * status: the version grows, so the shards take the entry over the one they hold).
	 */
	private setAttributes(entry: ResolvedEntry, update: Record<string, unknown>, stepRow: StepRow, stepName: string): void {
		const row = this.row!;
		const attributes = applyAttributeUpdate(row.type, entry.attributes, parseAttributes(row.attributes), update);
		const set = Object.fromEntries(Object.entries(update).map(([name, value]) => [name, value instanceof Date ? value.getTime() : (value ?? null)]));
		this.host.store.transaction(() => {
			this.host.store.writeStep(stepRow);
			this.transition({ ...row, attributes: attributesJson(attributes) }, { kind: 'attributes.set', step: stepName, detail: { set, attributes } });
		});
	}

	/**
	 * Every status change: the instance row, its history record (if the change
	 * has one) and its pending index update are written together, so the index
	 * can lag but never miss a transition.
	 */
	private transition(next: InstanceRow, record?: HistoryRecord): void {
		const now = Math.max(this.host.now(), next.updatedAt);
		const row: InstanceRow = { ...next, updatedAt: now, version: next.version + 1 };
		// While the shard is failing, a newer entry inherits the backoff instead of starting it again.
		const pending = this.host.store.readOutbox();
		const backingOff = pending !== undefined && pending.attempts > 0;
		const nextAttemptAt = backingOff ? pending.nextAttemptAt : now + OUTBOX_GRACE_MS;
		this.host.store.transaction(() => {
			// A finished instance never consumes its buffered events: they go, and are counted, recorded
			// before the terminal record, so a run's last record is always its outcome (docs/history-format.md).
			if (FINISHED_STATUSES.includes(row.status)) {
				const dropped = this.host.store.dropEvents();
				if (dropped > 0) this.host.store.appendHistory(historyRow({ kind: 'events.dropped', detail: { count: dropped } }, row.generation, now));
			}
			if (record) this.host.store.appendHistory(historyRow(record, row.generation, now));
			// A finished instance gives its concurrency slot back (or leaves the queue): delivered after, retried until acknowledged.
			const slot = this.slot;
			if (slot && slot.state !== 'releasing' && FINISHED_STATUSES.includes(row.status)) this.writeSlot({ ...slot, state: 'releasing', attempts: 0, nextAttemptAt: now });
			// The history's running total takes in the records since the last change (this one's too).
			const tail = this.host.store.historySize(row.historySeq ?? 0);
			row.historyBytes = (row.historyBytes ?? 0) + tail.bytes;
			row.historySeq = tail.lastSeq;
			this.host.store.writeInstance(row);
			this.host.store.writeOutbox({
				entry: toIndexEntry(row),
				attempts: backingOff ? pending.attempts : 0,
				nextAttemptAt,
			});
		});
		const finishing = FINISHED_STATUSES.includes(row.status) && !(this.row && FINISHED_STATUSES.includes(this.row.status));
		this.row = row;
		if (this.slot?.state === 'releasing' && this.slot.attempts === 0) this.syncSlot();
		this.uncountedHistoryBytes = 0;
		this.logTransition(row, record?.kind);
		// Best effort: the parent also polls its waiting invokes, so a lost notice only delays it.
		if (finishing && row.parentId && this.host.children) {
			const children = this.host.children;
			const outcome = outcomeOf(row);
			if (outcome) this.host.background(children.notifyParent(row.parentId, row.id, outcome).catch(() => undefined));
		}
		this.host.ensureAlarmBy(nextAttemptAt);
		if (!backingOff || nextAttemptAt <= now) this.deliverIndex();
	}

	/**
	 * One line per status change. Outcomes and operator actions (completed, errored,
	 * diverged, terminated, paused, resumed, restarted) are `info` or `error`; the
	 * changes a run makes on its own (created, running, sleeping, waiting) are `debug`,
	 * since every console line costs ~1 ms of isolate time under `wrangler dev`
	 * (docs/decisions.md) and the history records them all anyway.
	 */
	private logTransition(row: InstanceRow, change: HistoryRecord['kind'] | undefined): void {
		if (!this.host.log) return;
		const errored = row.status === 'errored' || row.status === 'diverged';
		const routine = change === undefined || change === 'workflow.created';
		this.host.log({
			severity: errored ? 'error' : routine ? 'debug' : 'info',
			event: 'workflow.status',
			instanceId: row.id,
			type: row.type,
			status: row.status,
			version: row.version,
			generation: row.generation,
			...(errored ? { error: errorOf(row) } : {}),
		});
	}

	/** Delivers the pending index update off the critical path; failures wait for the alarm. */
	deliverIndex(): void {
		if (this.delivering) {
			this.redeliver = true;
			return;
		}
		this.delivering = this.deliverLoop();
		this.host.background(this.delivering);
	}

	private async deliverLoop(): Promise<void> {
		// Waits a moment before sending, so the transitions of a busy moment (created,
		// running, completed) reach the shard as one write of the newest. It also sets
		// `delivering` before the loop can clear it.
		await new Promise<void>((resolve) => this.host.defer(resolve, INDEX_COALESCE_MS));
		try {
			do {
				this.redeliver = false;
				const pending = this.host.store.readOutbox();
				if (!pending) break;
				try {
					await deliverTracked(this.host, pending);
					this.host.store.ackOutbox(pending.entry.version);
				} catch {
					const attempts = pending.attempts + 1;
					this.host.store.deferOutbox(pending.entry.version, attempts, this.host.now() + outboxBackoffMs(attempts));
					await noteFailedDelivery(this.host, pending);
					// A newer entry written meanwhile gets its own attempt; otherwise wait for the alarm.
					if (!this.redeliver) break;
				}
			} while (this.redeliver);
		} finally {
			// Cleared in the same turn as the last `redeliver` check, so no delivery request is lost.
			this.delivering = undefined;
		}
		this.rearm();
	}

	/** Points the alarm at the earliest wake-up, outbox retry, watchdog check, retention expiry or deletion step. */
	private rearm(): void {
		if (this.gone) return;
		const now = this.host.now();
		const wake = this.host.store.earliestWakeup();
		const pending = this.host.store.readOutbox()?.nextAttemptAt;
		// A delivery in flight re-arms when it ends; until then its retry is not due (an alarm
		// in the past here would fire again and again while the shard is slow).
		const outbox = pending !== undefined && this.delivering ? Math.max(pending, now + OUTBOX_GRACE_MS) : pending;
		const status = this.row?.status;
		const paused = status === 'paused' || status === 'diverged';
		// A pass in flight, one that failed and left the instance runnable, or a first pass not started
		// yet is checked again later: if the isolate dies before that first pass, this alarm starts it
		// (crash-point exploration found a create stuck in `created` without it).
		const watchdog = status === 'running' || status === 'created' || (status === 'rolling_back' && wake === undefined) ? now + WATCHDOG_MS : undefined;
		// A slot request or release in flight is checked again later, like a pass: a crash mid-call must not strand it.
		const slotPending = this.slot?.state === 'requested' || this.slot?.state === 'releasing';
		const slotRetry = !slotPending ? undefined : this.slotWork ? now + WATCHDOG_MS : (this.slot!.nextAttemptAt ?? now);
		const candidates = [paused ? undefined : wake, outbox, watchdog, this.expiresAt(), this.deletionDueAt(now, pending), slotRetry].filter(
			(t): t is number => t !== undefined,
		);
		// After failed passes, nothing is due before the backoff ends (see drive).
		const next = candidates.length ? Math.min(...candidates) : undefined;
		const at = next !== undefined && this.passFailures > 0 ? Math.max(next, this.passRetryAt) : next;
		// A delivery in flight re-arms when it ends: until then an earlier alarm may stay (it would
		// only look early), which saves moving it twice at the end of every short run.
		if (this.delivering && at !== undefined) this.host.ensureAlarmBy(at);
		else this.host.setAlarm(at);
	}

	/** A create of an existing id: the same type and payload get the instance, anything else a 409. */
	private existing(type: string, payloadJson: string | null): CreateResult {
		const row = this.assertSameType(type);
		// Compared as canonical JSON after the schema, so key order and defaults do not matter.
		if (canonicalJson(row.payload) !== canonicalJson(payloadJson)) {
			throw new PayloadMismatchError(
				`workflow id "${row.id}" already exists with another payload; re-sending the same payload returns the existing instance, a new payload needs a new id`,
			);
		}
		return { id: row.id, type: row.type, status: row.status, created: false };
	}

	private assertSameType(type: string): InstanceRow {
		const row = this.row!;
		if (row.type !== type) {
			throw new TypeMismatchError(`workflow id "${row.id}" already belongs to a workflow of type "${row.type}", not "${type}"`);
		}
		return row;
	}


	/** The row of an instance that exists; NOT_FOUND for one being deleted too (it answers from its archive, if any). */
	private require(): InstanceRow {
		if (!this.row || this.deletion || this.gone) throw new NotFoundError('no such workflow instance');
		return this.row;
	}

	private entryOf(row: InstanceRow): ResolvedEntry {
		return this.host.registry.get(row.type);
	}
}
/** What a pass's run() race answers when a terminate or restart came first. */
const INTERRUPTED = Symbol('interrupted');


function errorOf(row: { errorName: string | null; errorMessage: string | null; errorStack: string | null; errorCode: string | null }) {
	return {
		name: row.errorName ?? 'Error',
		message: row.errorMessage ?? '',
		...(row.errorCode ? { code: row.errorCode } : {}),
		...(row.errorStack ? { stack: row.errorStack } : {}),
	};
}

/** A finished instance's outcome as its parent sees it; null while it runs. */
function outcomeOf(row: InstanceRow): ChildOutcome | null {
	if (row.status === 'completed') return { status: 'completed', output: row.output };
	if (row.status === 'errored' || row.status === 'terminated') {
		return { status: row.status, error: row.errorName === null ? null : { name: row.errorName, message: row.errorMessage ?? '', ...(row.errorCode ? { code: row.errorCode } : {}) } };
	}
	return null;
}

/** Refuses an instance row production's SQLite could not store (payload and output share it; see `MAX_INSTANCE_ROW_BYTES`). */
function assertRowFits(row: InstanceRow): void {
	const text = [row.payload, row.output, row.errorMessage, row.errorStack, row.rollback ?? null];
	const bytes = text.reduce((sum, value) => sum + utf8Bytes(value), 0);
	if (bytes > MAX_INSTANCE_ROW_BYTES) {
		throw new ValidationError(
			ErrorCode.TooLarge,
			`the workflow output (${utf8Bytes(row.output)} bytes) does not fit beside its payload (${utf8Bytes(row.payload)} bytes): an instance row holds at most ${MAX_INSTANCE_ROW_BYTES} bytes in production (README "Production limits")`,
		);
	}
}

/** A webhook POST's body: JSON, and an empty one is null. */
function parseWebhookBody(text: string): unknown {
	if (text.trim() === '') return null;
	try {
		return JSON.parse(text);
	} catch {
		throw new ValidationError(ErrorCode.InvalidPayload, 'a webhook body must be JSON (or empty)');
	}
}
