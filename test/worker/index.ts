import { createApp } from '../../src/api/app';
import { defineRegistry } from '../../src/engine/definition/registry';
import { createWorkflowRunner } from '../../src/runtime/workflow-runner';
import { PaymentWorkflow } from '../../examples/demo/workflows/payment-workflow';
import { TestWorkflow } from '../../examples/demo/workflows/test-workflow';
import { ProgressWorkflow } from '../../examples/demo/workflows/progress-workflow';
import { testKitRunnerOptions } from '../../src/testing/workerd-runner';
import { HangsOnceWorkflow, OrderWorkflow, SecretWorkflow, ZeroDurationsWorkflow } from '../testing/fixtures';
import { alarmInvocations, childNotices, indexDeliveries, indexFaults, layoutSettings, limiterFaults } from './probes';
import { asInvocation } from '../harness/invocations';
import { BigStreamWorkflow, CostedRetryWorkflow, CostedSleepWorkflow, FetcherWorkflow } from '../../bench/workflows';
import { CompensatingFetcherWorkflow, SagaWorkflow } from './saga-workflows';
import { HookApprovalWorkflow } from './webhook-workflows';
import { testClock } from './test-clock';
import { CrossingParentWorkflow, HomeOnlyWorkflow, ResidentChildWorkflow, ResidentOrderWorkflow, ResidentParentWorkflow, RoutedOrderWorkflow } from './residency-workflows';
import { AlarmMeter, SqlMeter } from '../../bench/sql-meter';
import type { ShardflowEnv } from '../../src/client/instance-client';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import {
	BigResultsWorkflow,
	ChildDoublerWorkflow,
	SlowChildWorkflow,
	SlowParentWorkflow,
	StepsChildWorkflow,
	StepsParentWorkflow,
	ChildParentWorkflow,
	BudgetedWorkflow,
	ChaosWorkflow,
	DateStepWorkflow,
	DoorbellWorkflow,
	EveryFiveMinutesWorkflow,
	HourlyWorkflow,
	LimitedWorkflow,
	HangOnceWorkflow,
	HangWhenWokenWorkflow,
	HistoryLimitedWorkflow,
	InboxWorkflow,
	MailboxWorkflow,
	ManyStepsWorkflow,
	ManyChildrenWorkflow,
	AsyncStepWorkflow,
	ShortLivedWorkflow,
	PurgeableWorkflow,
	ParallelWorkflow,
	RedeployedWorkflow,
	SlowRetryWorkflow,
	TwiceRetryWorkflow,
	RetryAwaitsWorkflow,
	RetriesEverySecondWorkflow,
	SlowAfterSleepWorkflow,
	StepNapStepWorkflow,
	StepLimitedWorkflow,
	ThrowsWorkflow,
	SearchableWorkflow,
} from './workflows';

/** The Worker under test: the example workflows plus test-only types, all on the real engine. */
export const testRegistry = defineRegistry({
	test: { workflow: TestWorkflow },
	payment: { workflow: PaymentWorkflow, shards: 4 },
	progress: { workflow: ProgressWorkflow, shards: 2 },
	// Stream messages of 16 KB, many windows of a subscriber (test/runtime/stream-window.test.ts).
	'big-stream': { workflow: BigStreamWorkflow },
	'hang-once': { workflow: HangOnceWorkflow },
	'hang-when-woken': { workflow: HangWhenWokenWorkflow },
	chaos: { workflow: ChaosWorkflow, shards: 8 },
	many: { workflow: ManyStepsWorkflow, shards: 16 },
	'short-lived': { workflow: ShortLivedWorkflow, shards: 2, retention: { completed: '1 hour', errored: '2 hours', terminated: 'forever' } },
	purgeable: { workflow: PurgeableWorkflow, shards: 3, retention: { completed: 'forever', errored: 'forever' } },
	inbox: { workflow: InboxWorkflow, stuckAfter: { running: 'never', waiting: '1 hour' } },
	'slow-retry': { workflow: SlowRetryWorkflow },
	'twice-retry': { workflow: TwiceRetryWorkflow },
	'retry-awaits': { workflow: RetryAwaitsWorkflow },
	'retries-every-second': { workflow: RetriesEverySecondWorkflow },
	// The bench's retry and sleep scenarios (bench/workflows.ts): their index deliveries, counted in test/runtime/rows-written.test.ts.
	'costed-retry': { workflow: CostedRetryWorkflow },
	'costed-sleep': { workflow: CostedSleepWorkflow },
	'slow-after-sleep': { workflow: SlowAfterSleepWorkflow },
	'step-nap-step': { workflow: StepNapStepWorkflow },
	parallel: { workflow: ParallelWorkflow },
	throws: { workflow: ThrowsWorkflow },
	doorbell: { workflow: DoorbellWorkflow },
	'big-results': { workflow: BigResultsWorkflow },
	'date-step': { workflow: DateStepWorkflow },
	mailbox: { workflow: MailboxWorkflow },
	redeployed: { workflow: RedeployedWorkflow, version: '2026-11-26.1' },
	order: { workflow: OrderWorkflow },
	'hangs-once-kit': { workflow: HangsOnceWorkflow },
	'zero-durations': { workflow: ZeroDurationsWorkflow },
	'secret-kit': { workflow: SecretWorkflow },
	'every-5m': { workflow: EveryFiveMinutesWorkflow },
	hourly: { workflow: HourlyWorkflow },
	limited: { workflow: LimitedWorkflow, shards: 2 },
	saga: { workflow: SagaWorkflow },
	'hook-approval': { workflow: HookApprovalWorkflow },
	'step-limited': { workflow: StepLimitedWorkflow, limits: { steps: 5 } },
	'history-limited': { workflow: HistoryLimitedWorkflow, limits: { historyBytes: 2 * 1024 * 1024 } },
	'child-double': { workflow: ChildDoublerWorkflow },
	'child-parent': { workflow: ChildParentWorkflow },
	'slow-child': { workflow: SlowChildWorkflow },
	'slow-parent': { workflow: SlowParentWorkflow },
	'steps-child': { workflow: StepsChildWorkflow },
	'steps-parent': { workflow: StepsParentWorkflow },
	'many-children': { workflow: ManyChildrenWorkflow },
	'async-step': { workflow: AsyncStepWorkflow },
	budgeted: { workflow: BudgetedWorkflow, limits: { stepsPerInvocation: 4 } },
	fetcher: { workflow: FetcherWorkflow, limits: { stepsPerInvocation: 50 } },
	'compensating-fetcher': { workflow: CompensatingFetcherWorkflow, limits: { stepsPerInvocation: 50 } },
	searchable: { workflow: SearchableWorkflow, shards: 4 },
	// Groups (test/runtime/residency.test.ts, docs/residency.md).
	'resident-order': { workflow: ResidentOrderWorkflow, group: 'eu', shards: 2 },
	'routed-order': { workflow: RoutedOrderWorkflow, group: (p: { country: string }) => ({ DE: 'eu', AU: 'au', XX: 'later', YY: 'soon' })[p.country] ?? 'global' },
	'home-only': { workflow: HomeOnlyWorkflow, group: 'global' },
	'resident-parent': { workflow: ResidentParentWorkflow, group: 'eu' },
	'resident-child': { workflow: ResidentChildWorkflow },
	'crossing-parent': { workflow: CrossingParentWorkflow },
}, {
	groups: {
		default: 'global',
		groups: {
			eu: { jurisdiction: 'eu', locationHint: 'weur' },
			tenant: {},
			later: { jurisdiction: 'eu', deployed: false },
			soon: { jurisdiction: 'eu', deployed: false, fallback: true },
		},
	},
});

/** The runner as a deployment that declared it without SQLite storage (`KV_RUNNER` in vitest.config.ts): the runtime refuses it. */
export class KvWorkflowRunner extends createWorkflowRunner(testRegistry) {}

/** The real runner on the test kit's clock and step mocks, with a `settle()` hook; its shards can be told to refuse writes. */
export class WorkflowRunner extends createWorkflowRunner(testRegistry, testKitRunnerOptions) {
	/** What this object's storage wrote (SQL rows, key-value rows, alarms): objects of "layout-" ids only (see `layoutOfTestId`). */
	private readonly meters: { sql: SqlMeter; alarms: AlarmMeter } | undefined;

	constructor(ctx: DurableObjectState, env: ShardflowEnv) {
		// Test hook (this test Worker only): an id "layout-compact-…" or "layout-table-…" (and its children) takes that storage
		// layout whatever the Worker's setting, and counts its rows written as the bench does, from before its storage is used.
		const layout = layoutSettings.get(ctx.id.name ?? '') ?? layoutOfTestId(ctx.id.name);
		const meters = layout ? { sql: new SqlMeter(ctx.storage.sql, ctx.storage), alarms: new AlarmMeter(ctx.storage) } : undefined;
		// A table instance as a deployment upgraded from a build before the compact layout keeps it: the outbox table
		// (storage format 1's), unless the run's env names the switch; "layout-tablerow-…": as storage format 4 writes one
		// a deployment keeps in tables (SHARDFLOW_STORAGE_LAYOUT=table beside the level), its entry in the instance row.
		const outbox = layout === 'table' && !ctx.id.name?.startsWith('layout-tablerow-') ? { SHARDFLOW_OUTBOX_IN_ROW: (env as { SHARDFLOW_OUTBOX_IN_ROW?: string }).SHARDFLOW_OUTBOX_IN_ROW ?? 'false' } : {};
		super(ctx, layout ? ({ ...env, SHARDFLOW_STORAGE_LAYOUT: layout, ...outbox } as unknown as ShardflowEnv) : env);
		this.meters = meters;
	}

	/** Test hook: the rows this object wrote so far, SQL and key-value (bench/sql-meter.ts), and its alarm writes. */
	rowsWritten(): { rows: number; alarms: number; byKey: Record<string, number> } {
		if (!this.meters) throw new Error('only objects of "layout-" ids count their rows');
		// byKey: the key-value rows by what was written ("put i", "delete w:": bench/sql-meter.ts), for a failing test's message.
		return { rows: this.meters.sql.reading().rowsWritten, alarms: this.meters.alarms.reading().set + this.meters.alarms.reading().deleted, byKey: Object.fromEntries(this.meters.sql.kvWrites) };
	}

	/** Test hook (this test Worker only): resolves once the instance's replay loop and index delivery are idle. */
	async settle(options?: { index?: boolean }): Promise<void> {
		if (this.role?.kind === 'instance') await this.role.idle(options);
	}

	/** Counts the alarm invocations of each object (a pass that spent its budget continues in one), and their subrequests. */
	override async alarm(info?: AlarmInvocationInfo) {
		const name = this.ctx.id.name ?? '';
		alarmInvocations.set(name, (alarmInvocations.get(name) ?? 0) + 1);
		return asInvocation(name, 'alarm', () => super.alarm(info));
	}

	// The role calls are defined on the prototype from src/operations/role-calls.ts; these wrap three of them with injectable faults.
	static {
		recordDeliveries(this.prototype);
		refuseWhen(this.prototype, 'indexWrite', () => {
			if (indexFaults.failWrites <= 0) return undefined;
			indexFaults.failWrites--;
			indexFaults.refused++;
			return 'injected index shard failure';
		});
		refuseWhen(this.prototype, 'limiterRelease', () => {
			if (limiterFaults.failReleases <= 0) return undefined;
			limiterFaults.failReleases--;
			return 'injected limiter failure';
		});
		refuseWhen(this.prototype, 'indexRemove', () => {
			if (indexFaults.failWrites <= 0) return undefined;
			indexFaults.failWrites--;
			indexFaults.refused++;
			return 'injected index shard failure';
		});
	}
}

// The invocations that start passes count their subrequests too (see invocations.ts).
for (const method of ['create', 'sendEvent', 'resume', 'restart']) {
	const original = (WorkflowRunner.prototype as unknown as Record<string, (input: unknown) => Promise<unknown>>)[method]!;
	Object.defineProperty(WorkflowRunner.prototype, method, {
		value(this: { ctx: DurableObjectState }, input: unknown) {
			return asInvocation(this.ctx.id.name ?? '', method, () => original.call(this, input));
		},
		writable: true,
		configurable: true,
	});
}

// Operation methods are prototype properties (one per table entry), so the hook wraps the property.
const deliverChildNotice = (WorkflowRunner.prototype as unknown as { childFinished: (input: unknown) => Promise<unknown> }).childFinished;
Object.defineProperty(WorkflowRunner.prototype, 'childFinished', {
	value(this: unknown, input: unknown) {
		if (!childNotices.drop) return deliverChildNotice.call(this, input);
		childNotices.dropped++;
		return Promise.resolve({ ok: true, value: null });
	},
	writable: true,
	configurable: true,
});

export default createApp(testRegistry, { clock: testClock.now });

/** Wraps the RPC method `name` of a runner's prototype: while `fault()` answers a message, the call is refused with INTERNAL. */
function refuseWhen(prototype: object, name: 'indexWrite' | 'indexRemove' | 'limiterRelease', fault: () => string | undefined): void {
	const base = Reflect.get(prototype, name) as (this: unknown, ...args: unknown[]) => Promise<unknown>;
	Object.defineProperty(prototype, name, {
		async value(this: unknown, ...args: unknown[]) {
			const message = fault();
			if (message !== undefined) return { ok: false as const, error: { code: 'INTERNAL', message } };
			return base.apply(this, args);
		},
		writable: true,
		configurable: true,
	});
}

/** Wraps `indexWrite` of a runner's prototype: each entry a shard accepts is recorded under its id (`indexDeliveries`). */
function recordDeliveries(prototype: object): void {
	const base = Reflect.get(prototype, 'indexWrite') as (this: unknown, entries: IndexEntry[], ...rest: unknown[]) => Promise<{ ok: boolean }>;
	Object.defineProperty(prototype, 'indexWrite', {
		async value(this: unknown, entries: IndexEntry[], ...rest: unknown[]) {
			const answer = await base.call(this, entries, ...rest);
			if (answer?.ok !== false) for (const entry of entries) indexDeliveries.set(entry.id, [...(indexDeliveries.get(entry.id) ?? []), entry]);
			return answer;
		},
		writable: true,
		configurable: true,
	});
}

/** The layout an id of the rows-written tests asks for ("layout-compact-…", "layout-table-…"), or undefined. */
function layoutOfTestId(name: string | undefined): 'compact' | 'table' | undefined {
	if (name?.startsWith('layout-compact-')) return 'compact';
	if (name?.startsWith('layout-table-') || name?.startsWith('layout-tablerow-')) return 'table';
	return undefined;
}
