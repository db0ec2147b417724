import type { HistoryEvent } from '../engine/history/history';
import type { RestartFrom } from '../engine/steps/restart-from';
import { InstanceEngine } from '../engine/instance/instance-engine';
import { MemoryInstanceStore } from '../engine/storage/memory-store';
import type { Registry } from '../engine/definition/registry';
import type { ChildPort } from '../engine/children/child-workflows';
import type { StepFunctionWrapper } from '../engine/steps/step-function-wrapper';
import type { StepSummary, WorkflowStatusInfo } from '../engine/definition/types';
import type { WorkflowStatus } from '../engine/support/statuses';
import { allPages } from './all-pages';
import type { InstanceDriver } from './instance-driver';
import type { VirtualClock } from './virtual-clock';
import { testKitWebhookKey, VirtualHost, type DurableInstance } from './virtual-host';
import { decodeWebhookToken, webhookToken } from '../engine/webhooks/webhook';
import { checkDeleteOptions } from '../engine/lifecycle/deletion';
import { NotFoundError } from '../engine/support/errors';
import type { InstanceAccess } from '../operations/operation';
import { bulkActOn } from '../engine/instance/bulk-receipt';

export interface NodeDriverOptions {
	registry: Registry;
	type: string;
	id: string;
	env: unknown;
	clock: VirtualClock;
	wrapStepFunction: StepFunctionWrapper;
	/** How `step.invoke` / `step.start` reach other instances (the Node namespace's); without it they are refused. */
	children?: ChildPort;
}

/** One instance on the pure engine over `MemoryInstanceStore`, in this process (see `InstanceDriver`). */
export class NodeInstanceDriver implements InstanceDriver {
	readonly id: string;
	private readonly durable: DurableInstance = { store: new MemoryInstanceStore(), alarmAt: undefined };
	private host: VirtualHost;
	private engine: InstanceEngine;

	constructor(private readonly options: NodeDriverOptions) {
		this.id = options.id;
		this.host = this.newHost();
		this.engine = new InstanceEngine(this.host);
	}

	async create(payload: unknown): Promise<void> {
		await this.engine.create(this.id, this.options.type, payload);
	}

	sendEvent(event: string, payload: unknown): Promise<void> {
		return this.engine.sendEvent(event, payload);
	}

	async control(operation: 'pause' | 'resume' | 'terminate' | 'restart', options: { rollback?: boolean; from?: RestartFrom } = {}): Promise<WorkflowStatus> {
		if (operation === 'restart') return this.engine.restart(options.from === undefined ? {} : { from: options.from });
		return operation === 'terminate' ? this.engine.terminate(options) : this.engine[operation]();
	}

	async callWebhook(url: string, body: unknown): Promise<void> {
		const target = await decodeWebhookToken(await testKitWebhookKey(), webhookToken(url));
		this.engine.completeWebhook(target, body);
	}

	async status(): Promise<WorkflowStatusInfo> {
		return this.engine.status();
	}

	steps(): Promise<StepSummary[]> {
		return allPages(async (cursor) => {
			const page = this.engine.steps({ cursor, limit: 100 });
			return { items: page.items, next: page.nextCursor };
		});
	}

	history(): Promise<HistoryEvent[]> {
		return allPages(async (after) => {
			const page = this.engine.history({ after, limit: 1000 });
			return { items: page.events, next: page.nextCursor };
		});
	}

	idle(): Promise<void> {
		return this.host.idle();
	}

	now(): number {
		return this.options.clock.now();
	}

	moveClockTo(at: number): void {
		this.options.clock.moveTo(at);
	}

	async nextAlarm(): Promise<number | undefined> {
		return this.durable.alarmAt;
	}

	async fireAlarm(): Promise<void> {
		this.durable.alarmAt = undefined;
		this.engine.alarm();
		await this.host.idle();
	}

	async crash(): Promise<void> {
		this.host.crash();
		this.host = this.newHost();
		this.engine = new InstanceEngine(this.host);
	}

	async dispose(): Promise<void> {}

	/** The instance as the operation table reaches it in a runner (see node-namespace.ts): its engine, NOT_FOUND before a create. */
	get instance(): InstanceAccess {
		const existing = (): InstanceEngine => {
			if (!this.engine.exists) throw new NotFoundError('no such workflow instance');
			return this.engine;
		};
		const access: InstanceAccess = {
			create: (request) => this.engine.create(request.id, request.type, request.payload, request.parent, undefined, undefined, request.group),
			existing,
			// The Node kit runs no child inline (its driver reaches no other instance).
			published: async () => existing(),
			currentIndexEntry: () => (this.engine.exists ? this.engine.currentIndexEntry() : null),
			delete: (input) => existing().delete(checkDeleteOptions(input)),
			bulkAct: (input) => bulkActOn(access, input),
			// The Node kit has no archive: a deleted instance is gone.
			orArchived: async (live) => live(existing()),
		};
		return access;
	}

	private newHost(): VirtualHost {
		const { registry, env, clock, wrapStepFunction, children } = this.options;
		const host = new VirtualHost({ durable: this.durable, registry, env, clock, wrapStepFunction });
		if (children) host.children = children;
		return host;
	}
}
