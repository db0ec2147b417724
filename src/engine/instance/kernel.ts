import { NotFoundError } from '../support/errors';
import { historyRow, type HistoryRecord } from '../history/history';
import type { ResolvedEntry } from '../definition/registry';
import type { InstanceRow } from '../storage/store';
import { FINISHED_STATUSES } from '../support/statuses';
import type { EngineHost } from './engine-host';
import { isolatePassFailures } from './pass-failures';
import type { InstancePart, PartKernel } from './part';
import { ChildCascade } from './parts/child-cascade';
import { Deletion } from './parts/deletion';
import { IndexOutbox } from './parts/index-outbox';
import { ReplayLoop } from './parts/replay-loop';
import { Retention } from './parts/retention';
import { ConcurrencySlot } from './parts/concurrency-slot';
import { InlineChildren } from './parts/inline-children';
import { errorOf } from './row-views';
import { RUNNING_SHOWN_WITHIN_MS } from '../support/timing';

/**
 * The kernel of one instance: its row, `transition` (every status change) and the
 * alarm, armed at the earliest time any part is due. Everything else is a part
 * (see part.ts); the operations the Durable Object serves are in instance-engine.ts.
 */
export class InstanceKernel implements PartKernel {
	/** Mirrors the stored row so boundary checks cost no query. */
	row: InstanceRow | undefined;
	/** The storage is gone: this engine does nothing more (a new one serves the id). */
	gone = false;
	/**
	 * Bytes of history records appended since the row's running total (`historyBytes`
	 * through `historySeq`) was last written: a pass's steps add theirs here, and the next
	 * status change folds everything into the row. The history limit reads the sum.
	 */
	uncountedHistoryBytes = 0;
	/**
	 * The row is ahead of storage: a first pass's `running`, not written yet (`startRunning`). The next transition
	 * writes the row as it is, or a delivery of the index entry writes it first (`writeUnwritten`).
	 */
	private unwritten = false;
	/** When `startRunning` took the row ahead of storage. */
	private unwrittenSince = 0;

	readonly outbox: IndexOutbox;
	readonly slot: ConcurrencySlot;
	readonly deletion: Deletion;
	readonly replay: ReplayLoop;
	readonly children: ChildCascade;
	readonly retention: Retention;
	readonly inline: InlineChildren;
	/** In the order the alarm asks them (see `alarm`). */
	private readonly parts: readonly InstancePart[];

	constructor(readonly host: EngineHost) {
		this.row = host.store.readInstance();
		this.outbox = new IndexOutbox(this);
		this.slot = new ConcurrencySlot(this);
		this.deletion = new Deletion(this);
		this.replay = new ReplayLoop(this, host.passFailures ?? isolatePassFailures);
		this.children = new ChildCascade(this);
		this.retention = new Retention(this);
		this.inline = new InlineChildren(this);
		// The inline children's publishing never takes the alarm: it comes before the child cascade, which
		// takes every alarm while its retries are due, so that a child its terminated parent must publish
		// is not held back behind the cascade that waits for it (issue 49).
		this.parts = [this.outbox, this.slot, this.deletion, this.replay, this.inline, this.children, this.retention];
	}

	/** An instance lives here (not one being deleted, nor one deleted). */
	get exists(): boolean {
		return this.row !== undefined && !this.deletion.pending && !this.gone;
	}

	/** The row of an instance that exists; NOT_FOUND for one being deleted too (it answers from its archive, if any). */
	require(): InstanceRow {
		if (!this.row || this.deletion.pending || this.gone) throw new NotFoundError('no such workflow instance');
		return this.row;
	}

	entryOf(row: InstanceRow): ResolvedEntry {
		return this.host.registry.get(row.type);
	}

	/**
	 * Every status change: the instance row, its history record (if the change
	 * has one) and what the parts write with it (the pending index update, a slot
	 * release) are written together, so the index can lag but never miss a transition.
	 */
	transition(next: InstanceRow, record?: HistoryRecord): void {
		const now = Math.max(this.host.now(), next.updatedAt);
		this.write({ ...next, updatedAt: now, version: next.version + 1 }, now, record);
		this.logTransition(this.row!, record?.kind);
	}

	/**
	 * A created instance's first pass begins to write: `running`, in memory only. Nobody can tell it from storage
	 * until the index would show it: storage keeps `created`, which a restart of the object (a crash mid-pass) runs
	 * again as it runs `running` (a watchdog, a pass from the top), and a run that ends before its index entry is
	 * delivered goes from `created` to its outcome in one write (docs/decisions.md "The running status, written when
	 * someone could see it"). The next transition writes the row as it is; a delivery writes it first.
	 */
	startRunning(next: InstanceRow): void {
		const now = Math.max(this.host.now(), next.updatedAt);
		this.row = { ...next, updatedAt: now, version: next.version + 1 };
		this.unwritten = true;
		this.unwrittenSince = now;
		this.logTransition(this.row, undefined);
		// As a transition would: a delivery, which writes it first unless the pass ends before (`beforeDelivery`).
		this.outbox.deliver();
	}

	/** Writes the row this engine holds ahead of storage, with its index entry, as its transition would have. */
	writeUnwritten(): void {
		if (!this.unwritten || !this.row || this.gone) return;
		// Its time stays when it began running; its entry's retry is due from now.
		this.write(this.row, Math.max(this.host.now(), this.row.updatedAt), undefined);
	}

	/**
	 * Before a delivery: a `running` held in memory is written first, so the index never holds a version storage does
	 * not. The pass that holds it may end first (its outcome is then the entry, and `running` is never written): it is
	 * waited for until `RUNNING_SHOWN_WITHIN_MS` after it began.
	 */
	async beforeDelivery(): Promise<void> {
		if (!this.unwritten) return;
		const pass = this.replay.inFlight;
		const left = this.unwrittenSince + RUNNING_SHOWN_WITHIN_MS - this.host.now();
		if (pass && left > 0) {
			// A pass that ends first cancels the wait: no timer is left to keep the object awake for up to a second.
			const wait: { cancel?: () => void } = {};
			await Promise.race([pass, new Promise<void>((resolve) => (wait.cancel = this.host.defer(resolve, left) as (() => void) | undefined))]);
			wait.cancel?.();
		}
		this.writeUnwritten();
	}

	/** A transition's writes: the row, its record and what the parts write with it, together; then the parts' follow-ups. */
	private write(row: InstanceRow, now: number, record: HistoryRecord | undefined): void {
		const store = this.host.store;
		store.transaction(() => {
			// A finished instance never consumes its buffered events: they go, and are counted, recorded
			// before the terminal record, so a run's last record is always its outcome (docs/history-format.md).
			if (FINISHED_STATUSES.includes(row.status)) {
				const dropped = store.dropEvents();
				if (dropped > 0) store.appendHistory(historyRow({ kind: 'events.dropped', detail: { count: dropped } }, row.generation, now));
			}
			if (record) store.appendHistory(historyRow(record, row.generation, now));
			// The history's running total takes in the records since the last change (this one's too).
			const tail = store.historySize(row.historySeq ?? 0);
			row.historyBytes = (row.historyBytes ?? 0) + tail.bytes;
			row.historySeq = tail.lastSeq;
			store.writeInstance(row);
			for (const part of this.parts) part.duringTransition?.(row, now);
		});
		const previous = this.row;
		this.row = row;
		this.unwritten = false;
		this.uncountedHistoryBytes = 0;
		for (const part of this.parts) part.afterTransition?.(previous, row);
	}

	/**
	 * The alarm: every part is asked in order whether it takes it (the outbox and the slot
	 * retry what is due and pass it on; a deletion, the replay loop, the child cascade and
	 * the retention each take it); when none does, the alarm is armed again.
	 */
	alarm(): void {
		// No instance here (or its storage is gone): nothing to do.
		if (!this.row || this.gone) return;
		const now = this.host.now();
		for (const part of this.parts) if (part.onAlarm(now)) return;
		this.rearm();
	}

	/** Points the alarm at the earliest time a part is due (a wake-up, an outbox retry, the watchdog, a retention expiry, a deletion step). */
	rearm(): void {
		if (this.gone) return;
		const now = this.host.now();
		let next: number | undefined;
		let hold: number | undefined;
		for (const part of this.parts) {
			const due = part.dueAt(now);
			if (due !== undefined && (next === undefined || due < next)) next = due;
			const until = part.holdUntil?.();
			if (until !== undefined && (hold === undefined || until > hold)) hold = until;
		}
		// A hold still ahead is itself due (a pass is owed when it ends: a failed pass's retry, or the pass after passes cut
		// short again and again), even when nothing else is: a cut pass backing off after its sleep's wake-up or its event
		// was taken, with its entry delivered, had its alarm deleted here and stayed `sleeping` or `waiting` for good (found
		// from outside). A hold already past is not (its alarm would find nothing and re-arm at once, in a loop).
		const at = hold !== undefined && (next !== undefined || hold > now) ? Math.max(next ?? hold, hold) : next;
		// A finished instance its shard expires: whatever alarm is left fires once and finds nothing.
		if (at === undefined && this.retention.leavesAlarm) return;
		// So does a wait with nothing due, on a host that says so: its alarm finds nothing and writes nothing (EngineHost.leavesIdleAlarm).
		if (at === undefined && this.host.leavesIdleAlarm === true && this.row?.status === 'waiting') return;
		// A delivery or a pass in flight re-arms when it ends: until then an earlier alarm may stay
		// (it would only look early: its handler re-arms), which saves moving it twice at the end of
		// every short run, and moving the watchdog later when a delivery ends mid-pass (each
		// setAlarm is a row written: docs/decisions.md "Alarm writes of a run").
		if ((this.outbox.inFlight || this.replay.inFlight) && at !== undefined) this.host.ensureAlarmBy(at);
		else this.host.setAlarm(at);
	}

	/**
	 * The first work of the parts still under way; the deliveries to other objects (the index
	 * entry, the publishing of children that ran inline) only with `index`.
	 */
	inFlight(index: boolean): Promise<void> | undefined {
		for (const part of this.parts) {
			if ((part === this.outbox || part === this.inline) && !index) continue;
			if (part.inFlight) return part.inFlight;
		}
		return undefined;
	}

	/**
	 * One line per status change. Failures (errored, diverged) are `error`; operator
	 * actions (terminated, paused, resumed, restarted) are `info`; what a run does on its
	 * own (created, running, sleeping, waiting, and completing) is `debug`: a line per
	 * successful run is a log event per run in production (Workers Logs bills them) and
	 * ~1.6 ms of workerd's CPU per run under `wrangler dev` (docs/decisions.md "Logs"),
	 * and the index and the history record every change anyway.
	 */
	private logTransition(row: InstanceRow, change: HistoryRecord['kind'] | undefined): void {
		if (!this.host.log) return;
		const errored = row.status === 'errored' || row.status === 'diverged';
		const routine = change === undefined || change === 'workflow.created' || change === 'workflow.completed';
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
}
