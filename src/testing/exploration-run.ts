import { canonicalJson } from '../engine/support/json';
import { InstanceEngine } from '../engine/instance/instance-engine';
import { MemoryInstanceStore } from '../engine/storage/memory-store';
import type { Registry } from '../engine/definition/registry';
import type { StepFunctionWrapper } from '../engine/steps/step-function-wrapper';
import { FINISHED_STATUSES, type WorkflowStatus } from '../engine/support/statuses';
import { fromStoredJson } from '../engine/support/json';
import { readRollbackState } from '../engine/steps/rollback-state';
import type { InstanceRow } from '../engine/storage/store';
import { TestKitError, TestKitErrorCode } from './test-kit-errors';
import { DEFAULT_START_TIME, VirtualClock } from './virtual-clock';
import { VirtualHost, type DurableInstance } from './virtual-host';
import { WriteGroupCounter, type CrashPlan, type WriteGroup } from './write-groups';

/** What a caller does to the instance, in order: create it, then send each event once it has settled. */
export interface ExplorationScript {
	registry: Registry;
	type: string;
	id: string;
	payload: unknown;
	events: readonly { event: string; payload: unknown }[];
	/** A fresh `env` per run, so external fakes (a bank, a mailbox) start empty each time. */
	env: () => unknown;
	/** Woken passes hold `running` in memory (EngineHost.holdsWokenRunning: the compact layout's format 2). */
	holdsWokenRunning?: boolean;
	/** An idle wait keeps its alarm (EngineHost.leavesIdleAlarm: storage format 5). */
	leavesIdleAlarm?: boolean;
}

/** How a run ended. */
export interface RunOutcome {
	status: WorkflowStatus | 'missing';
	output?: unknown;
	error?: { name: string; message: string; code?: string };
	/** How rollbacks ended, when they ran (`completed`, `failed`, `abandoned`). */
	rollback?: string;
}

export interface ExplorationRun {
	outcome: RunOutcome;
	/** The `env` the run's workflow was given (its fakes hold what the outside world saw). */
	env: unknown;
	/** How many times each step's own function was called, over the whole run (both isolates). */
	executions: Map<string, number>;
	groups: WriteGroup[];
	crashed: boolean;
}

const MAX_ROUNDS = 10_000;

/**
 * Runs the script once on the pure engine, as the runtime would: actions,
 * then every timer in time order until the instance finishes (or waits with
 * nothing left to send). With a plan, the isolate dies at the planned write;
 * a fresh one comes up over the same storage, a call whose answer was lost is
 * made again (event sends carry idempotency keys, as a careful caller's do)
 * and the alarm brings the instance back.
 */
export async function runExploration(script: ExplorationScript, plan?: CrashPlan): Promise<ExplorationRun> {
	const clock = new VirtualClock(DEFAULT_START_TIME);
	const durable: DurableInstance = { store: new MemoryInstanceStore(), alarmAt: undefined };
	const executions = new Map<string, number>();
	const env = script.env();
	let host: VirtualHost;
	const counter = new WriteGroupCounter(plan, () => host.crash());
	const wrapStepFunction: StepFunctionWrapper = ({ name }, fn) => (attempt) => {
		counter.beforeStepFunction();
		if (host.crashed) return new Promise(() => {});
		executions.set(name, (executions.get(name) ?? 0) + 1);
		return fn(attempt);
	};
	const boot = (gate: WriteGroupCounter | undefined) => {
		host = new VirtualHost({ durable, registry: script.registry, env, clock, wrapStepFunction, ...(gate ? { gate } : {}), ...(script.holdsWokenRunning ? { holdsWokenRunning: true } : {}), ...(script.leavesIdleAlarm ? { leavesIdleAlarm: true } : {}) });
		return new InstanceEngine(host);
	};
	let engine = boot(counter);
	let crashed = false;
	const actions: ((engine: InstanceEngine) => Promise<unknown>)[] = [
		(e) => e.create(script.id, script.type, script.payload),
		...script.events.map(({ event, payload }, i) => (e: InstanceEngine) => e.sendEvent(event, payload, { idempotencyKey: `explore-${i + 1}` })),
	];
	let next = 0;
	for (let round = 0; ; round++) {
		if (round > MAX_ROUNDS) throw new TestKitError(TestKitErrorCode.TimersNeverSettle, `the workflow did not settle within ${MAX_ROUNDS} rounds of actions and timers`);
		if (host!.crashed && !crashed) {
			crashed = true;
			engine = boot(undefined);
		}
		await host!.idle();
		if (host!.crashed) continue;
		const row = durable.store.readInstance();
		if (row && FINISHED_STATUSES.includes(row.status)) break;
		if (next < actions.length) {
			await actions[next]!(engine);
			// A dead isolate never answered: the caller makes the same call again.
			if (!host!.crashed) next++;
			continue;
		}
		const alarm = durable.alarmAt;
		if (alarm === undefined) break;
		clock.moveTo(alarm);
		durable.alarmAt = undefined;
		engine.alarm();
	}
	return { outcome: outcomeOf(durable), env, executions, groups: counter.groups, crashed };
}

function outcomeOf(durable: DurableInstance): RunOutcome {
	const row = durable.store.readInstance();
	if (!row) return { status: 'missing' };
	const rollback = readRollbackState(row)?.state;
	if (rollback !== undefined) return { ...outcomeOfRow(row), rollback };
	return outcomeOfRow(row);
}

function outcomeOfRow(row: InstanceRow): RunOutcome {
	if (row.status === 'completed') return { status: row.status, output: fromStoredJson(row.output) };
	if (row.status === 'errored') {
		return { status: row.status, error: { name: row.errorName ?? 'Error', message: row.errorMessage ?? '', ...(row.errorCode ? { code: row.errorCode } : {}) } };
	}
	return { status: row.status };
}

export function sameOutcome(a: RunOutcome, b: RunOutcome): boolean {
	// An errored run is the same when it failed the same way (name and code): the message of a
	// step that failed for good counts its attempts, and a crash mid-attempt adds one by design
	// (steps are at least once), so "failed after 2 attempts" against 1 is no divergence.
	const comparable = (o: RunOutcome) => (o.error ? { ...o, error: { name: o.error.name, code: o.error.code } } : o);
	return canonicalJson(JSON.stringify(comparable(a))) === canonicalJson(JSON.stringify(comparable(b)));
}
