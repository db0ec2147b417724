import type { HistoryEvent } from '../engine/history/history';
import type { RestartFrom } from '../engine/steps/restart-from';
import type { StepSummary, WorkflowStatusInfo } from '../engine/definition/types';
import type { WorkflowStatus } from '../engine/support/statuses';

/**
 * What the test kit needs of one instance, wherever it runs: on the pure
 * engine in Node (`NodeInstanceDriver`) or in a real `WorkflowRunner` inside
 * workerd (`shardflow/testing/workerd`). The kit's API, its clock and its
 * modifiers are written once over this port.
 */
export interface InstanceDriver {
	readonly id: string;
	create(payload: unknown): Promise<void>;
	sendEvent(event: string, payload: unknown): Promise<void>;
	control(operation: 'pause' | 'resume' | 'terminate' | 'restart', options?: { rollback?: boolean; from?: RestartFrom }): Promise<WorkflowStatus>;
	/** POSTs `body` to a webhook URL the instance issued (`step.webhook`), as an outside system would; refusals throw their typed errors. */
	callWebhook(url: string, body: unknown): Promise<void>;
	status(): Promise<WorkflowStatusInfo>;
	/** Every step of the current run, oldest first (all pages). */
	steps(): Promise<StepSummary[]>;
	/** Every history record of the current generation (all pages). */
	history(): Promise<HistoryEvent[]>;
	/** Resolves once the replay loop and index delivery have nothing left to do. */
	idle(): Promise<void>;
	/** The instance's clock. */
	now(): number;
	/** Moves the instance's clock forward to `at` (never back). */
	moveClockTo(at: number): void;
	/** When the instance's alarm is set to fire, if it is. */
	nextAlarm(): Promise<number | undefined>;
	/** Fires the alarm now, as the runtime does when its time has come. */
	fireAlarm(): Promise<void>;
	/** Kills the instance's isolate mid-flight and brings a fresh one up over the same storage. */
	crash(): Promise<void>;
	/** Releases what the driver holds (workerd: the mocks it registered). */
	dispose(): Promise<void>;
}
