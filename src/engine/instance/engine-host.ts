import type { ArchiveBucket } from '../lifecycle/archive';
import type { ChildPort } from '../children/child-workflows';
import type { LimiterPort, SlotStore } from '../limiter/concurrency-slot';
import type { EngineLogger } from '../support/engine-log';
import type { Tracer } from '../support/tracer';
import type { BacklogPort } from '../index/index-backlog';
import type { IndexEntry } from '../index/index-entry';
import type { InvocationBudget } from '../steps/invocation-budget';
import type { Registry } from '../definition/registry';
import type { StepFunctionWrapper } from '../steps/step-function-wrapper';
import type { InstanceStore } from '../storage/store';
import type { WebhookTarget } from '../webhooks/webhook';
import type { YieldReport } from '../steps/yield-pacer';
import type { PassFailures } from './pass-failures';
import type { FailingPassesPort } from './failing-passes';
import type { StepKind } from '../support/step-kinds';

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
	/** Runs `fn` on a later macrotask, at least `ms` later; may answer a function that cancels it. */
	defer(fn: () => void, ms?: number): void | (() => void);
	/** Structured log records (status changes, step failures); the host filters by level. */
	log?: EngineLogger;
	/** Spans for passes, step attempts and calls (support/tracer.ts); absent, nothing is traced. */
	tracer?: Tracer;
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
	 * A pass woken from `sleeping` or `waiting` holds its `running` in memory as a created instance's first pass does
	 * (kernel.ts `startRunning`), and an alarm that finds such an instance with nothing due runs a pass, since it may be
	 * the watchdog of a woken pass cut short (pass-scheduling.ts `mayHideCutPass`). The compact layout's format 2
	 * (runtime/compact-format.ts): a build before it would leave such an instance waiting for nothing after a crash.
	 */
	holdsWokenRunning?: boolean;
	/**
	 * A `waiting` instance with nothing due keeps whatever alarm is set instead of deleting it (a row written), and an
	 * alarm that finds it so, with nothing recorded since its last status change, starts no pass: it fires once and
	 * writes nothing (a request). Storage format 5 (docs/decisions.md "An idle wait keeps its alarm").
	 */
	leavesIdleAlarm?: boolean;
	/**
	 * Holds the alarm writes that only make a crash retried (`ensureAlarmBy`: a pass's watchdog, a staged index entry's
	 * retry) until the returned release: they write nothing meanwhile. For an alarm handler that awaits the work its alarm
	 * starts, on a runtime that runs an alarm again when its handler dies (InstanceEngine.alarmAwaitingPass). Absent: an
	 * alarm starts its work in the background, guarded by those writes. The compact layout's format 2.
	 */
	holdAlarmRetries?(): () => void;
	/**
	 * Frees the instance's whole storage and its alarm (`deleteAll`): the last
	 * step of a deletion. Afterwards this engine is gone; the id can be created
	 * again, by a new engine.
	 */
	destroy?(): Promise<void>;
	/** Where the instance keeps its concurrency slot, and the limiters (types with `static concurrency`; see concurrency-slot.ts). */
	slots?: SlotStore;
	limiter?: LimiterPort;
	/** Where runs of failed or cut passes are reported (failing-passes.ts); without it, only the log lines tell. */
	failingPasses?: FailingPassesPort;
	/** Where failed passes are counted for their backoff; the isolate's shared record when unset (see pass-failures.ts). */
	passFailures?: PassFailures;
	/** Runs a `step.invoke`'s short child inside this instance first (inline-child.ts); needs `children`. Off when unset. */
	inlineChildren?: boolean;
	/**
	 * An inline child that finishes in its parent's pass is kept in its parent as one row, its header
	 * carrying the steps it had not yet written (`SHARDFLOW_INLINE_ONE_ROW`; docs/decisions.md "Rows of a
	 * `step.invoke` child"). Off when unset: a build before it would publish such a child
	 * without those steps.
	 */
	inlineOneRow?: boolean;
	/**
	 * Set only by an inline child's host (inline-child.ts): asked before a new step of a pass writes
	 * anything; a promise (that never settles) holds the step there, undefined lets it go on.
	 */
	holdStep?(kind: StepKind): Promise<never> | undefined;
}

/** What the host lends `step.webhook`: the URL of a signed token for a target (see webhook.ts). */
export interface WebhookPort {
	issue(target: WebhookTarget): Promise<string>;
}

