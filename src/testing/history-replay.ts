import { EventTimeoutError, StepFailedError, WebhookExpiredError } from '../engine/support/errors';
import type { HistoryEvent, HistoryPage } from '../engine/history/history';
import { canonicalJson } from '../engine/support/json';
import type { Step, WebhookHandle } from '../engine/definition/types';
import type { StepKind } from '../engine/support/step-kinds';
import { ranConcurrently, recordedRun, type RecordedRun, type RecordedStep } from './recorded-steps';
import { TestKitError, TestKitErrorCode } from './test-kit-errors';
import type { TestableWorkflow } from './workflow-test-kit';

/** A step as the code or the record names it. */
export interface StepRef {
	kind: StepKind;
	name: string;
}

/** Where the current code leaves the recorded run. */
export type ReplayDivergence =
	/** The code asked for a step the record does not have at this point (renamed, reordered, added or of another kind). */
	| { reason: 'unexpected-step'; position: number; recorded: StepRef | undefined; requested: StepRef; message: string }
	/** The code finished (or stopped) without asking for a step the record has (removed). */
	| { reason: 'missing-step'; position: number; recorded: StepRef; message: string }
	/** Every step matched, but `run()` ended differently from the record. */
	| { reason: 'outcome'; recorded: unknown; replayed: unknown; message: string };

export interface ReplayResult {
	ok: boolean;
	/** The first divergence, when there is one. */
	divergence?: ReplayDivergence;
	/** Recorded steps the code asked for, and how many the record has. */
	matchedSteps: number;
	recordedSteps: number;
}

/**
 * A history record as a JSON file holds it (`kind` is a plain string there):
 * the replayer reads the kinds it knows and skips the others, as the format asks.
 */
export type HistoryRecordLike = { seq: number; kind: string; generation: number; at?: number; [field: string]: unknown };

/** What `replayHistory` reads: a page of `GET /workflows/:id/history` (or its JSON), or just its records. */
export type ReplayInput = HistoryPage | { id?: string; formatVersion?: number; events: readonly (HistoryEvent | HistoryRecordLike)[] } | readonly (HistoryEvent | HistoryRecordLike)[];

export interface ReplayOptions {
	/** `this.env` in `run()` (no step function runs, but `run()` itself may read it). */
	env?: unknown;
	/** The payload, when the history does not begin with `workflow.created` (a restarted generation). */
	payload?: unknown;
	/** The instance id `run()` sees; the page's id by default. */
	id?: string;
}

const NEVER = new Promise<never>(() => {});

/**
 * Replays a recorded history against the current code without running any
 * step function: each step answers with its recorded outcome, and the first
 * place the code leaves the record is reported ("recorded step X of kind K at
 * position n, the code asked for Y"). Steps of concurrent branches
 * (`Promise.all`) may come in another order than recorded; the record's own
 * timing says which steps ran concurrently. A history of a run still in
 * progress replays up to where it ends.
 *
 * @example
 * const page = await PaymentWorkflow.history(env, 'pay-1'); // or GET /workflows/pay-1/history
 * const result = await replayHistory(PaymentWorkflow, page);
 * assertReplays(result); // throws ReplayDivergenceError with the first divergence
 */
export async function replayHistory(workflow: TestableWorkflow, history: ReplayInput, options: ReplayOptions = {}): Promise<ReplayResult> {
	const page = (Array.isArray(history) ? { events: history } : history) as { events: readonly HistoryEvent[]; id?: string; formatVersion?: number };
	if (!page || !Array.isArray(page.events)) {
		throw new TestKitError(TestKitErrorCode.ReplayInput, 'replayHistory needs a history page ({events: [...]}) or its array of records');
	}
	if ('formatVersion' in page && page.formatVersion !== undefined && page.formatVersion !== 1) {
		throw new TestKitError(TestKitErrorCode.ReplayInput, `history format version ${JSON.stringify(page.formatVersion)} is not one this test kit reads (1)`);
	}
	// A first page of a longer history would replay "cleanly" up to where it was cut.
	const next = (page as { nextCursor?: unknown }).nextCursor;
	if (next !== undefined && next !== null) {
		throw new TestKitError(
			TestKitErrorCode.ReplayInput,
			`this history page is not the last one (nextCursor ${JSON.stringify(next)}): fetch every page (after=<nextCursor>) and pass all the records`,
		);
	}
	let previous = 0;
	for (const [i, record] of page.events.entries()) {
		const r = record as { seq?: unknown; kind?: unknown; generation?: unknown } | null;
		if (!r || typeof r !== 'object' || !Number.isSafeInteger(r.seq) || typeof r.kind !== 'string' || !Number.isSafeInteger(r.generation)) {
			throw new TestKitError(TestKitErrorCode.ReplayInput, `history record ${i} is not a record ({seq, kind, generation, ...}): ${JSON.stringify(record)?.slice(0, 200)}`);
		}
		if ((r.seq as number) <= previous) {
			throw new TestKitError(TestKitErrorCode.ReplayInput, `history records must come in growing seq order; record ${i} has seq ${String(r.seq)} after ${previous}`);
		}
		previous = r.seq as number;
	}
	const run = recordedRun(page.events);
	const payload = 'payload' in options ? options.payload : run.payload?.value;
	if (!('payload' in options) && run.payload === undefined) {
		throw new TestKitError(
			TestKitErrorCode.ReplayInput,
			'the history has no workflow.created record (a restarted generation, or an instance older than the history): pass options.payload',
		);
	}
	const step = new ReplayStep(run);
	const instance = new workflow({ id: options.id ?? page.id ?? 'replay', type: workflow.type, env: options.env ?? {} });
	let settled: { ok: true; output: unknown } | { ok: false; error: unknown } | undefined;
	void instance.run(step, payload).then(
		(output) => (settled = { ok: true, output }),
		(error: unknown) => (settled = { ok: false, error }),
	);
	// Recorded outcomes resolve at once, so the code runs until it ends or waits on a step the record
	// leaves unfinished (or on a divergence): then a whole macrotask passes without a new step call.
	for (let seen = -1; settled === undefined && seen !== step.calls; ) {
		seen = step.calls;
		await new Promise((resolve) => setTimeout(resolve, 0));
	}
	const divergence = step.divergence ?? step.missing(settled !== undefined) ?? outcomeDivergence(run, settled);
	return { ok: divergence === undefined, ...(divergence ? { divergence } : {}), matchedSteps: step.matched.size, recordedSteps: run.steps.length };
}

/** The first divergence found by `replayHistory`. */
export class ReplayDivergenceError extends TestKitError {
	override name = 'ReplayDivergenceError';
	constructor(readonly divergence: ReplayDivergence) {
		super(TestKitErrorCode.ReplayDivergence, `the history does not replay against the current code: ${divergence.message}`);
	}
}

/** Throws `ReplayDivergenceError` unless the history replayed cleanly. */
export function assertReplays(result: ReplayResult): void {
	if (result.divergence) throw new ReplayDivergenceError(result.divergence);
}

/** The `step` a replayed `run()` gets: answers from the record, notes the first divergence, runs nothing. */
class ReplayStep implements Step<any, any> {
	readonly matched = new Set<RecordedStep>();
	calls = 0;
	divergence: ReplayDivergence | undefined;
	private readonly byKey = new Map<string, RecordedStep>();

	constructor(private readonly run: RecordedRun) {
		for (const step of run.steps) this.byKey.set(`${step.kind}:${step.name}`, step);
	}

	do(name: string): Promise<any> {
		return this.call({ kind: 'do', name });
	}
	sleep(name: string): Promise<void> {
		return this.call({ kind: 'sleep', name });
	}
	sleepUntil(name: string): Promise<void> {
		return this.call({ kind: 'sleep', name });
	}
	waitForEvent(event: string, options?: { name?: string }): Promise<any> {
		return this.call({ kind: 'wait', name: options?.name ?? event });
	}
	async webhook(name: string): Promise<WebhookHandle<any>> {
		const { url, expiresAt } = (await this.call({ kind: 'webhook', name })) as { url: string; expiresAt: number | null };
		const reply = this.byKey.get(`webhook:${name}`)?.reply;
		return {
			url,
			expiresAt,
			wait: () =>
				reply?.type === 'completed'
					? Promise.resolve(structuredClone(reply.value))
					: reply?.type === 'timed_out'
						? Promise.reject(new WebhookExpiredError(`webhook "${name}" expired before it was called`))
						: NEVER,
		};
	}
	async setAttributes(name: string): Promise<void> {
		await this.call({ kind: 'attributes', name });
	}
	invoke(name: string): Promise<any> {
		return this.call({ kind: 'child', name });
	}
	start(name: string): Promise<string> {
		return this.call({ kind: 'child', name });
	}

	/** A replay publishes nothing (a live replay skips the messages its run recorded too). */
	async emit(): Promise<void> {}

	/**
	 * True where the record has the patch's marker; false where the record passed this
	 * point without it (the old branch, as the engine decides); at the end of a record
	 * still in progress, true (a live run would record the marker there).
	 */
	async patched(id: string): Promise<boolean> {
		if (this.byKey.has(`patch:${id}`)) return this.call({ kind: 'patch', name: id });
		this.calls++;
		return this.firstUnmatched() === undefined;
	}

	async deprecatePatch(id: string): Promise<void> {
		if (this.byKey.has(`patch:${id}`)) await this.call({ kind: 'patch', name: id });
		else this.calls++;
	}

	/** Recorded steps the code never asked for, once it has finished (or stopped where the record stops). */
	missing(finished: boolean): ReplayDivergence | undefined {
		const left = this.firstUnmatched();
		if (!left) return undefined;
		// A run the record leaves unfinished may stop at its last, pending step with concurrent ones unasked.
		const how = finished ? 'the code finished without asking for it' : 'the code stopped before asking for it';
		return { reason: 'missing-step', position: left.position, recorded: ref(left), message: `recorded step ${show(ref(left))} at position ${left.position}: ${how}` };
	}

	private call(requested: StepRef): Promise<any> {
		this.calls++;
		if (this.divergence) return NEVER;
		const recorded = this.byKey.get(`${requested.kind}:${requested.name}`);
		const expected = this.firstUnmatched();
		if (!recorded || this.matched.has(recorded)) {
			// Past the end of a run that was still going when exported: the live run would go on from here.
			if (!recorded && !expected && this.run.end === undefined) return NEVER;
			return this.diverge(expected, requested);
		}
		if (expected && expected !== recorded) {
			const concurrent = (skipped: RecordedStep) =>
				ranConcurrently(skipped, recorded) || [...this.matched].some((earlier) => ranConcurrently(skipped, earlier));
			const skipped = this.run.steps.slice(expected.position, recorded.position).filter((s) => !this.matched.has(s));
			const misplaced = skipped.find((s) => !concurrent(s));
			if (misplaced) return this.diverge(misplaced, requested);
		}
		this.matched.add(recorded);
		const outcome = recorded.outcome;
		switch (outcome.type) {
			case 'completed':
				return Promise.resolve(outcome.value === undefined ? undefined : structuredClone(outcome.value));
			case 'failed':
				return Promise.reject(new StepFailedError(recorded.name, outcome.attempts, outcome.error.name, outcome.error.message));
			case 'timed_out':
				return Promise.reject(new EventTimeoutError(recorded.name, outcome.event));
			case 'pending':
				return NEVER;
		}
	}

	private diverge(recorded: RecordedStep | undefined, requested: StepRef): Promise<never> {
		const position = recorded?.position ?? this.run.steps.length;
		const where = recorded
			? `recorded step ${show(ref(recorded))} at position ${position}`
			: `the record has no step at position ${position} (the recorded run ${this.run.end ? `${this.run.end.status} there` : 'ended there'})`;
		this.divergence = { reason: 'unexpected-step', position, recorded: recorded && ref(recorded), requested, message: `${where}, the code asked for ${show(requested)}` };
		return NEVER;
	}

	private firstUnmatched(): RecordedStep | undefined {
		return this.run.steps.find((s) => !this.matched.has(s));
	}
}

function outcomeDivergence(run: RecordedRun, settled: { ok: true; output: unknown } | { ok: false; error: unknown } | undefined): ReplayDivergence | undefined {
	if (!run.end || !settled || run.end.status === 'terminated') return undefined;
	if (run.end.status === 'completed') {
		if (settled.ok && canonicalJson(JSON.stringify(settled.output ?? null)) === canonicalJson(JSON.stringify(run.end.output ?? null))) return undefined;
		const replayed = settled.ok ? settled.output : describe(settled.error);
		return { reason: 'outcome', recorded: run.end.output, replayed, message: `the recorded run completed with ${JSON.stringify(run.end.output)}, the code ${settled.ok ? `returned ${JSON.stringify(settled.output)}` : `threw ${JSON.stringify(replayed)}`}` };
	}
	if (!settled.ok) return undefined;
	return { reason: 'outcome', recorded: run.end.error, replayed: settled.output, message: `the recorded run errored (${run.end.error.name}: ${run.end.error.message}), the code returned ${JSON.stringify(settled.output)}` };
}

function describe(error: unknown): { name: string; message: string } {
	return error instanceof Error ? { name: error.name, message: error.message } : { name: 'Error', message: String(error) };
}

function ref(step: RecordedStep): StepRef {
	return { kind: step.kind, name: step.name };
}

function show(step: StepRef): string {
	return `"${step.name}" (${step.kind})`;
}
