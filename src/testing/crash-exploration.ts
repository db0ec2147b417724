import type { Registry } from '../engine/definition/registry';
import type { EventInput, EventName, Serializable } from '../engine/definition/types';
import type { EventsOf, PayloadInputOf } from '../engine/definition/class-types';
import { runExploration, sameOutcome, type RunOutcome } from './exploration-run';
import { TestKitError, TestKitErrorCode } from './test-kit-errors';
import { registryFor } from './test-registry';
import type { TestableWorkflow } from './workflow-test-kit';
import { describeGroup, type CrashPlan } from './write-groups';
import { canonicalJson } from '../engine/support/json';

/** An event the exploration sends, in order, once the instance has settled. */
export type ExplorationEvent<W> = {
	[K in EventName<EventsOf<W>>]: { event: K; payload: Serializable<EventInput<EventsOf<W>[K]>> };
}[EventName<EventsOf<W>>];

export interface ExploreCrashesOptions<W extends TestableWorkflow> {
	payload: Serializable<PayloadInputOf<W>>;
	/** Sent one by one after the instance settles (with idempotency keys, so a send whose answer a crash lost is safe to repeat). */
	events?: readonly ExplorationEvent<W>[];
	/**
	 * Builds `this.env` for each run. Every run starts from scratch, so external
	 * fakes the workflow talks to (a bank, a mailbox) must start empty too:
	 * return new ones here.
	 */
	env?: () => unknown;
	/** The author's registry (by default one holding just this class). */
	registry?: Registry;
	/**
	 * What the outside world saw, read from a run's `env` once it ended: the charges a fake
	 * bank took, the mails a fake mailbox sent. Every crash run must leave the same effects
	 * as the run without a crash (compared as JSON), or it is divergent: a step that charges
	 * twice fails the assertion even when the workflow's output does not change.
	 * Without it only the outcome is compared, and `reran` lists steps that ran again.
	 */
	effects?: (env: any) => unknown;
	/**
	 * Runs the instance as the compact layout's format 2 does (`SHARDFLOW_STORAGE_FORMAT=4` and up, a new project's setting): a
	 * pass woken by an alarm or an event writes no `running` of its own. Off: as format 1 and the table layout run it.
	 */
	holdsWokenRunning?: boolean;
	/** With `holdsWokenRunning`: an idle wait keeps its alarm, which then writes nothing (`SHARDFLOW_STORAGE_FORMAT=5`). */
	leavesIdleAlarm?: boolean;
}

/** One crash point: just before or just after one durable write of the run. */
export interface CrashPoint {
	/** 1 for the run's first durable write. */
	write: number;
	when: 'before' | 'after';
	/** What that write holds, e.g. `step.completed "charge-card"`. */
	writes: string;
	/** `after write 7 (step.completed "charge-card")`. */
	label: string;
}

export interface CrashRun {
	point: CrashPoint;
	outcome: RunOutcome;
	sameOutcome: boolean;
	/** What `effects` read after this run (absent without `effects`). */
	effects?: unknown;
	/** The effects equal the run without a crash (true without `effects`). */
	sameEffects: boolean;
	/** Steps whose function ran more often than in the run without a crash: their side effects happen twice. */
	reran: { step: string; times: number }[];
}

export interface CrashExploration {
	/** The run without a crash, its durable writes (one crash point before and one after each) and its effects. */
	baseline: { outcome: RunOutcome; writes: string[]; effects?: unknown };
	runs: CrashRun[];
	/** Crash points after which the instance ended differently, or the outside world saw other effects: a step's side effect is not idempotent. */
	divergent: CrashRun[];
	/** Every step that ran more than once in some run, and the crash points that made it: each needs an idempotency key. */
	reran: { step: string; crashPoints: string[] }[];
	/** Every run ended with the baseline's status and output (and, with `effects`, left the same effects). */
	ok: boolean;
	/** Whether effects were compared (`effects` was given): without them, a step that repeats an effect but not the outcome passes. */
	effectsChecked: boolean;
}

/**
 * Crash-point exploration: runs the workflow once to learn its durable
 * writes, then reruns it from scratch once per crash point, killing the
 * instance just before and just after each write and restarting it as the
 * runtime would (a new isolate over the same storage, the alarm, a replay).
 * Every run must end with the same status and output; the report names the
 * crash points where it did not, and which step functions ran twice where.
 *
 * @example
 * const report = await exploreCrashes(PaymentWorkflow, {
 *   payload: { amount: 42, currency: 'EUR' },
 *   events: [{ event: 'approval', payload: { approved: true, reviewer: 'alice' } }],
 * });
 * assertCrashSafe(report); // throws CrashDivergenceError naming each divergent crash point
 */
export async function exploreCrashes<W extends TestableWorkflow>(workflow: W, options: ExploreCrashesOptions<W>): Promise<CrashExploration> {
	const script = {
		registry: registryFor(workflow, options.registry),
		type: workflow.type,
		id: `explore-${workflow.type}`,
		payload: options.payload,
		events: (options.events ?? []) as readonly { event: string; payload: unknown }[],
		env: options.env ?? (() => ({})),
		...(options.holdsWokenRunning ? { holdsWokenRunning: true } : {}),
		...(options.leavesIdleAlarm ? { leavesIdleAlarm: true } : {}),
	};
	const baseline = await runExploration(script);
	const effectsOf = (env: unknown) => (options.effects ? JSON.parse(JSON.stringify(options.effects(env) ?? null)) : undefined);
	const baselineEffects = effectsOf(baseline.env);
	const runs: CrashRun[] = [];
	for (const group of baseline.groups) {
		for (const when of ['before', 'after'] as const) {
			const plan: CrashPlan = { group: group.index, when };
			const writes = describeGroup(group);
			const point: CrashPoint = { write: group.index, when, writes, label: `${when} write ${group.index} (${writes})` };
			const run = await runExploration(script, plan);
			const reran = [...run.executions]
				.filter(([step, times]) => times > (baseline.executions.get(step) ?? 0))
				.map(([step, times]) => ({ step, times }));
			const effects = effectsOf(run.env);
			const sameEffects = !options.effects || canonicalJson(JSON.stringify(effects)) === canonicalJson(JSON.stringify(baselineEffects));
			runs.push({ point, outcome: run.outcome, sameOutcome: sameOutcome(run.outcome, baseline.outcome), ...(options.effects ? { effects } : {}), sameEffects, reran });
		}
	}
	const reran = new Map<string, string[]>();
	for (const run of runs) for (const { step } of run.reran) reran.set(step, [...(reran.get(step) ?? []), run.point.label]);
	const divergent = runs.filter((run) => !run.sameOutcome || !run.sameEffects);
	return {
		baseline: { outcome: baseline.outcome, writes: baseline.groups.map(describeGroup), ...(options.effects ? { effects: baselineEffects } : {}) },
		runs,
		divergent,
		reran: [...reran].map(([step, crashPoints]) => ({ step, crashPoints })),
		ok: divergent.length === 0,
		effectsChecked: options.effects !== undefined,
	};
}

/** Some crash points changed how the workflow ends. */
export class CrashDivergenceError extends TestKitError {
	override name = 'CrashDivergenceError';
	constructor(readonly report: CrashExploration) {
		const lines = report.divergent.map((run) => {
			const what = run.sameOutcome ? `left effects ${JSON.stringify(run.effects)} (without a crash: ${JSON.stringify(report.baseline.effects)})` : `ended ${JSON.stringify(run.outcome)}`;
			return `  ${run.point.label}: ${what}${run.reran.length ? `; ran twice: ${run.reran.map((r) => r.step).join(', ')}` : ''}`;
		});
		super(
			TestKitErrorCode.CrashDivergence,
			`${report.divergent.length} of ${report.runs.length} crash points end differently from the run without a crash (${JSON.stringify(report.baseline.outcome)}):\n${lines.join('\n')}\nMake those steps idempotent (an idempotency key: the instance id plus the step name).`,
		);
	}
}

/**
 * Throws `CrashDivergenceError` unless every crash point ended like the run without a crash,
 * and, when `exploreCrashes` was given `effects`, left the same effects. Without `effects` it
 * checks outcomes only: a step that charges twice but returns the same output passes (see
 * `report.reran`, or pass `effects`).
 */
export function assertCrashSafe(report: CrashExploration): void {
	if (!report.ok) throw new CrashDivergenceError(report);
}
