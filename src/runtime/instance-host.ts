import { DEFAULT_INVOCATION_BUDGET, invocationBudgetOf, type InvocationBudget } from '../engine/steps/invocation-budget';
import type { DrizzleSqliteDODatabase } from 'drizzle-orm/durable-sqlite';
import { routeIndexEntry } from '../client/index-client';
import type { ShardflowEnv } from '../client/instance-client';
import { childPortOver } from '../client/child-port';
import { withTimeout } from '../engine/support/with-timeout';

import { consoleLogger, logFormOf, parseLogLevel, printLog } from '../engine/support/engine-log';
import { describeThrown } from '../engine/support/thrown-value';
import { tracerOf } from './runtime-tracer';
import type { BacklogPort } from '../engine/index/index-backlog';
import type { FailingPassesPort } from '../engine/instance/failing-passes';
import type { EngineHost } from '../engine/instance/engine-host';
import type { Registry } from '../engine/definition/registry';
import { webhookKey } from '../client/webhook-key';
import { encodeWebhookToken, webhookUrl } from '../engine/webhooks/webhook';
import { DrizzleInstanceStore, type StoreStart } from './drizzle-instance-store';
import { NotifyingInstanceStore } from './notifying-instance-store';
import { DrizzleSlotStore } from './concurrency-slot-store';
import { CompactInstanceStore } from './compact-instance-store';
import { CompactSlotStore } from './compact-slot-store';
import { storageSettingsOf } from './storage-format';

import type { LimiterPort } from '../engine/limiter/concurrency-slot';
import { r2Archive, type ArchiveEnv } from './r2-archive';
import { yieldToOtherWork } from './isolate-activity';
import { callRole } from '../client/stubs';

/** Longest an index delivery (or backlog call) may take before it counts as failed and waits for a retry. */
const INDEX_DELIVERY_TIMEOUT_MS = 10_000;

/**
 * The alarm time this object last set (null: none), shared with the Durable
 * Object shell, which loads it at start-up and clears it when the alarm fires.
 * It saves a storage call for every "make sure the alarm fires by …".
 */
export interface AlarmSlot {
	at: number | null;
}

/**
 * What the instance role lends the engine core inside workerd: Drizzle
 * storage, the Durable Object alarm, `waitUntil`, index delivery through the
 * namespace, and the console logger at the configured level.
 */
export function instanceHost(
	ctx: DurableObjectState,
	env: ShardflowEnv & ArchiveEnv,
	registry: Registry,
	db: DrizzleSqliteDODatabase,
	alarm: AlarmSlot,
	now: () => number,
	destroy: () => Promise<void>,
	start?: StoreStart & { compact?: boolean },
	/** Told after every history write (the instance's stream, roles/instance-stream-feed.ts). */
	historyAppended?: () => void,
): EngineHost {
	const level = parseLogLevel((env as { SHARDFLOW_LOG?: string }).SHARDFLOW_LOG);
	const form = logFormOf(env);
	// SHARDFLOW_STORAGE_FORMAT and the old switches a deployment set (runtime/storage-format.ts).
	const storage = storageSettingsOf(env as Parameters<typeof storageSettingsOf>[0]);
	const storeStart: StoreStart = { ...start, outboxInRow: storage.outboxInRow };
	// A compact instance (runtime/storage-layout.ts) keeps everything in key-value storage, its slot too.
	const compact = start?.compact === true;
	const format = storage.compactFormat;
	let retriesHeld = false;
	const holdAlarmRetries = () => {
		retriesHeld = true;
		return () => void (retriesHeld = false);
	};
	return {
		store: compact
			? new CompactInstanceStore(ctx.storage, { empty: start?.empty === true, format, foldSleeps: storage.foldSleeps, ...(historyAppended ? { historyAppended } : {}) })
			: historyAppended
				? new NotifyingInstanceStore(db, ctx.storage, storeStart, historyAppended)
				: new DrizzleInstanceStore(db, ctx.storage, storeStart),
		registry,
		env,
		now,
		setAlarm: (at) => {
			if (at === (alarm.at ?? undefined)) return;
			alarm.at = at ?? null;
			void (at === undefined ? ctx.storage.deleteAlarm() : ctx.storage.setAlarm(at));
		},
		ensureAlarmBy: (at) => {
			// Held while an alarm handler awaits its work (`holdAlarmRetries`): the runtime retries that alarm if it dies.
			if (retriesHeld) return;
			if (alarm.at !== null && alarm.at <= at) return;
			alarm.at = at;
			void ctx.storage.setAlarm(at);
		},
		background: (work) => ctx.waitUntil(work.catch((error) => printLog({ severity: 'error', event: 'background.failed', instanceId: ctx.id.name, error: describeThrown(error) }, form))),
		sendIndexEntry: (entry) => withTimeout(routeIndexEntry(env, registry, entry), INDEX_DELIVERY_TIMEOUT_MS),
		yieldToEventLoop: yieldToOtherWork,
		defer: (fn, ms = 0) => {
			const timer = setTimeout(fn, ms);
			return () => clearTimeout(timer);
		},
		log: consoleLogger(level, form),
		...(tracerOf(env) ? { tracer: tracerOf(env)! } : {}),
		logStepCompletions: level === 'debug',
		invocationBudget: deploymentBudget(env),
		// The compact layout's format 2: a woken pass's `running` held in memory (runtime/compact-format.ts).
		...(compact && format === 2 ? { holdsWokenRunning: true, holdAlarmRetries } : {}),
		// Storage format 5: an idle wait keeps its alarm (EngineHost.leavesIdleAlarm).
		...(compact && storage.foldSleeps ? { leavesIdleAlarm: true } : {}),
		backlog: backlogPort(env),
		failingPasses: failingPassesPort(env),
		webhooks: {
			issue: async (target) => webhookUrl(await encodeWebhookToken(await webhookKey(env), target), env.PUBLIC_URL),
		},
		...(env.ARCHIVE ? { archive: r2Archive(env.ARCHIVE) } : {}),
		children: childPortOver(env),
		inlineChildren: inlineChildrenOf(env as { SHARDFLOW_INLINE_CHILDREN?: unknown }),
		inlineOneRow: storage.inlineOneRow,
		destroy,
		slots: compact ? new CompactSlotStore(ctx.storage.kv) : new DrizzleSlotStore(db, start?.tables),
		limiter: limiterPort(env),
	};
}

function limiterPort(env: ShardflowEnv): LimiterPort {
	return {
		acquire: (type, key, id) => withTimeout(callRole(env, 'limiterAcquire', [type, key], { id }), INDEX_DELIVERY_TIMEOUT_MS),
		release: async (type, key, id) => {
			await withTimeout(callRole(env, 'limiterRelease', [type, key], { id }), INDEX_DELIVERY_TIMEOUT_MS);
		},
	};
}

function backlogPort(env: ShardflowEnv): BacklogPort {
	return {
		add: async (entry, since) => {
			await withTimeout(callRole(env, 'backlogAdd', [entry.type], { id: entry.id, since }), INDEX_DELIVERY_TIMEOUT_MS);
		},
		remove: async (entry) => {
			await withTimeout(callRole(env, 'backlogRemove', [entry.type], { id: entry.id }), INDEX_DELIVERY_TIMEOUT_MS);
		},
	};
}

function failingPassesPort(env: ShardflowEnv): FailingPassesPort {
	return {
		report: async (type, report) => {
			await withTimeout(callRole(env, 'failingReport', [type], report), INDEX_DELIVERY_TIMEOUT_MS);
		},
		withdraw: async (type, id) => {
			await withTimeout(callRole(env, 'failingWithdraw', [type], { id }), INDEX_DELIVERY_TIMEOUT_MS);
		},
	};
}

/** The deployment's invocation budget (SHARDFLOW_INVOCATION_STEPS/_MS); a malformed value is logged and the default used. */
function deploymentBudget(env: unknown): InvocationBudget {
	try {
		return invocationBudgetOf(env as Parameters<typeof invocationBudgetOf>[0]);
	} catch (error) {
		printLog({ severity: 'error', event: 'config.invalid', setting: 'SHARDFLOW_INVOCATION_STEPS/_MS', error: describeThrown(error), fallback: 'the default invocation budget' }, logFormOf(env));
		return DEFAULT_INVOCATION_BUDGET;
	}
}

/**
 * `SHARDFLOW_INLINE_CHILDREN=false`: a `step.invoke` starts every child in its own object at
 * once, as shardflow 0.1.0 did, instead of running a short one inside its parent first
 * (engine/instance/inline-child.ts). Set it while a deploy may still be rolled back to a build
 * without inline children: a child handed over to such a build would fail to publish until
 * rolled forward. Any other value than "false" leaves them on.
 */
export function inlineChildrenOf(env: { SHARDFLOW_INLINE_CHILDREN?: unknown }): boolean {
	const value = env.SHARDFLOW_INLINE_CHILDREN;
	return !(value === 'false' || value === false);
}
