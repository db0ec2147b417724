import type { HistoryKind, HistoryRow, NewHistoryRow } from '../history/history';
import { takeWithinBytes } from '../history/history';
import { utf8Bytes } from '../support/json';
import { SMALL_RESULT_BYTES } from '../support/limits';
import type { CutPasses, DeletionRow, EventKeyRow, EventRow, HistoryRange, InlineRow, InstanceRow, InstanceStore, OutboxRow, StepCount, StepMeta, StepRange, StepRef, StepRow } from './store';
import type { StepKind } from '../support/step-kinds';
import { UNFINISHED_STEP_STATUSES, type StepStatus } from '../support/statuses';

/** An in-memory `InstanceStore` so the engine core can be tested without workerd. */
export class MemoryInstanceStore implements InstanceStore {
	instance: InstanceRow | undefined;
	steps = new Map<string, StepRow>();
	wakeups = new Map<string, number>();
	events: EventRow[] = [];
	outbox: OutboxRow | undefined;
	eventKeys = new Map<string, EventKeyRow>();
	dropped = 0;
	history: HistoryRow[] = [];
	deletion: DeletionRow | undefined;
	/** Inline children's rows: child id, then key ('' the header). */
	inline = new Map<string, Map<string, InlineRow>>();
	private nextEventSeq = 1;
	/** At least the highest seq a step row has had (a rolled-back transaction or a deletion may leave it higher). */
	private highestStepSeq = 0;

	transaction<T>(fn: () => T): T {
		const snapshot = structuredClone({
			instance: this.instance,
			steps: this.steps,
			wakeups: this.wakeups,
			events: this.events,
			outbox: this.outbox,
			eventKeys: this.eventKeys,
			dropped: this.dropped,
			deletion: this.deletion,
			inline: this.inline,
		});
		// The history only grows: undoing a transaction cuts it back to its length.
		const historyLength = this.history.length;
		try {
			return fn();
		} catch (error) {
			Object.assign(this, snapshot);
			this.history.length = historyLength;
			throw error;
		}
	}

	readInstance() {
		return this.instance && { ...this.instance };
	}
	writeInstance(row: InstanceRow) {
		this.instance = { ...row };
	}
	readSteps() {
		return [...this.steps.values()].map((r) => ({ ...r })).sort((a, b) => a.seq - b.seq);
	}
	writeStep(row: StepRow) {
		// As in SQLite, where a row is its seq (drizzle/0016): a step keeps the seq its first write gave it,
		// and a seq holds one step. A new step above every seq so far (the usual one) needs no search.
		const existing = this.steps.get(row.key);
		if (existing ? existing.seq !== row.seq : row.seq <= this.highestStepSeq && [...this.steps.values()].some((other) => other.seq === row.seq)) {
			throw new Error(`step "${row.key}" was given seq ${row.seq}, which holds another step's row`);
		}
		this.highestStepSeq = Math.max(this.highestStepSeq, row.seq);
		this.steps.set(row.key, { ...row });
	}
	deleteSteps() {
		this.steps.clear();
	}
	keepStepsBefore(seq: number) {
		for (const [key, row] of this.steps) if (row.kind === 'rollback' || row.seq >= seq) this.steps.delete(key);
	}
	readStepMeta(range: StepRange): StepMeta[] {
		const all = this.readSteps().map(({ result, ...meta }): StepMeta => {
			const resultBytes = utf8Bytes(result);
			return { ...meta, resultBytes, ...(resultBytes <= SMALL_RESULT_BYTES ? { smallResult: result } : {}) };
		});
		return 'last' in range ? all.slice(Math.max(0, all.length - range.last)) : all.filter((s) => s.seq > range.afterSeq).slice(0, range.limit);
	}
	readStepResults(steps: readonly StepRef[]) {
		const results = new Map<string, string | null>();
		for (const { key, seq } of steps) {
			const row = this.steps.get(key);
			if (row && row.seq === seq) results.set(key, row.result);
		}
		return results;
	}

	readStep(key: string) {
		const row = this.steps.get(key);
		return row ? { ...row } : undefined;
	}
	readStepsOfKind(kind: StepKind, status?: StepStatus) {
		return [...this.steps.values()]
			.filter((row) => row.kind === kind && (status === undefined || row.status === status))
			.sort((a, b) => a.seq - b.seq)
			.map((row) => ({ ...row }));
	}

	countSteps() {
		const counts = new Map<string, StepCount>();
		for (const { kind, status } of this.steps.values()) {
			const count = counts.get(`${kind} ${status}`);
			if (count) count.n++;
			else counts.set(`${kind} ${status}`, { kind, status, n: 1 });
		}
		return [...counts.values()];
	}
	setWakeup(key: string, at: number) {
		this.wakeups.set(key, at);
	}
	deleteWakeup(key: string) {
		this.wakeups.delete(key);
	}
	takeWakeup(key: string) {
		return this.wakeups.delete(key);
	}
	deleteWakeupsDue(now: number, spare: ReadonlySet<string>) {
		for (const [key, at] of this.wakeups) if (at <= now && !spare.has(key)) this.wakeups.delete(key);
	}
	cancelUnfinishedSteps(at: number) {
		for (const [key, row] of this.steps) {
			if (UNFINISHED_STEP_STATUSES.includes(row.status)) this.steps.set(key, { ...row, status: 'cancelled', finishedAt: at, wakeAt: null });
		}
	}
	deleteAllWakeups() {
		this.wakeups.clear();
	}
	earliestWakeup() {
		let min: number | undefined;
		for (const at of this.wakeups.values()) if (min === undefined || at < min) min = at;
		return min;
	}
	appendEvent(name: string, payload: string | null, receivedAt: number) {
		this.events.push({ seq: this.nextEventSeq++, name, payload, receivedAt });
	}
	oldestEvent(name: string) {
		return this.events.find((e) => e.name === name);
	}
	deleteEvent(seq: number) {
		this.events = this.events.filter((e) => e.seq !== seq);
	}
	deleteAllEvents() {
		this.events = [];
	}
	eventBuffer(name?: string) {
		const events = name === undefined ? this.events : this.events.filter((e) => e.name === name);
		return { count: events.length, bytes: events.reduce((sum, e) => sum + utf8Bytes(e.payload), 0) };
	}
	dropEvents() {
		const count = this.events.length;
		this.events = [];
		this.dropped += count;
		return count;
	}
	eventCounts() {
		return { buffered: this.events.length, dropped: this.dropped };
	}
	readEventKey(key: string) {
		const row = this.eventKeys.get(key);
		return row && { ...row };
	}
	writeEventKey(row: EventKeyRow, _at: number, keep: number) {
		this.eventKeys.delete(row.key);
		this.eventKeys.set(row.key, { ...row });
		for (const key of this.eventKeys.keys()) {
			if (this.eventKeys.size <= keep) break;
			this.eventKeys.delete(key);
		}
	}
	writeOutbox(row: OutboxRow) {
		this.outbox = { ...structuredClone(row), backloggedSince: this.outbox?.backloggedSince ?? null };
	}
	readOutbox() {
		return this.outbox && structuredClone(this.outbox);
	}
	ackOutbox(version: number) {
		if (this.outbox?.entry.version === version) this.outbox = undefined;
	}
	deferOutbox(version: number, attempts: number, nextAttemptAt: number) {
		if (this.outbox?.entry.version === version) this.outbox = { ...this.outbox, attempts, nextAttemptAt };
	}
	markOutboxBacklogged(since: number | null) {
		if (this.outbox) this.outbox = { ...this.outbox, backloggedSince: since };
	}
	writeStepWithRecord(row: StepRow, record: NewHistoryRow) {
		this.writeStep(row);
		this.appendHistory(record);
	}
	insertStep(row: StepRow, records: readonly NewHistoryRow[]) {
		if (this.steps.has(row.key)) throw new Error(`step "${row.key}" already has a row`);
		this.writeStep(row);
		for (const record of records) this.appendHistory(record);
	}
	appendHistory(row: NewHistoryRow) {
		this.history.push({ ...row, seq: (this.history.at(-1)?.seq ?? 0) + 1 });
	}
	readHistoryMeta(range: HistoryRange) {
		return this.historyRange(range).map((r) => ({ seq: r.seq, bytes: utf8Bytes(r.value) + utf8Bytes(r.detail) }));
	}
	readHistory(range: HistoryRange) {
		return this.historyRange(range).map((r) => ({ ...r }));
	}
	readHistoryOfKinds(query: { afterSeq: number; limit: number; kinds: readonly HistoryKind[]; maxBytes?: number }) {
		return takeWithinBytes(
			this.history.filter((r) => r.seq > query.afterSeq && query.kinds.includes(r.kind)).slice(0, query.limit),
			query.maxBytes,
		).map((r) => ({ ...r }));
	}
	lastStreamMessageIndex(generation: number) {
		for (let i = this.history.length - 1; i >= 0; i--) {
			const r = this.history[i]!;
			if (r.generation === generation && r.kind === 'stream.message') return r.attempt ?? 0;
		}
		return 0;
	}
	historyLastSeq() {
		return this.history.at(-1)?.seq ?? 0;
	}
	historySize(afterSeq: number) {
		let bytes = 0;
		let lastSeq = afterSeq;
		for (const r of this.history) {
			if (r.seq <= afterSeq) continue;
			bytes += utf8Bytes(r.value) + utf8Bytes(r.detail);
			lastSeq = r.seq;
		}
		return { bytes, lastSeq };
	}
	private historyRange({ generation, afterSeq, limit }: HistoryRange): HistoryRow[] {
		return this.history.filter((r) => r.generation === generation && r.seq > afterSeq).slice(0, limit);
	}
	private cutPasses: CutPasses | undefined;
	readCutPasses() {
		return this.cutPasses ? { ...this.cutPasses } : undefined;
	}
	writeCutPasses(value: CutPasses | undefined) {
		this.cutPasses = value ? { ...value } : undefined;
	}
	readDeletion() {
		return this.deletion && { ...this.deletion };
	}
	writeDeletion(row: DeletionRow) {
		this.deletion = { ...row };
	}
	writeInlineRow(childId: string, row: InlineRow) {
		let rows = this.inline.get(childId);
		if (!rows) this.inline.set(childId, (rows = new Map()));
		rows.set(row.key, { ...row });
	}
	readInlineRows(childId: string) {
		return [...(this.inline.get(childId)?.values() ?? [])].map((row) => ({ ...row }));
	}
	deleteInline(childId: string) {
		this.inline.delete(childId);
	}
	inlinePublishes() {
		const due: { childId: string; publishAt: number }[] = [];
		for (const [childId, rows] of this.inline) {
			const publishAt = rows.get('')?.publishAt;
			if (publishAt !== undefined && publishAt !== null) due.push({ childId, publishAt });
		}
		return due;
	}
	deleteUnpublishedInline() {
		for (const [childId, rows] of this.inline) if ((rows.get('')?.publishAt ?? null) === null) this.inline.delete(childId);
	}
}
