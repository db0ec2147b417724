import type { ChildClass, ChildOptions, OnParentTerminate } from '../definition/child-options';
import { ChildWorkflowError, ErrorCode, ShardflowError, ValidationError } from '../support/errors';
import { assertJsonDepth, toStoredJson } from '../support/json';
import { assertValidWorkflowId } from '../support/ids';
import { MAX_NOTICED_OUTCOME_CHARS } from '../support/limits';
import { fnv1a32 } from '../index/shard';
import { GROUP_SEPARATOR } from '../support/group-id';
import type { InstanceRow, StepRow } from '../storage/store';
import type { ChildTransplant } from './transplant';

/** The parent an instance records when a `step.invoke` or `step.start` created it. */
export interface ParentRef {
	id: string;
	type: string;
	/** The parent's step that started this child. */
	step: string;
	/** The parent opted in to a child in another group (`allowCrossGroup`, docs/residency.md "Across groups"). */
	crossGroup?: true;
}

/** A finished child as its parent sees it; stored JSON text as in the instance row. */
export type ChildOutcome =
	| { status: 'completed'; output: string | null }
	| { status: 'errored' | 'terminated'; error: { name: string; message: string; code?: string } | null };

/**
 * How an instance reaches other instances for its children (the host wires
 * it to the namespace; the pure engine's tests to other engines). Every call
 * may fail for a while (an RPC); the engine retries.
 */
export interface ChildPort {
	/**
	 * Creates the child, or finds it (idempotent by id, as `create`), recording its parent. With
	 * `waitMs` (an invoke), the same call then answers the child's outcome as `outcome(id, waitMs)`
	 * does: the child's first pass runs, and a short child answers within the create's round trip.
	 * Without it, null. With `transplant` (a child that ran inline in its parent), a new child
	 * holds what that run left instead of starting afresh (transplant.ts).
	 */
	start(request: { id: string; type: string; payload: unknown; parent: ParentRef; waitMs?: number; transplant?: ChildTransplant }): Promise<ChildOutcome | null>;
	/**
	 * The child's outcome once it has finished; null while it runs. With `waitMs`, a child whose
	 * run is under way answers once it has nothing left to run, or after `waitMs` at most.
	 */
	outcome(id: string, waitMs?: number): Promise<ChildOutcome | null>;
	/** Terminates the child; one already finished (or gone) is not an error. */
	terminate(id: string): Promise<void>;
	/**
	 * Wakes the parent of a child that just finished, with its outcome, so the parent's next
	 * pass needs no call back (best effort: the parent polls too).
	 */
	notifyParent(parentId: string, childId: string, outcome: ChildOutcome): Promise<void>;
}

/** A finished instance's outcome as its parent sees it; null while it runs. */
export function outcomeOf(row: InstanceRow): ChildOutcome | null {
	if (row.status === 'completed') return { status: 'completed', output: row.output };
	if (row.status === 'errored' || row.status === 'terminated') {
		return { status: row.status, error: row.errorName === null ? null : { name: row.errorName, message: row.errorMessage ?? '', ...(row.errorCode ? { code: row.errorCode } : {}) } };
	}
	return null;
}

/**
 * What the step row of a child keeps in its `result` column: this ref while the child runs
 * and for a `start` (whose replay returns `childId`), the ref with the child's status and
 * error once it failed; only a completed `invoke` holds the child's output instead.
 */
export interface ChildRef {
	childId: string;
	childType: string;
	onParentTerminate: OnParentTerminate;
	/** `start` (fire and forget) or `invoke` (waits for the outcome). */
	mode: 'start' | 'invoke';
	/** The child runs inline in its parent (instance/inline-child.ts); gone from the ref once it is handed over to its own object. */
	inline?: true;
	/** The child lives in another group than its parent (`allowCrossGroup`, cross-group-child.ts): never inline. */
	crossGroup?: true;
}

/** What joins a parent's id and its step in a child's default id; reserved for children (`isReservedChildId`). */
export const CHILD_ID_SEPARATOR = '::';

/**
 * The id of a child started at `step` of `parentId`: `<parent>::<step>` in the first
 * generation, `<parent>::g<n>::<step>` after a restart (so a restarted parent starts new
 * children), and a hashed form when that is not a valid id (a long or unusual step name).
 * Ids with `::` are reserved for children, so nobody can create a child's id before its parent does.
 */
export function childIdFor(parentId: string, generation: number, step: string): string {
	const sep = CHILD_ID_SEPARATOR;
	const plain = generation === 0 ? `${parentId}${sep}${step}` : `${parentId}${sep}g${generation}${sep}${step}`;
	try {
		assertValidWorkflowId(plain);
		return plain;
	} catch {
		const digest = `${fnv1a32(`${parentId}\n${generation}\n${step}`).toString(36)}${fnv1a32(`${step}\n${generation}\n${parentId}`).toString(36)}`;
		return `${parentId.slice(0, 76)}${sep}c${generation}-${digest}`;
	}
}

/**
 * The instances that may hold the child `childId` inline (instance/inline-child.ts), nearest
 * first: the id before its last `::`, and before that a generation's `::g<n>` (see
 * `childIdFor`). A read of a child not published yet asks them; none for an id without `::`.
 */
export function inlineParentsOf(childId: string): string[] {
	// A cross-group child's default id (cross-group-child.ts: its local part starts `.::`) never runs inline.
	if (childId.includes(`${GROUP_SEPARATOR}.${CHILD_ID_SEPARATOR}`) || childId.startsWith(`.${CHILD_ID_SEPARATOR}`)) return [];
	const at = childId.lastIndexOf(CHILD_ID_SEPARATOR);
	if (at <= 0) return [];
	const head = childId.slice(0, at);
	const generation = /^(.+)::g\d+$/.exec(head);
	return generation ? [head, generation[1]!] : [head];
}

/**
 * Whether an id has the shape of a child's default id. Such ids are reserved: only a
 * parent's `step.invoke`/`step.start` creates one, and a create from the API, a helper
 * or a batch that names one is refused (as schedule tick ids are), so a caller cannot
 * take a child's predictable id first and make its parent's step fail.
 */
export function isReservedChildId(id: string): boolean {
	return id.includes(CHILD_ID_SEPARATOR);
}

/**
 * How long an invoke's create, which asks for the outcome too, lets the child run first: a
 * child that finishes (or suspends) within it answers in the same call, without the notice and
 * the parent's second pass. A longer child answers null after it.
 */
export const FIRST_OUTCOME_WAIT_MS = 1000;

/** Polls of an unfinished child: 2 s, doubling to at most a minute (the child's notice usually comes first). */
export function childPollDelayMs(polls: number): number {
	return Math.min(2000 * 2 ** Math.max(0, polls - 1), 60_000);
}

/** Whether a failed call to another instance is worth retrying (an RPC or overload), or a refusal that stays one. */
export function isTransient(error: unknown): boolean {
	return !(error instanceof ShardflowError) || error.code === ErrorCode.Internal;
}

/** The ref a child's step row holds (see `ChildRef`); not for a completed `invoke`. */
export function readChildRef(row: StepRow): ChildRef {
	return JSON.parse(row.result ?? 'null') as ChildRef;
}

/** The error a failed child's step throws, rebuilt from its stored row on every replay. */
export function childFailure(row: StepRow): ChildWorkflowError {
	const stored = JSON.parse(row.result ?? 'null') as ChildRef & { status: 'errored' | 'terminated'; error: ChildWorkflowError['childError'] };
	return new ChildWorkflowError(stored.childId, stored.childType, stored.status, stored.error);
}

/**
 * Checks a new child step's request before anything is written: a registered type, a
 * valid id other than the parent's, a JSON payload, a known `onParentTerminate`. A
 * mistake here is the workflow's (it throws into `run()` like a bad `step.do` option).
 */
export function checkChildRequest(
	children: { parentId: string; generation: number; assertRegistered(type: string): void },
	mode: ChildRef['mode'],
	name: string,
	Child: ChildClass,
	options: ChildOptions<unknown>,
): ChildRef {
	const type = (Child as { type?: unknown } | undefined)?.type;
	if (typeof type !== 'string') {
		throw new ValidationError(ErrorCode.UnknownType, `step.${mode}("${name}") needs a workflow class with a static type, got ${typeof Child}`);
	}
	children.assertRegistered(type);
	if (!options || typeof options !== 'object') throw new ValidationError(ErrorCode.InvalidOptions, `step.${mode}("${name}") needs options {payload, id?, onParentTerminate?, allowCrossGroup?}`);
	const childId = options.id ?? childIdFor(children.parentId, children.generation, name);
	assertValidWorkflowId(childId);
	if (childId === children.parentId) throw new ValidationError(ErrorCode.InvalidId, `step.${mode}("${name}"): a workflow cannot be its own child ("${childId}")`);
	const onParentTerminate = options.onParentTerminate ?? 'terminate';
	if (onParentTerminate !== 'terminate' && onParentTerminate !== 'abandon') {
		throw new ValidationError(ErrorCode.InvalidOptions, `step.${mode}("${name}"): onParentTerminate must be 'terminate' or 'abandon', got ${JSON.stringify(onParentTerminate)}`);
	}
	assertJsonDepth(options.payload, `payload of child "${name}"`);
	toStoredJson(options.payload, `payload of child "${name}"`);
	return { childId, childType: type, onParentTerminate, mode };
}

/** The wake-up key of a terminated instance's child cascade (no step key has this form). */
export const CASCADE_WAKEUP = 'children:terminate';

/** The children a terminate of their parent must terminate: every child step whose ref says so, except invokes that finished. */
export function childrenToTerminate(steps: Iterable<StepRow>): string[] {
	const ids: string[] = [];
	for (const row of steps) {
		if (row.kind !== 'child' || row.result === null) continue;
		// A completed invoke holds the child's output, a failed one a finished child: nothing to stop.
		if (row.status === 'failed') continue;
		let ref: ChildRef;
		try {
			ref = readChildRef(row);
		} catch {
			continue;
		}
		if (row.status === 'completed' && ref?.mode !== 'start') continue;
		if (ref?.childId && ref.onParentTerminate === 'terminate') ids.push(ref.childId);
	}
	return ids;
}

/**
 * Outcomes that children's notices brought, each for the parent's next pass only: a pass
 * takes them all at its start and drops what its invokes did not ask for. So a notice no
 * invoke was waiting for (a `start`ed child, one the parent had already polled) never answers
 * a later invoke of the same id (a restarted parent, the child run again), and what a parent
 * keeps is bounded (`MAX_NOTICED_OUTCOME_CHARS`): past it a notice is dropped and the pass
 * asks the child, as after an eviction.
 */
export class NoticedOutcomes {
	private outcomes = new Map<string, ChildOutcome>();
	private chars = 0;

	constructor(private readonly budget = MAX_NOTICED_OUTCOME_CHARS) {}

	/** Keeps a child's outcome for the next pass, unless the budget is spent. */
	keep(childId: string, outcome: ChildOutcome): void {
		const previous = this.outcomes.get(childId);
		const chars = this.chars - (previous ? outcomeChars(childId, previous) : 0) + outcomeChars(childId, outcome);
		if (chars > this.budget) return;
		this.outcomes.set(childId, outcome);
		this.chars = chars;
	}

	/** Every outcome kept so far, for one pass; notices that come later are kept for the next. */
	takeAll(): Map<string, ChildOutcome> {
		const taken = this.outcomes;
		this.outcomes = new Map();
		this.chars = 0;
		return taken;
	}
}

/** Roughly what an outcome holds in memory, in characters (a map entry's own cost included). */
function outcomeChars(childId: string, outcome: ChildOutcome): number {
	const held = outcome.status === 'completed' ? (outcome.output?.length ?? 0) : outcome.error ? outcome.error.name.length + outcome.error.message.length + (outcome.error.code?.length ?? 0) : 0;
	return 64 + childId.length + held;
}

/** The outcome a child's notice carries, if it has the shape of one (RPC input: never trusted); else undefined. */
export function checkChildOutcome(input: unknown): ChildOutcome | undefined {
	const outcome = input as { status?: unknown; output?: unknown; error?: unknown } | null;
	if (!outcome || typeof outcome !== 'object') return undefined;
	if (outcome.status === 'completed') return typeof outcome.output === 'string' || outcome.output === null ? { status: 'completed', output: outcome.output } : undefined;
	if (outcome.status !== 'errored' && outcome.status !== 'terminated') return undefined;
	const error = outcome.error as { name?: unknown; message?: unknown; code?: unknown } | null;
	if (error === null) return { status: outcome.status, error: null };
	if (!error || typeof error.name !== 'string' || typeof error.message !== 'string' || (error.code !== undefined && typeof error.code !== 'string')) return undefined;
	return { status: outcome.status, error: { name: error.name, message: error.message, ...(typeof error.code === 'string' ? { code: error.code } : {}) } };
}

/** Checks the parent a create was sent with (RPC input: never trusted). */
export function checkParentRef(input: unknown, childId: string): ParentRef {
	const parent = input as Partial<ParentRef> | null;
	if (!parent || typeof parent !== 'object' || typeof parent.type !== 'string' || typeof parent.step !== 'string' || parent.step.length > 256) {
		throw new ValidationError(ErrorCode.InvalidOptions, 'parent must be {id, type, step}');
	}
	assertValidWorkflowId(parent.id);
	if (parent.id === childId) throw new ValidationError(ErrorCode.InvalidId, `workflow "${childId}" cannot be its own parent`);
	if (parent.crossGroup !== undefined && parent.crossGroup !== true) throw new ValidationError(ErrorCode.InvalidOptions, 'parent.crossGroup must be true when given');
	return { id: parent.id, type: parent.type, step: parent.step, ...(parent.crossGroup ? { crossGroup: true as const } : {}) };
}
