import { isTransient, readChildRef, type ParentRef } from '../../children/child-workflows';
import { stepRowsWithSmallResults } from '../../steps/step-rows';
import { InvalidStateError } from '../../support/errors';
import { transplantFromSteps, transplantOf, type ChildTransplant, type StoredInlineRequest, type TransplantHeader } from '../../children/transplant';
import { concurrencyOf } from '../../limiter/concurrency';
import { FINISHED_STATUSES } from '../../support/statuses';
import type { InstanceRow, StepRow } from '../../storage/store';
import { SingleFlight } from '../../support/single-flight';
import { describeThrown } from '../../support/thrown-value';
import { fromStoredJson, toStoredJson } from '../../support/json';
import { InlineChildRun, MAX_INLINE_RUNS, terminatedTransplant, transplantView } from '../inline-child';
import type { InlineRequest } from '../../steps/inline-run';
import type { InstanceEngine } from '../instance-engine';
import type { InstancePart, PartKernel } from '../part';
import type { InlineChildHooks } from '../../steps/pass-hooks';
import { INDEX_COALESCE_MS, OUTBOX_GRACE_MS, WATCHDOG_MS, outboxBackoffMs } from '../../support/timing';

/** How long `publishNow` waits for a child to be published, and how often it looks. */
const PUBLISH_WAIT_MS = 5_000;
const PUBLISH_POLL_MS = 5;

/**
 * An inline child's header as its parent keeps it: the transplant's, the parent's step that invoked
 * it, and the finished run's steps not kept in rows of their own (transplant.ts `transplantOf`).
 */
type StoredHeader = TransplantHeader & { parent: ParentRef; steps?: StepRow[] };

/**
 * The children this instance runs inline (inline-child.ts) and keeps until each is published to
 * its own object. A `step.invoke` asks whether its child may run here and runs it; the rows the
 * run writes stay here (a first-write table: an instance that never runs one has none). A
 * finished child is published from here, in the background and retried from the alarm with
 * backoff (its parent's step has completed already); a handed-over one by its invoke, which
 * waits for it as for any child. When the parent is terminated (or restarts) while a child runs
 * here, the child ends terminated and is published so (`duringTransition`).
 */
export class InlineChildren implements InstancePart, InlineChildHooks {
	private readonly publishing: SingleFlight;
	/** The earliest publishing due (undefined: none), as this part knows it; read from storage once. */
	private nextAt: number | undefined | null = null;
	/** Failed publishings per child since this engine started (their backoff). */
	private readonly attempts = new Map<string, number>();
	/** Finished children this engine kept and has not tried to publish yet: published before their row's backstop time. */
	private readonly fresh = new Set<string>();
	/** The runs under way in this isolate, by child id (their engines answer reads of the child). */
	private readonly running = new Map<string, InlineChildRun>();
	/** Set by a transition that ended children with their parent: they are published after it. */
	private endedWithParent = false;

	constructor(private readonly k: PartKernel) {
		this.publishing = new SingleFlight({
			background: (flight) => k.host.background(flight),
			// After the parent's pass has gone on: the child's new object must not take the thread from it
			// (locally every object shares one), and children invoked one after another publish in one round.
			before: () => new Promise<void>((resolve) => k.host.defer(resolve, INDEX_COALESCE_MS)),
			round: () => this.publishDue(),
			after: () => k.rearm(),
		});
	}

	get inFlight(): Promise<void> | undefined {
		return this.publishing.inFlight;
	}

	/** Whether as many children run here now as may at once (`MAX_INLINE_RUNS`): the next one starts in its own object. */
	busy(): boolean {
		return this.running.size >= MAX_INLINE_RUNS;
	}

	/** Whether `step.invoke` may run a child of `type` here: the host allows it, and the type has no concurrency limit and did not opt out. */
	eligible(type: string): boolean {
		const host = this.k.host;
		if (!host.inlineChildren || !host.children || !host.registry.has(type)) return false;
		const workflow = host.registry.get(type).workflow as { inline?: unknown };
		return workflow.inline !== false && concurrencyOf(host.registry, type) === undefined;
	}

	/** A run of the child here, each step row it writes kept in this instance's storage as it is written. */
	run(request: InlineRequest, beforeFirstKeep?: () => void): InlineChildRun {
		// The run's first step row carries its request (transplant.ts `StoredInlineRequest`), in every write of it.
		let first: string | undefined;
		const stored: StoredInlineRequest = { type: request.type, payload: request.payload };
		const run = new InlineChildRun(this.k.host, request, (row) => {
			// The invoke's start, written before the first row of its child: a row here is always found through its invoke.
			if (first === undefined) beforeFirstKeep?.();
			this.keepStep(request.id, row, (first ??= row.key) === row.key ? stored : undefined);
		}, () => {
			if (this.running.get(request.id) === run) this.running.delete(request.id);
		});
		this.running.set(request.id, run);
		return run;
	}

	/**
	 * The child as this instance has it while it is not published, for reads by its id: its run's
	 * engine while it runs here, else an engine over what its run left; undefined when there is none.
	 */
	view(childId: string): InstanceEngine | undefined {
		const running = this.running.get(childId);
		if (running) return running.view;
		const transplant = this.stored(childId).transplant ?? this.lost(childId)?.transplant;
		return transplant ? transplantView(transplant, this.k.host.registry, () => this.k.host.now()) : undefined;
	}

	/**
	 * A run this isolate no longer has and that left no header (the isolate died mid-run): rebuilt
	 * from its step rows and the request its first one carries, as its next pass would hand it over.
	 */
	private lost(childId: string): { transplant: ChildTransplant; request: InlineRequest } | undefined {
		const row = this.k.row;
		if (!row || this.running.has(childId)) return undefined;
		const { transplant, steps, request: stored } = this.stored(childId);
		if (transplant || !stored || steps.length === 0) return undefined;
		const step = this.inlineInvokes().get(childId);
		if (step === undefined) return undefined;
		const request: InlineRequest = { id: childId, type: stored.type, payload: stored.payload, parent: { id: row.id, type: row.type, step } };
		return { transplant: this.fromSteps(request, steps), request };
	}

	/**
	 * This instance's unfinished invokes of children it runs inline: the child's id, and the invoking
	 * step's name (`cancelled` too: a terminate's transaction cancels them before the children end).
	 */
	private inlineInvokes(): Map<string, string> {
		const invokes = new Map<string, string>();
		for (const step of stepRowsWithSmallResults(this.k.host.store)) {
			if (step.kind !== 'child' || step.result === null || !['running', 'retrying', 'cancelled'].includes(step.status)) continue;
			try {
				const ref = readChildRef(step);
				if (ref?.inline) invokes.set(ref.childId, step.name);
			} catch {
				// Not a ref: no child of this step.
			}
		}
		return invokes;
	}

	/** What an earlier run of the child left here: its transplant once the run ended, else only the steps it wrote (and its request). */
	stored(childId: string): ReturnType<typeof transplantOf> {
		return transplantOf(this.k.host.store.readInlineRows(childId));
	}

	/**
	 * The run ended (inside the caller's transaction): its header is kept; a finished child's is
	 * published from here, starting once the transaction is stored (`publishSoon`).
	 */
	keep(childId: string, parent: ParentRef, header: TransplantHeader, finished: boolean, unwritten?: readonly StepRow[]): void {
		const stored: StoredHeader = { ...header, parent, ...(unwritten && unwritten.length > 0 ? { steps: [...unwritten] } : {}) };
		// Published from memory right after (`publishSoon`); the alarm is the backstop should this isolate die first.
		const publishAt = finished ? this.k.host.now() + OUTBOX_GRACE_MS : null;
		this.k.host.store.writeInlineRow(childId, { key: '', body: JSON.stringify(stored), result: null, publishAt });
		if (publishAt === null) return;
		this.fresh.add(childId);
		if (this.nextAt !== null && (this.nextAt === undefined || publishAt < this.nextAt)) this.nextAt = publishAt;
	}

	/** The transplant of a child whose run was cut short (this instance's isolate died), from the steps it wrote. */
	fromSteps(request: InlineRequest, steps: readonly StepRow[]): ChildTransplant {
		const { id, type, payload, parent } = request;
		const codeVersion = this.k.host.registry.get(type).version;
		return transplantFromSteps({ id, type, payloadJson: toStoredJson(payload, 'payload'), parentId: parent.id, parent, codeVersion }, steps, this.k.host.now());
	}

	/**
	 * Publishes the child now, for someone outside who wants it (an event, a control sent to its id):
	 * a run under way takes no new step and hands over once its attempts in flight settled; a
	 * finished one is published at once. Resolves true once the child's object holds it (or this
	 * instance no longer does), false when this instance never held it; throws INVALID_STATE when
	 * the run still holds it after `PUBLISH_WAIT_MS` (a long step in flight: try again).
	 */
	async publishNow(childId: string): Promise<boolean> {
		const k = this.k;
		if (!this.running.has(childId) && k.host.store.readInlineRows(childId).length === 0) return false;
		const deadline = k.host.now() + PUBLISH_WAIT_MS;
		let kicked = false;
		for (;;) {
			const running = this.running.get(childId);
			running?.handOverSoon();
			const rows = k.host.store.readInlineRows(childId);
			if (!running && rows.length === 0) return true;
			const header = rows.find((row) => row.key === '');
			if (!running && header?.publishAt !== null && header?.publishAt !== undefined) {
				this.fresh.add(childId);
				this.publishSoon();
			}
			// Rows of a run this isolate does not have (it died mid-run): the invoke's next pass, now, hands the child over.
			if (!running && header === undefined && !kicked) {
				kicked = true;
				this.k.replay.kick();
			}
			if (k.host.now() >= deadline) throw new InvalidStateError(`workflow "${childId}" is still running inside its parent "${k.row?.id}" (a step of it is under way); try again`);
			await new Promise<void>((resolve) => k.host.defer(resolve, PUBLISH_POLL_MS));
		}
	}

	/** The child is published (its object holds it now): its rows here go. */
	forget(childId: string): void {
		this.k.host.store.deleteInline(childId);
	}

	/** Publishes the finished children now, off the critical path. */
	publishSoon(): void {
		this.publishing.request();
	}

	async publishPending(): Promise<boolean> {
		const pending = this.k.host.store.inlinePublishes();
		if (pending.length === 0) return true;
		for (const { childId } of pending) this.fresh.add(childId);
		this.publishSoon();
		while (this.publishing.inFlight) await this.publishing.inFlight;
		return this.k.host.store.inlinePublishes().length === 0;
	}

	/** The earliest publishing due; while a round is under way, the watchdog's time (the round re-arms when it ends). */
	dueAt(now: number): number | undefined {
		if (this.nextAt === null) this.nextAt = this.earliest();
		if (this.nextAt === undefined) return undefined;
		return this.publishing.inFlight ? Math.max(this.nextAt, now + WATCHDOG_MS) : this.nextAt;
	}

	onAlarm(now: number): boolean {
		const due = this.dueAt(now);
		if (due !== undefined && due <= now) this.publishSoon();
		return false;
	}

	/**
	 * A finished (terminated) or restarted parent: a child still running here ends with it,
	 * terminated, and is published like a finished child (a client may have read it as running:
	 * it must not vanish); so does, at a terminate, a run this isolate lost mid-way (a crash), rebuilt
	 * from its rows. Inside the parent's transaction: the child's final rows are durable with the
	 * parent's status, and the alarm publishes them should this isolate die first.
	 */
	duringTransition(row: InstanceRow): void {
		const previous = this.k.row;
		const ended = FINISHED_STATUSES.includes(row.status) && !(previous && FINISHED_STATUSES.includes(previous.status));
		if (!ended && !(previous !== undefined && row.generation !== previous.generation)) return;
		const registry = this.k.host.registry;
		const now = () => this.k.host.now();
		// The runs under way here, and those this isolate lost (it died mid-run) that a client could read through this instance.
		const cut = [...this.running.values()].map((run) => run.endWithParent());
		// Only a terminate reads the steps for them: every other end of a run has no invoke unfinished.
		if (row.status === 'terminated') {
			for (const childId of this.inlineInvokes().keys()) {
				const lost = this.lost(childId);
				if (lost) cut.push({ ...terminatedTransplant(lost.transplant, registry, now), request: lost.request });
			}
		}
		this.k.host.store.deleteUnpublishedInline();
		for (const end of cut) {
			if (!end) continue;
			// Written again after the delete above, which takes every unpublished child's rows.
			for (const step of end.steps) this.keepStep(end.request.id, step);
			this.keep(end.request.id, end.request.parent, end.header, true);
			this.endedWithParent = true;
		}
	}

	afterTransition(): void {
		if (!this.endedWithParent) return;
		this.endedWithParent = false;
		this.publishSoon();
	}

	/** A step row of a child run here, kept in this instance's storage (its result in a column of its own; the run's request with its first). */
	private keepStep(childId: string, { result, ...row }: StepRow, inlineRequest?: StoredInlineRequest): void {
		this.k.host.store.writeInlineRow(childId, { key: row.key, body: JSON.stringify(inlineRequest ? { ...row, inlineRequest } : row), result, publishAt: null });
	}

	private earliest(): number | undefined {
		let at: number | undefined;
		for (const due of this.k.host.store.inlinePublishes()) if (at === undefined || due.publishAt < at) at = due.publishAt;
		return at;
	}

	/** Sends every finished child that is due to its own object (an idempotent create with its transplant). */
	private async publishDue(): Promise<void> {
		const k = this.k;
		const port = k.host.children;
		if (!port || k.gone) return;
		const now = k.host.now();
		for (const { childId, publishAt } of k.host.store.inlinePublishes()) {
			if (publishAt > now && !this.fresh.has(childId)) continue;
			this.fresh.delete(childId);
			const rows = k.host.store.readInlineRows(childId);
			const header = rows.find((row) => row.key === '');
			if (!header) continue;
			const { parent } = JSON.parse(header.body) as StoredHeader;
			const { transplant } = transplantOf(rows);
			const { parent: _parent, ...sent } = transplant as ChildTransplant & { parent?: ParentRef };
			try {
				await port.start({ id: childId, type: sent.row.type, payload: fromStoredJson(sent.row.payload), parent, transplant: sent });
				if (k.gone) return;
				k.host.store.deleteInline(childId);
				this.attempts.delete(childId);
			} catch (error) {
				if (k.gone) return;
				const attempts = (this.attempts.get(childId) ?? 0) + 1;
				const transient = isTransient(error);
				k.host.log?.({
					severity: transient ? 'warn' : 'error', event: 'child.publish_failed', instanceId: k.row?.id ?? '(none)', type: k.row?.type ?? '(none)',
					childId, attempt: attempts, willRetry: transient, error: describeThrown(error),
				});
				// A refusal stays one (the child's type or payload no longer passes its checks): the child never appears.
				if (!transient) {
					k.host.store.deleteInline(childId);
					this.attempts.delete(childId);
				} else {
					this.attempts.set(childId, attempts);
					k.host.store.writeInlineRow(childId, { ...header, publishAt: now + outboxBackoffMs(attempts) });
				}
			}
		}
		this.nextAt = this.earliest();
	}
}
