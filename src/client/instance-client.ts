import type { CreateResult } from '../engine/instance-engine';
import { assertValidWorkflowId, uuidv7 } from '../engine/ids';
import { assertValidIdempotencyKey } from '../engine/event-keys';
import { assertJsonDepth } from '../engine/json';
import type { SendEventOptions } from '../engine/event-keys';
import type { StepPage, WorkflowStatus, WorkflowStatusInfo } from '../engine/types';
import { unwrap, type InstanceRpc } from './rpc';

/** The one binding every caller needs: the `WorkflowRunner` Durable Object namespace. */
export interface ShardflowEnv {
	WORKFLOW_RUNNER: DurableObjectNamespace<any>;
	/**
	 * Signs listing cursors when set (a secret). Unset, every Worker bound to the
	 * namespace shares a key generated once and kept in the `__keys` object.
	 */
	CURSOR_SECRET?: string;
}

/** The namespace without its generic stub types, which are too deep for `tsc` when cast. */
export function namespace(env: ShardflowEnv): { getByName(name: string): unknown } {
	const ns = env.WORKFLOW_RUNNER as unknown as { idFromName(name: string): DurableObjectId; get(id: DurableObjectId): unknown };
	return { getByName: (name) => ns.get(ns.idFromName(name)) };
}

/** The stub of a workflow instance. Refuses reserved and malformed ids before any object is touched. */
export function instanceStub(env: ShardflowEnv, id: string): InstanceRpc {
	assertValidWorkflowId(id);
	return namespace(env).getByName(id) as InstanceRpc;
}

/** Untyped control calls by type name; the typed ones are the static helpers of `Workflow`. */
export const instances = {
	async create(env: ShardflowEnv, type: string, options: { id?: string; payload?: unknown }): Promise<CreateResult> {
		const id = options.id ?? uuidv7();
		assertJsonDepth(options.payload, 'payload');
		return unwrap(instanceStub(env, id).create({ id, type, payload: options.payload }));
	},
	async status(env: ShardflowEnv, id: string): Promise<WorkflowStatusInfo> {
		return unwrap(instanceStub(env, id).describe());
	},
	/** One page of the step history, oldest first, every step with its result. */
	async steps(env: ShardflowEnv, id: string, options: { cursor?: string | null; limit?: number } = {}): Promise<StepPage> {
		return unwrap(instanceStub(env, id).steps({ cursor: options.cursor ?? null, ...(options.limit !== undefined ? { limit: options.limit } : {}) }));
	},
	async sendEvent(env: ShardflowEnv, id: string, event: string, payload: unknown, options: SendEventOptions = {}): Promise<void> {
		if (options.idempotencyKey !== undefined) assertValidIdempotencyKey(options.idempotencyKey);
		assertJsonDepth(payload, `payload of event "${event}"`);
		const key = options.idempotencyKey;
		await unwrap(instanceStub(env, id).sendEvent({ event, payload, ...(key !== undefined ? { idempotencyKey: key } : {}) }));
	},
	async pause(env: ShardflowEnv, id: string): Promise<WorkflowStatus> {
		return unwrap(instanceStub(env, id).pause());
	},
	async resume(env: ShardflowEnv, id: string): Promise<WorkflowStatus> {
		return unwrap(instanceStub(env, id).resume());
	},
	async terminate(env: ShardflowEnv, id: string): Promise<WorkflowStatus> {
		return unwrap(instanceStub(env, id).terminate());
	},
	async restart(env: ShardflowEnv, id: string): Promise<WorkflowStatus> {
		return unwrap(instanceStub(env, id).restart());
	},
};
