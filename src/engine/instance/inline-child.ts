import type { ParentRef } from '../children/child-workflows';
import { transplantHeader, writeTransplantRows, type ChildTransplant, type TransplantHeader } from '../children/transplant';
import type { StepPage, WorkflowStatusInfo } from '../definition/types';
import type { StepKind } from '../support/step-kinds';
import { FINISHED_STATUSES } from '../support/statuses';
import type { Registry } from '../definition/registry';
import type { HistoryPage } from '../history/history';
import { ErrorCode, ValidationError } from '../support/errors';
import { MemoryInstanceStore } from '../storage/memory-store';
import type { StepRow } from '../storage/store';
import type { StepFunctionWrapper } from '../steps/step-function-wrapper';
import { utf8Bytes } from '../support/json';
import type { EngineHost } from './engine-host';
import { InstanceEngine } from './instance-engine';
import { INLINE_BUDGET, type InlineRequest, type InlineRun, type InlineRunEnd } from '../steps/inline-run';
import { PassFailures } from './pass-failures';

/**
 * Children one parent runs inline at once; the next ones of a fan-out start in their own objects,
 * which in production run on other machines (and an inline child's work shares its parent's
 * invocation: its CPU and subrequests).
 */
export const MAX_INLINE_RUNS = 4;
/** Steps, and bytes of their results, an inline run keeps in its parent at most: past either, its next step hands over. */
export const INLINE_MAX_STEPS = 100;
export const INLINE_MAX_RESULT_BYTES = 1 << 20;
/**
 * Step kinds an inline run never takes: each makes the child reachable from outside (a webhook's
 * URL) or the parent of another instance (a grandchild reports to the child's own object). The
 * child hands over before such a step writes anything, and takes it in its own object.
 */
const HANDED_OVER_KINDS: ReadonlySet<StepKind> = new Set(['webhook', 'child']);

/**
 * One child run inside its parent's object (`step.invoke` of a short child; docs/decisions.md
 * "Short children run inside their parent"): the child's own engine over an in-memory store,
 * in the parent's isolate, so the invoke costs no new object before it has its outcome. Every
 * step row the child writes is also kept in the parent's storage (`mirror`, in the same turn,
 * so it commits as the child's own write would), so a crash of the parent loses no finished
 * step: the invoke's next pass hands the child over with them. The run ends finished (the
 * parent's step completes; the child is published to its own object afterwards) or hands over
 * (published now; its pass goes on there): at a step kind it does not take, past its budget, or
 * when it would wait (a sleep, an event, a retry's delay). Nothing outside sees the child until
 * it is published: no index entry, no status by id.
 */
export class InlineChildRun implements InlineRun {
	private readonly store: MirroredStore;
	private readonly engine: InstanceEngine;
	/** Attempts of the child's steps under way (a hold waits for them: a step never runs twice at once). */
	private inFlight = 0;
	/** Attempts of the child's steps that awaited something (their function returned a promise): what its parent's invocation paid for. */
	awaitingAttempts = 0;
	private quiet: (() => void) | undefined;
	/** Set once a step was held: the run hands over once its attempts settled. */
	private held = false;
	private onHeld: (() => void) | undefined;
	private live = true;
	/** Set by `handOverSoon`: every new step is held. */
	private forced = false;
	/** Resolves when `run` returned (or threw). */
	private readonly ended: Promise<void>;
	private end!: () => void;

	constructor(
		private readonly parent: EngineHost,
		private readonly request: InlineRequest,
		mirror: (row: StepRow) => void,
		/** Called once the run ended (returned or threw). */
		onEnd?: () => void,
	) {
		this.ended = new Promise<void>((resolve) => (this.end = resolve));
		if (onEnd) void this.ended.then(onEnd);
		this.store = new MirroredStore((row) => {
			if (this.live) mirror(row);
		}, parent.inlineOneRow === true);
		const wrap = parent.wrapStepFunction;
		const counted: StepFunctionWrapper = (about, fn) => {
			const inner = wrap ? wrap(about, fn) : fn;
			return (attempt) => {
				// The steps before this attempt are kept in the parent before it runs: a crash from here on re-runs none of them.
				this.store.flushHeld();
				this.inFlight++;
				let out: unknown;
				try {
					out = inner(attempt);
				} catch (error) {
					this.attemptSettled();
					throw error;
				}
				if (!(out instanceof Promise)) {
					this.attemptSettled();
					return out;
				}
				this.awaitingAttempts++;
				// Watched beside, and `out` itself returned: a derived promise (`out.finally`) would settle turns later, so an
				// attempt that awaits nothing would outlast runAttempt's SETTLE_TURNS and write its start as one awaiting I/O does
				// (a row more per step, in the child and in its parent).
				out.then(
					() => this.attemptSettled(),
					() => this.attemptSettled(),
				);
				return out;
			};
		};
		this.engine = new InstanceEngine({
			store: this.store,
			registry: parent.registry,
			env: parent.env,
			now: () => parent.now(),
			// Its wake-ups and index entry are its own object's business once published.
			setAlarm: () => undefined,
			ensureAlarmBy: () => undefined,
			sendIndexEntry: async () => undefined,
			// The parent keeps the child's work alive until the run ends, not longer: a held step's pass never settles.
			background: (work) => parent.background(Promise.race([work, this.ended])),
			yieldToEventLoop: () => parent.yieldToEventLoop(),
			defer: (fn, ms) => parent.defer(fn, ms),
			...(parent.log ? { log: parent.log } : {}),
			...(parent.logStepCompletions !== undefined ? { logStepCompletions: parent.logStepCompletions } : {}),
			// Its passes and attempts are spans of the parent's trace, under the pass that invoked it, as they would be in its own object.
			...(parent.tracer ? { tracer: parent.tracer } : {}),
			invocationBudget: INLINE_BUDGET,
			wrapStepFunction: counted,
			// Its notice would wake the parent for nothing: the parent's invoke holds the outcome when the run ends.
			...(parent.children ? { children: { ...parent.children, notifyParent: async () => undefined } } : {}),
			passFailures: new PassFailures(1),
			holdStep: (kind) => this.hold(kind),
		});
	}

	/** Creates the child (its payload checked as any create's) and runs it until it finished or hands over. */
	async run(): Promise<InlineRunEnd> {
		try {
			const { id, type, payload, parent } = this.request;
			await this.engine.create(id, type, payload, parent);
			// The parent's pass was cut while the payload was checked: no step of the child runs.
			if (!this.live) throw new Error('the inline run was aborted before it started');
			// Listening before the first pass starts: its first step may be held at once.
			const held = new Promise<void>((resolve) => (this.onHeld = resolve)).then(() => this.settled());
			this.engine.start();
			await Promise.race([this.engine.idle({ index: false }), held]);
			const row = this.store.readInstance()!;
			const steps = this.store.readSteps();
			const finished = !this.held && FINISHED_STATUSES.includes(row.status);
			// A finished run's last writes ride in its header's row (the parent writes it with its step's completion); a
			// handed-over run's are kept now, as rows of their own, before its header.
			if (!finished) this.store.flushHeld();
			const unwritten = finished ? this.store.takeHeld() : [];
			return { finished, header: transplantHeader(row, steps, this.store.wakeups, this.store.history), steps, ...(unwritten.length > 0 ? { unwritten } : {}) };
		} finally {
			this.end();
		}
	}

	/** The child as its run has it so far, for reads by its id before it is published. */
	get view(): InstanceEngine {
		return this.engine;
	}

	/**
	 * Someone outside wants the child (an event, a control): the run takes no new step, so it hands
	 * over once its attempts in flight settled, and the child is published with what it did.
	 */
	handOverSoon(): void {
		this.forced = true;
	}

	/** Whether someone outside asked for the child (`handOverSoon`): its hand-over should not wait for the child's outcome. */
	get wanted(): boolean {
		return this.forced;
	}

	/**
	 * The parent ended (terminated) or restarted while this run was under way: the child is
	 * terminated as a child in its own object would be (its unfinished steps cancelled, its
	 * attempts aborted), and what it holds now is returned for its parent to publish, so a child
	 * anyone could read as running ends with a record. Undefined when the child was not created
	 * yet (its payload was being checked: nobody could read it).
	 */
	endWithParent(): (InlineRunEnd & { request: InlineRequest }) | undefined {
		this.abort();
		const row = this.store.readInstance();
		if (!row) return undefined;
		const steps = this.store.readSteps();
		return { finished: true, header: transplantHeader(row, steps, this.store.wakeups, this.store.history), steps, request: this.request };
	}

	/** The parent's pass was cut (terminate, restart): nothing more is kept, and the child's attempts are aborted. */
	abort(): void {
		this.live = false;
		try {
			this.engine.terminate();
		} catch {
			// Not created, or finished already: nothing runs.
		}
	}

	/** A new step of the child: one the run does not take, or past its caps, waits forever and the run hands over. */
	private hold(kind: StepKind): Promise<never> | undefined {
		if (!this.forced && !HANDED_OVER_KINDS.has(kind) && this.store.steps.size < INLINE_MAX_STEPS && this.store.resultBytes <= INLINE_MAX_RESULT_BYTES) return undefined;
		this.held = true;
		this.onHeld?.();
		// One promise per held step (a shared one would keep every step's reactions for the isolate's life).
		return new Promise<never>(() => {});
	}

	private attemptSettled(): void {
		if (--this.inFlight === 0) this.quiet?.();
	}

	/** Resolves once no attempt is under way and the writes after the last one landed (a macrotask later). */
	private async settled(): Promise<void> {
		for (;;) {
			if (this.inFlight > 0) await new Promise<void>((resolve) => (this.quiet = resolve));
			await new Promise<void>((resolve) => this.parent.defer(resolve, 0));
			if (this.inFlight === 0) return;
		}
	}
}

/**
 * The inline child's store: memory, with every step row also handed to `mirror` when it is
 * committed (a transaction's rows when it commits, none when it fails), and the sizes the
 * run's caps read. With `hold` (`SHARDFLOW_INLINE_ONE_ROW`), a settled row (no attempt under
 * way) is held back until the next attempt begins (`flushHeld`) or the run ends (`takeHeld`:
 * a finished run's header carries it), so a one-step child writes no step row in its parent.
 * A row of an attempt under way (`running`) is kept at once, with those held before it: an
 * attempt that kills the isolate is counted, as in the child's own object.
 */
class MirroredStore extends MemoryInstanceStore {
	private depth = 0;
	private pending = new Map<string, StepRow>();
	private readonly bytes = new Map<string, number>();
	private readonly held = new Map<string, StepRow>();
	resultBytes = 0;

	constructor(
		private readonly mirror: (row: StepRow) => void,
		private readonly hold = false,
	) {
		super();
	}

	/** Keeps the held rows in the parent now, in the order they were written. */
	flushHeld(): void {
		const rows = [...this.held.values()];
		this.held.clear();
		for (const row of rows) this.mirror(row);
	}

	/** The held rows, no longer held: a finished run's, for its header's row. */
	takeHeld(): StepRow[] {
		const rows = [...this.held.values()];
		this.held.clear();
		return rows;
	}

	override transaction<T>(fn: () => T): T {
		const saved = this.depth > 0 ? new Map(this.pending) : undefined;
		this.depth++;
		let result: T;
		try {
			result = super.transaction(fn);
		} catch (error) {
			this.depth--;
			this.pending = saved ?? new Map();
			throw error;
		}
		if (--this.depth === 0) {
			const rows = [...this.pending.values()];
			this.pending.clear();
			for (const row of rows) this.keep(row);
		}
		return result;
	}

	override writeStep(row: StepRow): void {
		super.writeStep(row);
		if (this.depth > 0) this.pending.set(row.key, { ...row });
		else this.keep({ ...row });
	}

	private keep(row: StepRow): void {
		const bytes = utf8Bytes(row.result);
		this.resultBytes += bytes - (this.bytes.get(row.key) ?? 0);
		this.bytes.set(row.key, bytes);
		if (this.hold && row.status !== 'running') {
			// A newer write of a held step replaces it: its map position is its first write's, as the parent's rows would be.
			this.held.set(row.key, row);
			return;
		}
		this.flushHeld();
		this.mirror(row);
	}
}

/** A read of a child by its id, which its parent answers while the child is not published (see `readInline`). */
export type InlineRead =
	| { kind: 'status' }
	| { kind: 'steps'; cursor?: string | null; limit?: number }
	| { kind: 'history'; after?: string | null; limit?: number; generation?: number };

/** Checks a read that came over RPC (never trusted); INVALID_OPTIONS otherwise. */
export function checkInlineRead(input: unknown): InlineRead {
	const read = input as Partial<InlineRead> | null;
	if (read?.kind === 'status') return { kind: 'status' };
	if (read?.kind === 'steps') return { kind: 'steps', ...pick(read, ['cursor', 'limit']) };
	if (read?.kind === 'history') return { kind: 'history', ...pick(read, ['after', 'limit', 'generation']) };
	throw new ValidationError(ErrorCode.InvalidOptions, 'an inline read is {kind: status | steps | history, ...}');
}

function pick(from: object, keys: readonly string[]): Record<string, unknown> {
	return Object.fromEntries(keys.filter((key) => (from as Record<string, unknown>)[key] !== undefined).map((key) => [key, (from as Record<string, unknown>)[key]]));
}

/** Answers a read on an instance's engine, as the operations of the same name do (the engine checks the query). */
export function readInline(engine: InstanceEngine, read: InlineRead): WorkflowStatusInfo | StepPage | HistoryPage {
	if (read.kind === 'status') return engine.status();
	if (read.kind === 'steps') return engine.steps({ cursor: read.cursor ?? null, ...(read.limit !== undefined ? { limit: read.limit } : {}) });
	const { kind: _kind, ...query } = read;
	return engine.history(query);
}

/** An engine over a transplant in memory, for reads only: a child its parent keeps until it is published. */
export function transplantView(transplant: ChildTransplant, registry: Registry, now: () => number): InstanceEngine {
	return transplantEngine(transplant, registry, now).engine;
}

/**
 * A run its parent's isolate lost (a crash mid-run), ended with its terminated parent: terminated as
 * its own object would terminate it (its unfinished steps cancelled), and what it then holds, to publish.
 */
export function terminatedTransplant(transplant: ChildTransplant, registry: Registry, now: () => number): InlineRunEnd {
	const { engine, store } = transplantEngine(transplant, registry, now);
	engine.terminate();
	const steps = store.readSteps();
	return { finished: true, header: transplantHeader(store.readInstance()!, steps, store.wakeups, store.history), steps };
}

function transplantEngine(transplant: ChildTransplant, registry: Registry, now: () => number): { engine: InstanceEngine; store: MemoryInstanceStore } {
	const store = new MemoryInstanceStore();
	writeTransplantRows(store, transplant);
	const { bytes, lastSeq } = store.historySize(0);
	// As its own object will hold it: publishing it is one more status change (create.ts `storeTransplant`).
	const row = transplant.row;
	store.writeInstance({ ...row, version: row.version + 1, updatedAt: Math.max(now(), row.updatedAt), historyBytes: bytes, historySeq: lastSeq });
	const inert = () => undefined;
	const engine = new InstanceEngine({
		store, registry, env: undefined, now,
		setAlarm: inert, ensureAlarmBy: inert, background: inert, defer: inert,
		sendIndexEntry: async () => undefined,
		yieldToEventLoop: async () => undefined,
	});
	return { engine, store };
}
