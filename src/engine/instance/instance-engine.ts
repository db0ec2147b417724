import {
	ErrorCode,
	IdempotencyKeyReusedError,
	InvalidStateError,
	PayloadMismatchError,
	TypeMismatchError,
	ValidationError,
	WebhookExpiredError,
	WebhookNotFoundError,
	WebhookUsedError,
} from '../support/errors';
import { historyPage, historyRow, type HistoryPage, type HistoryQuery } from '../history/history';
import { assertValidWorkflowId } from '../support/ids';
import { toIndexEntry, type IndexEntry } from '../index/index-entry';
import { assertEventBufferRoom, assertValidIdempotencyKey, eventDigest, type SendEventOptions } from './event-keys';
import { assertJsonDepth, canonicalJson, fromStoredJson, toStoredJson } from '../support/json';
import { MAX_EVENT_KEYS } from '../support/limits';
import type { Registry } from '../definition/registry';
import { matchesDeleteFilter, type DeleteOptions, type DeleteResult } from '../lifecycle/deletion';
import { validateEventPayload, validateWith } from '../definition/schema-validation';
import { restartPoint, type RestartFrom } from '../steps/restart-from';
import { checkParentRef, FIRST_OUTCOME_WAIT_MS, type ChildOutcome, type ParentRef } from '../children/child-workflows';
import { statusView, stepPage } from './status-view';
import type { InstanceRow, StepRow } from '../storage/store';
import { stepRowsWithSmallResults } from '../steps/step-rows';
import { readRollbackState, storedRollbackState, type RollbackState } from '../steps/rollback-state';
import { stepKey } from '../steps/step-key';
import { readWebhookRecord, storedWebhookRecord, type WebhookTarget } from '../webhooks/webhook';
import { FINISHED_STATUSES, type StepPage, type WorkflowStatus, type WorkflowStatusInfo } from '../definition/types';
import { concurrencyKey, concurrencyOf } from '../limiter/concurrency';
import { applyAttributeUpdate, attributesJson } from '../index/search-attributes';
import type { EngineHost } from './engine-host';
import { InstanceKernel } from './kernel';
import { RUNNABLE } from './parts/replay-loop';
import { outcomeOf } from './row-views';
import { WATCHDOG_MS } from './timing';

export type { EngineHost, WebhookPort } from './engine-host';

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
 * One workflow instance: the operations the Durable Object serves (src/operations/
 * declares them), each a few lines over the instance's kernel and its parts (see
 * instance/kernel.ts). Pure TypeScript over `EngineHost`; the Durable Object is a thin
 * shell around it.
 */
export class InstanceEngine {
	private readonly k: InstanceKernel;
	/** The first pass (or slot request) of a create, started on the next macrotask. */
	private starting: Promise<void> | undefined;

	constructor(private readonly host: EngineHost) {
		this.k = new InstanceKernel(host);
	}

	/** An instance lives here (not one being deleted, nor one deleted). */
	get exists(): boolean {
		return this.k.exists;
	}

	async create(id: string, type: string, payloadInput: unknown, parent?: unknown, attributes?: unknown): Promise<CreateResult> {
		assertValidWorkflowId(id);
		this.host.registry.get(type);
		this.assertNotDeleting(id);
		if (this.k.row) this.assertSameType(type);
		return this.commitCreate(await prepareCreate(this.host.registry, id, type, payloadInput, parent, attributes));
	}

	/** Stores an instance whose input `prepareCreate` has already checked. */
	commitCreate({ id, type, payloadJson, concurrencyKey: key, parent, attributesJson: attributes }: PreparedCreate): CreateResult {
		this.assertNotDeleting(id);
		// An existing id (or a concurrent create that won while the schema validated).
		if (this.k.row) return this.existing(type, payloadJson);
		const now = this.host.now();
		const codeVersion = this.host.registry.get(type).version;
		// A type with a concurrency limit starts queued: it runs once its limiter grants a slot.
		const queued = key !== undefined && this.host.slots !== undefined && this.host.limiter !== undefined;
		const status: WorkflowStatus = queued ? 'queued' : 'created';
		const store = () =>
			this.k.transition(
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
				this.k.slot.queue(key, 0, now);
			});
		} else store();
		// Start the run on the next macrotask: the create answer then leaves as soon as the
		// instance row is durable, instead of waiting for the first pass's writes too.
		this.starting = new Promise<void>((resolve) =>
			this.host.defer(() => {
				this.starting = undefined;
				if (queued) this.k.slot.sync();
				else this.kick();
				resolve();
			}),
		);
		return { id, type, status, created: true };
	}

	/**
	 * The limiter granted this queued instance a slot (RPC `slotGranted`): it starts.
	 * A grant for an instance that no longer waits (terminated meanwhile) changes nothing.
	 */
	slotGranted(): void {
		this.require();
		this.k.slot.granted();
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
	 * URL that no longer works answers why whatever its body (docs/writing-workflows.md "Webhook waits").
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
		this.k.replay.noteStepRow(done);
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
		const { workflow } = this.k.entryOf(row);
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
		this.k.replay.noteControl();
		this.k.transition({ ...row, status: 'paused' }, { kind: 'workflow.paused' });
		return 'paused';
	}

	resume(): WorkflowStatus {
		const row = this.require();
		if (row.status !== 'paused' && row.status !== 'diverged') {
			throw new InvalidStateError(`cannot resume workflow "${row.id}": it is ${row.status}, not paused or diverged`);
		}
		this.k.replay.noteControl();
		// A diverged instance resumes to replay with the code deployed since; its divergence is cleared.
		const cleared = row.status === 'diverged' ? { errorName: null, errorMessage: null, errorStack: null, errorCode: null } : {};
		this.k.transition({ ...row, ...cleared, status: 'running' }, { kind: 'workflow.resumed' });
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
		const replay = this.k.replay;
		if (options.rollback === true) {
			if (row.status === 'rolling_back') throw new InvalidStateError(`workflow "${row.id}" is already rolling back`);
			replay.beginRollback(row, { reason: 'terminated', state: 'running' });
			replay.interrupt('terminated');
			this.kick();
			return 'rolling_back';
		}
		const abandoned: RollbackState | undefined = row.status === 'rolling_back' && rollingBack ? { ...rollingBack, state: 'abandoned' } : undefined;
		const children = this.k.children.toTerminate();
		this.host.store.transaction(() => {
			this.host.store.deleteAllWakeups();
			// Durable before the children are told: the alarm retries the cascade until every one answered.
			this.k.children.arm(children);
			this.k.transition(
				{ ...row, status: 'terminated', ...(abandoned ? { rollback: storedRollbackState(abandoned) } : {}) },
				{ kind: 'workflow.terminated', ...(abandoned ? { detail: { rollback: replay.rollbackSummary(abandoned) } } : {}) },
			);
		});
		replay.interrupt('terminated');
		this.k.children.start(children);
		return 'terminated';
	}

	/**
	 * The outcome of this instance as its parent sees it: null until it has finished. With
	 * `waitMs` (a parent's invoke that has just created it), the answer waits until the run
	 * has nothing left to do (finished, or suspended on a sleep or a wait), for at most
	 * `waitMs` (at most `FIRST_OUTCOME_WAIT_MS`, whatever the caller asks): a short child then answers its parent
	 * in the parent's first pass, with no notice and no second pass. The outcome answered is
	 * durable: the RPC's answer leaves once the writes before it are.
	 */
	async childOutcome(waitMs?: unknown): Promise<ChildOutcome | null> {
		this.require();
		const wait = typeof waitMs === 'number' && Number.isFinite(waitMs) ? Math.min(Math.max(0, waitMs), FIRST_OUTCOME_WAIT_MS) : 0;
		if (wait > 0 && !outcomeOf(this.require())) await this.idleWithin(wait);
		return outcomeOf(this.require());
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
	 * Runs the instance again in a new generation: from the start, or with `from`
	 * from that step on (the completed steps recorded before it keep their
	 * results; see restart-from.ts). An unknown step changes nothing.
	 */
	restart(options: RestartOptions = {}): WorkflowStatus {
		const row = this.require();
		if (!FINISHED_STATUSES.includes(row.status) && row.status !== 'diverged') {
			throw new InvalidStateError(`cannot restart workflow "${row.id}": it is ${row.status}; only completed, errored, terminated or diverged workflows restart`);
		}
		const key = this.k.slot.keyOf(row);
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
			this.k.transition(
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
			if (key !== undefined) this.k.slot.queue(key, row.generation + 1, this.host.now());
		});
		this.k.replay.interrupt('restarted');
		if (key === undefined) this.kick();
		else this.k.slot.sync();
		return status;
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
		if (options.only && !matchesDeleteFilter(row, options.only)) return { id: row.id, deleted: false };
		const archive = options.archive === true;
		if (archive && !this.host.archive) {
			throw new ValidationError(ErrorCode.ArchiveNotConfigured, 'archive requested, but no archive bucket is bound (ARCHIVE); see docs/operations.md "Retention and deletion"');
		}
		if (!FINISHED_STATUSES.includes(row.status)) {
			if (!options.terminate) {
				throw new InvalidStateError(`cannot delete workflow "${row.id}": it is ${row.status}; terminate it first, or delete with terminate=true`);
			}
			this.terminate();
		}
		this.k.deletion.begin(options.reason ?? 'delete', archive);
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

	/** Delivers the pending index update off the critical path; failures wait for the alarm. */
	deliverIndex(): void {
		this.k.outbox.deliver();
	}

	/** Starts the replay loop, or asks the running one to go round once more. */
	kick(): void {
		this.k.replay.kick();
	}

	/** Resolves once the replay loop (and, unless `index` is false, index delivery) has nothing left to do. */
	async idle(options: { index?: boolean } = {}): Promise<void> {
		const index = options.index ?? true;
		for (;;) {
			const pending = this.starting ?? this.k.inFlight(index);
			if (!pending) return;
			await pending;
		}
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
		const row = this.k.row!;
		if (row.type !== type) {
			throw new TypeMismatchError(`workflow id "${row.id}" already belongs to a workflow of type "${row.type}", not "${type}"`);
		}
		return row;
	}



	private assertNotDeleting(id: string): void {
		if (this.k.deletion.pending || this.k.gone) {
			throw new InvalidStateError(`workflow id "${id}" is being deleted; create it again once the deletion has finished`);
		}
	}

	/** The row of an instance that exists; NOT_FOUND for one being deleted too (it answers from its archive, if any). */
	private require(): InstanceRow {
		return this.k.require();
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
