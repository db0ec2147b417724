import { assertValidIdempotencyKey } from '../engine/event-keys';
import { uuidv7 } from '../engine/ids';
import { assertJsonDepth } from '../engine/json';
import type { IndexEntry } from '../engine/index-entry';
import { archivedHistoryPage } from '../engine/archive';
import type { ChildOutcome, ParentRef } from '../engine/child-workflows';
import type { DeleteFilter, DeleteResult } from '../engine/deletion';
import type { HistoryPage } from '../engine/history';
import type { CreateResult, InstanceEngine, RestartOptions } from '../engine/instance-engine';
import type { StepPage, WorkflowStatus, WorkflowStatusInfo } from '../engine/types';
import { operation } from './operation';
import {
	AcceptedSchema,
	ControlSchema,
	CreateBody,
	CreatedSchema,
	DeletedSchema,
	DeleteQuery,
	DetailSchema,
	EventHeaders,
	EventParams,
	EventPayload,
	HistoryPageSchema,
	HistoryQuery,
	IdParam,
	ReindexSchema,
	RestartBody,
	StepPageSchema,
	StepsQuery,
} from './schemas';

/** A pause, resume or terminate: no input but the id, the new status out. */
function control(action: 'pause' | 'resume' | 'terminate', run: (engine: InstanceEngine) => WorkflowStatus) {
	return operation({
		rpc: action,
		helper: (_type: string, id: string) => ({ id }),
		run: (instance, _input: { id: string }): WorkflowStatus => run(instance.existing()),
		http: {
			method: 'post',
			path: `/workflows/{id}/${action}`,
			summary: `${action[0]!.toUpperCase()}${action.slice(1)} an instance`,
			request: { params: IdParam },
			responses: { 200: { schema: ControlSchema, description: 'The new status' } },
			errors: [400, 401, 404, 409],
			input: (request) => ({ id: request.param.id }),
			reply: (status: WorkflowStatus, { id }) => ({ status: 200, body: { id, status } }),
		},
	});
}

/**
 * Every control operation of a workflow instance, declared once: its RPC
 * method, its static helper, its HTTP route and the engine code it runs. A new
 * operation is one entry here plus its engine code; the Durable Object, the
 * instance client (`instances`), `Workflow.<helper>` and the REST API follow.
 * Helpers whose types depend on the workflow class (payload, events, output)
 * are refined in `src/workflow.ts` (`TypedHelpers`); the others are typed from
 * their entry. Routes are registered in this order.
 */
export const operations = {
	create: operation({
		rpc: 'create',
		helper: (type: string, options: { id?: string; payload?: unknown }) => ({ type, ...(options.id !== undefined ? { id: options.id } : {}), payload: options.payload }),
		// `parent` is set only by a parent's step.invoke / step.start (the HTTP route never sets it).
		prepare: (input: { id?: string; type: string; payload?: unknown; parent?: ParentRef }) => {
			const id = input.id ?? uuidv7();
			assertJsonDepth(input.payload, 'payload');
			return { id, type: input.type, payload: input.payload, ...(input.parent !== undefined ? { parent: input.parent } : {}) };
		},
		run: (instance, input): Promise<CreateResult> => instance.create(input as { id: string; type: string; payload: unknown; parent?: ParentRef }),
		http: {
			method: 'post',
			path: '/workflows',
			summary: 'Start a workflow instance (idempotent by id)',
			request: { body: { schema: CreateBody, required: true } },
			responses: {
				201: { schema: CreatedSchema, description: 'Created' },
				200: { schema: CreatedSchema, description: 'Already existed with this type and payload' },
			},
			errors: [400, 401, 409, 413, 415],
			input: ({ json }, registry) => {
				registry.get(json.type);
				return { type: json.type, ...(json.id !== undefined ? { id: json.id } : {}), payload: json.payload };
			},
			reply: ({ id, type, status, created }) => ({ status: created ? 201 : 200, body: { id, type, status } }),
		},
	}),

	status: operation({
		rpc: 'describe',
		helper: (_type: string, id: string) => ({ id }),
		run: (instance, _input: { id: string }): Promise<WorkflowStatusInfo> =>
			instance.orArchived(
				(engine) => engine.status(),
				(record) => ({ ...record.status, archived: true }),
			),
		http: {
			method: 'get',
			path: '/workflows/{id}',
			summary: 'Full status of one instance, from its Durable Object',
			request: { params: IdParam },
			responses: { 200: { schema: DetailSchema, description: 'The instance' } },
			errors: [400, 401, 404],
			input: (request) => ({ id: request.param.id }),
			reply: (status) => ({ status: 200, body: status }),
		},
	}),

	steps: operation({
		rpc: 'steps',
		helper: (_type: string, id: string, options: { cursor?: string | null; limit?: number } = {}) => ({ id, ...options }),
		run: (instance, input: { id: string; cursor?: string | null; limit?: number }): StepPage =>
			instance.existing().steps({ cursor: input?.cursor ?? null, ...(input?.limit !== undefined ? { limit: input.limit } : {}) }),
		http: {
			method: 'get',
			path: '/workflows/{id}/steps',
			summary: 'The step history, oldest first, every step with its result, by pages',
			request: { params: IdParam, query: StepsQuery },
			responses: { 200: { schema: StepPageSchema, description: 'A page of steps' } },
			errors: [400, 401, 404],
			input: ({ param, query }) => ({ id: param.id, cursor: query.cursor ?? null, ...(query.limit !== undefined ? { limit: Number(query.limit) } : {}) }),
			reply: (page) => ({ status: 200, body: page }),
		},
	}),

	history: operation({
		rpc: 'history',
		helper: (_type: string, id: string, options: { after?: string | null; limit?: number; generation?: number } = {}) => ({ id, ...options }),
		run: (instance, input: { id: string; after?: string | null; limit?: number; generation?: number }): Promise<HistoryPage> => {
			const { id: _id, ...query } = input;
			return instance.orArchived(
				(engine) => engine.history(query),
				(record) => archivedHistoryPage(record, query),
			);
		},
		http: {
			method: 'get',
			path: '/workflows/{id}/history',
			summary: 'The instance history (docs/history-format.md), in sequence order, by pages',
			request: { params: IdParam, query: HistoryQuery },
			responses: { 200: { schema: HistoryPageSchema, description: 'A page of history records' } },
			errors: [400, 401, 404],
			input: ({ param, query }) => ({
				id: param.id,
				...(query.after !== undefined ? { after: query.after } : {}),
				...(query.limit !== undefined ? { limit: Number(query.limit) } : {}),
				...(query.generation !== undefined ? { generation: Number(query.generation) } : {}),
			}),
			reply: (page) => ({ status: 200, body: page }),
		},
	}),

	pause: control('pause', (engine) => engine.pause()),
	resume: control('resume', (engine) => engine.resume()),
	terminate: control('terminate', (engine) => engine.terminate()),
	/**
	 * Reruns a completed, errored, terminated or diverged instance in a new generation: from
	 * the start, or with `from` from that step (the completed steps recorded before it keep
	 * their results). An unknown step is refused (`UNKNOWN_STEP`) and changes nothing.
	 */
	restart: operation({
		rpc: 'restart',
		helper: (_type: string, id: string, options: RestartOptions = {}) => ({ id, ...(options.from !== undefined ? { from: options.from } : {}) }),
		run: (instance, input: { id: string } & RestartOptions): WorkflowStatus =>
			instance.existing().restart(input?.from === undefined ? {} : { from: input.from }),
		http: {
			method: 'post',
			path: '/workflows/{id}/restart',
			summary: 'Restart an instance: from the start, or from a step with {"from": "<step name>"}',
			request: { params: IdParam, body: { schema: RestartBody, required: false } },
			responses: { 200: { schema: ControlSchema, description: 'The new status' } },
			errors: [400, 401, 404, 409, 415],
			input: (request) => ({ id: request.param.id, ...(request.hasBody && request.json?.from !== undefined ? { from: request.json.from } : {}) }),
			reply: (status: WorkflowStatus, { id }) => ({ status: 200, body: { id, status } }),
		},
	}),

	sendEvent: operation({
		rpc: 'sendEvent',
		helper: (_type: string, options: { id: string; event: string; payload: unknown; idempotencyKey?: string }) => options,
		prepare: (input: { id: string; event: string; payload: unknown; idempotencyKey?: string }) => {
			if (input.idempotencyKey !== undefined) assertValidIdempotencyKey(input.idempotencyKey);
			assertJsonDepth(input.payload, `payload of event "${input.event}"`);
			return input;
		},
		run: async (instance, input): Promise<null> => {
			const key = input?.idempotencyKey;
			await instance.existing().sendEvent(input?.event, input?.payload, key === undefined ? {} : { idempotencyKey: key });
			return null;
		},
		http: {
			method: 'post',
			path: '/workflows/{id}/events/{name}',
			summary: 'Send an event; the body is its payload (no body only for an event that declares no payload)',
			request: { params: EventParams, headers: EventHeaders, body: { schema: EventPayload, required: false } },
			responses: { 202: { schema: AcceptedSchema, description: 'Accepted (or accepted before, with this Idempotency-Key)' } },
			errors: [400, 401, 404, 409, 413, 415, 422, 429],
			input: (request) => {
				const key = request.header('idempotency-key');
				// The validator reads a missing body as {}; the engine must see "no payload" to refuse it.
				const payload = request.hasBody ? request.json : undefined;
				return { id: request.param.id, event: request.param.name, payload, ...(key !== undefined ? { idempotencyKey: key } : {}) };
			},
			reply: (_: null, { id, event }) => ({ status: 202, body: { id, event, accepted: true } }),
		},
	}),

	/**
	 * Deletes an instance: its storage, alarm and index entry (archived first
	 * with `archive`); a running one only with `terminate`. An id whose storage
	 * is gone but which has archived records has those erased.
	 */
	delete: operation({
		rpc: 'deleteInstance',
		helper: (_type: string, id: string, options: { terminate?: boolean; archive?: boolean } = {}) => ({ id, ...options }),
		// `only` and `reason` come from a purge (src/client/purge.ts); the HTTP route never sets them.
		run: (instance, input: { id: string; terminate?: boolean; archive?: boolean; only?: DeleteFilter; reason?: 'delete' | 'purge' }): Promise<DeleteResult> =>
			instance.delete(input),
		http: {
			method: 'delete',
			path: '/workflows/{id}',
			summary: 'Delete an instance: its storage, alarm and index entry (archived first with archive=true)',
			request: { params: IdParam, query: DeleteQuery },
			responses: { 200: { schema: DeletedSchema, description: 'Deleted' } },
			errors: [400, 401, 404, 409],
			input: ({ param, query }) => ({
				id: param.id,
				...(query.terminate === 'true' ? { terminate: true } : {}),
				...(query.archive === 'true' ? { archive: true } : {}),
			}),
			reply: ({ id }) => ({ status: 200, body: { id, deleted: true } }),
		},
	}),

	/** For a parent's `step.invoke`: the child's outcome once it has finished, else null. A read that writes nothing. */
	childOutcome: operation({
		rpc: 'childOutcome',
		run: (instance, _input: { id: string }): ChildOutcome | null => instance.existing().childOutcome(),
	}),

	/** A child of this instance finished: a waiting `step.invoke` asks it for its outcome now. */
	childFinished: operation({
		rpc: 'childFinished',
		run: (instance, input: { id: string; childId: string; outcome?: ChildOutcome }): null => {
			instance.existing().childFinished(input?.childId, input?.outcome);
			return null;
		},
	}),

	/** For reconcile: a read that writes nothing. */
	currentIndexEntry: operation({
		rpc: 'currentIndexEntry',
		run: (instance, _input: { id: string }): IndexEntry | null => instance.currentIndexEntry(),
	}),

	/** Puts the instance's current entry in its outbox again and delivers it (the repair for an entry a shard lost). */
	reindex: operation({
		rpc: 'republishIndex',
		run: (instance, _input: { id: string }): Promise<{ entry: IndexEntry; delivered: boolean }> => instance.existing().republishIndex(),
		http: {
			method: 'post',
			path: '/admin/workflows/{id}/reindex',
			summary: 'Make an instance publish its current index entry again and wait for the delivery',
			request: { params: IdParam },
			responses: { 200: { schema: ReindexSchema, description: 'The entry now published' } },
			errors: [400, 401, 404],
			input: (request) => ({ id: request.param.id }),
			reply: ({ entry, delivered }) => ({ status: 200, body: { id: entry.id, type: entry.type, version: entry.version, delivered } }),
		},
	}),
};

export type Operations = typeof operations;
export type OperationName = keyof Operations;
export type InputOf<K extends OperationName> = Operations[K] extends { run(instance: any, input: infer I): any } ? I : never;
export type OutputOf<K extends OperationName> = Operations[K] extends { run(...args: any): infer O } ? Awaited<O> : never;
