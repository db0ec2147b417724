import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { drizzle } from 'drizzle-orm/durable-sqlite';
import { instances, instanceStub, type ShardflowEnv } from '../client/instance-client';
import * as schema from '../db/schema';
import { historyPage, type HistoryEvent, type HistoryPage } from '../engine/history';
import { NotFoundError } from '../engine/errors';
import type { StepSummary, WorkflowStatus, WorkflowStatusInfo } from '../engine/types';
import { runtimeClock } from '../runtime/clock';
import { DrizzleInstanceStore } from '../runtime/drizzle-instance-store';
import { idleForTests, type WorkflowRunnerBase } from '../runtime/workflow-runner';
import type { InstanceDriver } from './instance-driver';

/**
 * One instance in a real `WorkflowRunner` with Drizzle storage, inside workerd
 * through the Workers vitest integration (see `InstanceDriver`). Calls go
 * through the same RPC client production callers use; waiting, alarms and
 * crashes use the integration's helpers (`runInDurableObject`,
 * `runDurableObjectAlarm`, `abortAllDurableObjects`). The clock is the
 * runtime's test offset, shared by every instance of the isolate.
 */
export class WorkerdInstanceDriver implements InstanceDriver {
	constructor(
		private readonly env: ShardflowEnv,
		private readonly type: string,
		readonly id: string,
		private readonly onDispose: () => void,
	) {}

	async create(payload: unknown): Promise<void> {
		await instances.create(this.env, this.type, { id: this.id, payload });
	}

	sendEvent(event: string, payload: unknown): Promise<void> {
		return instances.sendEvent(this.env, this.id, event, payload);
	}

	control(operation: 'pause' | 'resume' | 'terminate' | 'restart'): Promise<WorkflowStatus> {
		return instances[operation](this.env, this.id);
	}

	status(): Promise<WorkflowStatusInfo> {
		return instances.status(this.env, this.id);
	}

	async steps(): Promise<StepSummary[]> {
		const items: StepSummary[] = [];
		let cursor: string | null = null;
		do {
			const page = await instances.steps(this.env, this.id, { cursor, limit: 100 });
			items.push(...page.items);
			cursor = page.nextCursor;
		} while (cursor !== null);
		return items;
	}

	/** Read from the object's own Drizzle storage, page by page, as `GET /workflows/:id/history` pages it. */
	async history(): Promise<HistoryEvent[]> {
		const events: HistoryEvent[] = [];
		let after: string | null = null;
		do {
			const page: HistoryPage = await runInDurableObject(this.stub(), (_instance, state) => {
				const store = new DrizzleInstanceStore(drizzle(state.storage, { schema }), state.storage);
				const row = store.readInstance();
				if (!row) throw new NotFoundError(`no such workflow instance "${this.id}"`);
				return historyPage(row, store, { after, limit: 1000 });
			});
			events.push(...page.events);
			after = page.nextCursor;
		} while (after !== null);
		return events;
	}

	async idle(): Promise<void> {
		await runInDurableObject(this.stub(), (instance) => (instance as unknown as WorkflowRunnerBase)[idleForTests]());
	}

	now(): number {
		return runtimeClock.now();
	}

	moveClockTo(at: number): void {
		const ahead = at - runtimeClock.now();
		if (ahead > 0) runtimeClock.offsetMs += ahead;
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
