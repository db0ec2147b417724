import {
	ErrorCode,
	IdempotencyKeyReusedError,
	InvalidStateError,
	NotFoundError,
	PayloadMismatchError,
	TypeMismatchError,
	ValidationError,
	describeThrown,
} from './errors';
import { assertValidWorkflowId } from './ids';
import type { IndexEntry } from './index-entry';
import { assertEventBufferRoom, assertValidIdempotencyKey, eventDigest, type SendEventOptions } from './event-keys';
import { assertJsonDepth, canonicalJson, fromStoredJson, toStoredJson } from './json';
import { MAX_EVENT_KEYS } from './limits';
import type { Registry, ResolvedEntry } from './registry';
import { validateWith } from './schema-validation';
import { AbortSignal_, SuspendSignal } from './signals';
import { StepContext } from './step-context';
import { statusView, stepPage } from './status-view';
import type { InstanceRow, InstanceStore, StepRow } from './store';
import { FINISHED_STATUSES, type StepPage, type WorkflowStatus, type WorkflowStatusInfo } from './types';

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
	yieldToEventLoop(): Promise<void>;
	/** Runs `fn` on a later macrotask, at least `ms` later. */
	defer(fn: () => void, ms?: number): void;
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
 */
export const WATCHDOG_MS = OUTBOX_GRACE_MS;
/** How long an index update waits for newer transitions to supersede it before it is sent. */
export const INDEX_COALESCE_MS = 20;

const RUNNABLE: readonly WorkflowStatus[] = ['created', 'running', 'sleeping', 'waiting'];

/** A create whose input passed every check: nothing is stored until `commitCreate`. */
export interface PreparedCreate {
	id: string;
	type: string;
	payloadJson: string | null;
}

/** Checks a create's id, type and payload (the type's schema) without touching storage. */
export async function prepareCreate(registry: Registry, id: string, type: string, payloadInput: unknown): Promise<PreparedCreate> {
	assertValidWorkflowId(id);
	const entry = registry.get(type);
	assertJsonDepth(payloadInput, 'payload');
	const payload = await validateWith(entry.workflow.payload, payloadInput, ErrorCode.InvalidPayload, `payload for workflow type "${type}"`);
	return { id, type, payloadJson: toStoredJson(payload, 'payload') };
}

export interface CreateResult {
	id: string;
	type: string;
	status: WorkflowStatus;
	created: boolean;
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

	constructor(private readonly host: EngineHost) {
		this.row = host.store.readInstance();
	}

	get exists(): boolean {
		return this.row !== undefined;
	}

	async create(id: string, type: string, payloadInput: unknown): Promise<CreateResult> {
		assertValidWorkflowId(id);
		this.host.registry.get(type);
		if (this.row) this.assertSameType(type);
		return this.commitCreate(await prepareCreate(this.host.registry, id, type, payloadInput));
	}

	/** Stores an instance whose input `prepareCreate` has already checked. */
	commitCreate({ id, type, payloadJson }: PreparedCreate): CreateResult {
		// An existing id (or a concurrent create that won while the schema validated).
		if (this.row) return this.existing(type, payloadJson);
		const now = this.host.now();
		this.transition({
			id, type, status: 'created', payload: payloadJson, output: null, errorName: null, errorMessage: null,
			createdAt: now, updatedAt: now, version: 0, generation: 0,
		});
		// Start the run on the next macrotask: the create answer then leaves as soon as the
		// instance row is durable, instead of waiting for the first pass's writes too.
		this.starting = new Promise<void>((resolve) =>
			this.host.defer(() => {
				this.starting = undefined;
				this.kick();
				resolve();
			}),
		);
		return { id, type, status: 'created', created: true };
	}

	/** The instance's status, bounded in size (see `statusView`). */
	status(): WorkflowStatusInfo {
		return statusView(this.require(), this.host.store);
	}

	/** One page of the step history, every step with its result. */
	steps(options: { cursor?: string | null; limit?: number } = {}): StepPage {
		this.require();
		return stepPage(this.host.store, options);
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
		const payload = await validateWith(events[name], payloadInput, ErrorCode.InvalidEventPayload, `payload for event "${name}"`);
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
		assertEventBufferRoom(this.host.store, json, current.id);
		const now = this.host.now();
		this.host.store.transaction(() => {
			this.host.store.appendEvent(name, json, now);
			if (key !== undefined) this.host.store.writeEventKey({ key, name, digest: digest! }, now, MAX_EVENT_KEYS);
		});
		if (current.status !== 'paused') this.kick();
	}

	private assertAcceptsEvents(row: InstanceRow): void {
		if (FINISHED_STATUSES.includes(row.status)) {
			throw new InvalidStateError(`workflow "${row.id}" is ${row.status} and accepts no more events`);
		}
	}

	pause(): WorkflowStatus {
		const row = this.require();
		if (!RUNNABLE.includes(row.status)) throw new InvalidStateError(`cannot pause workflow "${row.id}": it is ${row.status}`);
		this.transition({ ...row, status: 'paused' });
		return 'paused';
	}

	resume(): WorkflowStatus {
		const row = this.require();
		if (row.status !== 'paused') throw new InvalidStateError(`cannot resume workflow "${row.id}": it is ${row.status}, not paused`);
		this.transition({ ...row, status: 'running' });
		this.kick();
		return 'running';
	}

	terminate(): WorkflowStatus {
		const row = this.require();
		if (FINISHED_STATUSES.includes(row.status)) throw new InvalidStateError(`cannot terminate workflow "${row.id}": it is already ${row.status}`);
		this.host.store.transaction(() => {
			this.host.store.deleteAllWakeups();
			this.transition({ ...row, status: 'terminated' });
		});
		return 'terminated';
	}

	restart(): WorkflowStatus {
		const row = this.require();
		if (!FINISHED_STATUSES.includes(row.status)) {
			throw new InvalidStateError(`cannot restart workflow "${row.id}": it is ${row.status}; only completed, errored or terminated workflows restart`);
		}
		this.host.store.transaction(() => {
			this.host.store.deleteSteps();
			this.host.store.deleteAllEvents();
			this.host.store.deleteAllWakeups();
			this.transition({ ...row, status: 'created', output: null, errorName: null, errorMessage: null, generation: row.generation + 1 });
		});
		this.kick();
		return 'created';
	}

	/** The alarm: due wake-ups are cleared, the index outbox retried, the loop resumed. */
	alarm(): void {
		const now = this.host.now();
		this.host.store.deleteWakeupsDue(now);
		const outbox = this.host.store.readOutbox();
		if (outbox && outbox.nextAttemptAt <= now) this.deliverIndex();
		if (this.row && RUNNABLE.includes(this.row.status)) this.kick();
		else this.rearm();
	}

	/** Resolves once the replay loop (and, unless `index` is false, index delivery) has nothing left to do. */
	async idle(options: { index?: boolean } = {}): Promise<void> {
		const index = options.index ?? true;
		for (;;) {
			const pending = this.starting ?? this.loop ?? (index ? this.delivering : undefined);
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
				await this.pass();
			} while (this.rerun);
		} finally {
			// Cleared in the same turn as the last `rerun` check, so no kick is lost in between.
			this.loop = undefined;
		}
		this.rearm();
	}

	/** One replay pass: `run()` from the top, completed steps answered from storage. */
	private async pass(): Promise<void> {
		const start = this.row;
		if (!start || !RUNNABLE.includes(start.status)) return;
		const entry = this.entryOf(start);
		const generation = start.generation;
		this.host.ensureAlarmBy(this.host.now() + WATCHDOG_MS);
		if (start.status !== 'running') this.transition({ ...start, status: 'running' });

		const rows = new Map<string, StepRow>();
		for (const row of this.host.store.readSteps()) rows.set(row.key, row);
		const step = new StepContext(this.host.store, rows, entry, {
			now: () => this.host.now(),
			yieldToEventLoop: () => this.host.yieldToEventLoop(),
			checkBoundary: () => {
				const row = this.row!;
				if (row.generation !== generation) throw new AbortSignal_('restarted');
				if (row.status === 'terminated') throw new AbortSignal_('terminated');
				if (row.status === 'paused') throw new SuspendSignal('paused');
			},
		});

		let outcome: { ok: true; output: unknown } | { ok: false; error: unknown };
		try {
			const workflow = new entry.workflow({ id: start.id, type: start.type, env: this.host.env });
			outcome = { ok: true, output: await workflow.run(step, fromStoredJson(start.payload)) };
		} catch (error) {
			outcome = { ok: false, error };
		}

		const now = this.row!;
		if (now.generation !== generation || !['running', 'paused'].includes(now.status)) return;
		const signal = step.signal;
		if (step.fatal) {
			this.fail(now, step.fatal);
		} else if (signal instanceof SuspendSignal) {
			if (now.status === 'running') this.transition({ ...now, status: signal.status });
		} else if (signal instanceof AbortSignal_) {
			return;
		} else if (outcome.ok) {
			let output: string | null;
			try {
				output = toStoredJson(outcome.output, 'workflow output');
			} catch (error) {
				this.fail(now, error);
				return;
			}
			this.transition({ ...now, status: 'completed', output });
		} else {
			this.fail(now, outcome.error);
		}
	}

	private fail(row: InstanceRow, error: unknown): void {
		const { name, message } = describeThrown(error);
		this.transition({ ...row, status: 'errored', errorName: name, errorMessage: message });
	}

	/**
	 * Every status change: the instance row and its pending index update are
	 * written together, so the index can lag but never miss a transition.
	 */
	private transition(next: InstanceRow): void {
		const now = Math.max(this.host.now(), next.updatedAt);
		const row: InstanceRow = { ...next, updatedAt: now, version: next.version + 1 };
		this.host.store.transaction(() => {
			// A finished instance never consumes its buffered events: they go, and are counted.
			if (FINISHED_STATUSES.includes(row.status)) this.host.store.dropEvents();
			this.host.store.writeInstance(row);
			this.host.store.writeOutbox({
				entry: { id: row.id, type: row.type, status: row.status, createdAt: row.createdAt, updatedAt: row.updatedAt, version: row.version },
				attempts: 0,
				nextAttemptAt: now + OUTBOX_GRACE_MS,
			});
		});
		this.row = row;
		this.host.ensureAlarmBy(now + OUTBOX_GRACE_MS);
		this.deliverIndex();
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
					await this.host.sendIndexEntry(pending.entry);
					this.host.store.ackOutbox(pending.entry.version);
				} catch {
					const attempts = pending.attempts + 1;
					this.host.store.deferOutbox(pending.entry.version, attempts, this.host.now() + outboxBackoffMs(attempts));
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

	/** Points the alarm at the earliest wake-up or outbox retry. */
	private rearm(): void {
		const wake = this.host.store.earliestWakeup();
		const outbox = this.host.store.readOutbox()?.nextAttemptAt;
		const paused = this.row?.status === 'paused';
		const watchdog = this.loop !== undefined && this.row?.status === 'running' ? this.host.now() + WATCHDOG_MS : undefined;
		const candidates = [paused ? undefined : wake, outbox, watchdog].filter((t): t is number => t !== undefined);
		this.host.setAlarm(candidates.length ? Math.min(...candidates) : undefined);
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


	private require(): InstanceRow {
		if (!this.row) throw new NotFoundError('no such workflow instance');
		return this.row;
	}

	private entryOf(row: InstanceRow): ResolvedEntry {
		return this.host.registry.get(row.type);
	}
}
