import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { instances, instanceStub, type ShardflowEnv } from '../client/instance-client';
import { webhookKey } from '../client/webhook-key';
import type { HistoryEvent } from '../engine/history/history';
import type { RestartFrom } from '../engine/steps/restart-from';
import { decodeWebhookToken, webhookToken } from '../engine/webhooks/webhook';
import type { StepSummary, WorkflowStatusInfo } from '../engine/definition/types';
import type { WorkflowStatus } from '../engine/support/statuses';
import { allPages } from './all-pages';
import type { InstanceDriver } from './instance-driver';
import { testKitClock } from './workerd-clock';

/** The runner's role field, which only subclasses and the integration's `runInDurableObject` can reach (it is not RPC). */
type RunnerInternals = { role?: { kind: string; idle?(options?: { index?: boolean }): Promise<void> } };

/**
 * One instance in a real `WorkflowRunner` with Drizzle storage, inside workerd
 * through the Workers vitest integration (see `InstanceDriver`). Calls go
 * through the same RPC client production callers use; waiting, alarms and
 * crashes use the integration's helpers (`runInDurableObject`,
 * `runDurableObjectAlarm`, `abortAllDurableObjects`). The clock is
 * `testKitClock`, which the test Worker's runner reads (`testKitRunnerOptions`).
 */
export class WorkerdInstanceDriver implements InstanceDriver {
	constructor(
		private readonly env: ShardflowEnv,
		private readonly type: string,
		readonly id: string,
		private readonly onDispose: () => void,
	) {}

	async create(payload: unknown): Promise<void> {
		await instances.create(this.env, { type: this.type, id: this.id, payload });
	}

	sendEvent(event: string, payload: unknown): Promise<void> {
		return instances.sendEvent(this.env, { id: this.id, event, payload }).then(() => undefined);
	}

	control(operation: 'pause' | 'resume' | 'terminate' | 'restart', options: { rollback?: boolean; from?: RestartFrom } = {}): Promise<WorkflowStatus> {
		if (operation === 'restart') return instances.restart(this.env, { id: this.id, ...(options.from === undefined ? {} : { from: options.from }) });
		return operation === 'terminate' ? instances.terminate(this.env, { id: this.id, ...options }) : instances[operation](this.env, { id: this.id });
	}

	/** Checks the signature with the namespace's webhook key, as `POST /webhooks/:token` does, then completes the wait. */
	async callWebhook(url: string, body: unknown): Promise<void> {
		const target = await decodeWebhookToken(await webhookKey(this.env), webhookToken(url));
		await instances.completeWebhook(this.env, { id: target.id, target, body });
	}

	status(): Promise<WorkflowStatusInfo> {
		return instances.status(this.env, { id: this.id });
	}

	steps(): Promise<StepSummary[]> {
		return allPages(async (cursor) => {
			const page = await instances.steps(this.env, { id: this.id, cursor, limit: 100 });
			return { items: page.items, next: page.nextCursor };
		});
	}

	history(): Promise<HistoryEvent[]> {
		return allPages(async (after) => {
			const page = await instances.history(this.env, { id: this.id, after, limit: 1000 });
			return { items: page.events, next: page.nextCursor };
		});
	}

	async idle(): Promise<void> {
		await runInDurableObject(this.stub(), async (instance) => {
			const role = (instance as unknown as RunnerInternals).role;
			if (role?.kind === 'instance') await role.idle?.();
		});
	}

	now(): number {
		return testKitClock.now();
	}

	moveClockTo(at: number): void {
		const ahead = at - testKitClock.now();
		if (ahead > 0) testKitClock.offsetMs += ahead;
	}

	async nextAlarm(): Promise<number | undefined> {
		const alarm = await runInDurableObject(this.stub(), (_instance, state) => state.storage.getAlarm());
		return alarm ?? undefined;
	}

	async fireAlarm(): Promise<void> {
		await runDurableObjectAlarm(this.stub());
		await this.idle();
	}

	/** A hard abort of the isolate's Durable Objects (every object of the test, not only this one). */
	async crash(): Promise<void> {
		await abortAllDurableObjects();
	}

	async dispose(): Promise<void> {
		this.onDispose();
	}

	private stub(): DurableObjectStub {
		return instanceStub(this.env, this.id) as unknown as DurableObjectStub;
	}
}
