import type { z } from 'zod';
import type { Registry } from '../engine/definition/registry';
import type { WorkflowStatus } from '../engine/support/statuses';
import { keepReservedAttributeNames } from '../engine/index/search-attributes';
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
	TerminateQuery,
} from './schemas';
import type { InputOf, OperationName, OutputOf } from './table';

/** The parts of an HTTP request an operation maps to its input (validated by the route's schemas). */
export interface HttpRequestView {
	param: any;
	query: any;
	/** The validated JSON body (the validator reads a missing optional body as `{}`: see `hasBody`). */
	json: any;
	/** The JSON body as parsed, before the schema dropped anything: only for a binding with `readsRawJson`. */
	rawJson?: any;
	hasBody: boolean;
	header(name: string): string | undefined;
}

export interface HttpResponseSpec {
	schema: z.ZodType;
	description: string;
}

/** A declared route: what `src/api/declared-routes.ts` turns into an OpenAPI route. */
export interface HttpRoute {
	method: 'get' | 'post' | 'delete';
	/** OpenAPI style: `/workflows/{id}/steps`. */
	path: string;
	summary: string;
	request?: {
		params?: z.ZodObject;
		query?: z.ZodObject;
		headers?: z.ZodObject;
		body?: { schema: z.ZodType; required: boolean };
	};
	/** Success responses by status. */
	responses: Record<number, HttpResponseSpec>;
	/** Error statuses the route documents (each answers the shared error body). */
	errors: number[];
	/** The route needs the body as parsed too (`HttpRequestView.rawJson`; one more parse of it). */
	readsRawJson?: boolean;
}

/** How an operation is served over HTTP (registered by `src/api/operation-routes.ts`). */
export interface HttpBinding<Input, Output> extends HttpRoute {
	/** The request, once validated, as the operation's input. `registry` lets a route refuse an unknown type early. */
	input(request: HttpRequestView, registry: Registry): Input;
	/** The response for the operation's output. */
	reply(output: Output, input: Input): { status: number; body: unknown };
}

/** The HTTP route of each operation that has one, typed by its entry in the operation table. */
export type HttpBindings = { [K in OperationName]?: HttpBinding<InputOf<K>, OutputOf<K>> };

/** The route of a pause, resume, terminate or restart. */
function controlRoute(action: 'pause' | 'resume'): HttpBinding<{ id: string }, WorkflowStatus> {
	return {
		method: 'post',
		path: `/workflows/{id}/${action}`,
		summary: `${action[0]!.toUpperCase()}${action.slice(1)} an instance`,
		request: { params: IdParam },
		responses: { 200: { schema: ControlSchema, description: 'The new status' } },
		errors: [400, 401, 404, 409],
		input: (request) => ({ id: request.param.id }),
		reply: (status: WorkflowStatus, { id }) => ({ status: 200, body: { id, status } }),
	};
}

/**
 * The REST API of the control operations, keyed by operation (`./table.ts`):
 * method, path, zod schemas (which validate requests and generate
 * /openapi.json) and the mapping between request and input, output and
 * response. Only the host imports this file: zod stays out of callers'
 * bundles. An operation without an entry here has no route.
 */
export const httpBindings: HttpBindings = {
	create: {
		method: 'post',
		path: '/workflows',
		summary: 'Start a workflow instance (idempotent by id)',
		request: { body: { schema: CreateBody, required: true } },
		responses: {
			201: { schema: CreatedSchema, description: 'Created' },
			200: { schema: CreatedSchema, description: 'Already existed with this type and payload' },
		},
		errors: [400, 401, 409, 413, 415, 503],
		readsRawJson: true,
		input: ({ json, rawJson }, registry) => {
			registry.get(json.type);
			const attributes = keepReservedAttributeNames(json.attributes, rawJson?.attributes);
			return { type: json.type, ...(json.id !== undefined ? { id: json.id } : {}), ...(json.group !== undefined ? { group: json.group } : {}), payload: json.payload, ...(attributes !== undefined ? { attributes } : {}) };
		},
		reply: ({ id, type, status, created, group, groupFallback }) => ({
			status: created ? 201 : 200,
			body: { id, type, status, ...(group !== undefined ? { group } : {}), ...(groupFallback !== undefined ? { groupFallback } : {}) },
		}),
	},
	status: {
		method: 'get',
		path: '/workflows/{id}',
		summary: 'Full status of one instance, from its Durable Object',
		request: { params: IdParam },
		responses: { 200: { schema: DetailSchema, description: 'The instance' } },
		errors: [400, 401, 404],
		input: (request) => ({ id: request.param.id }),
		reply: (status) => ({ status: 200, body: status }),
	},
	steps: {
		method: 'get',
		path: '/workflows/{id}/steps',
		summary: 'The step history, oldest first, every step with its result, by pages',
		request: { params: IdParam, query: StepsQuery },
		responses: { 200: { schema: StepPageSchema, description: 'A page of steps' } },
		errors: [400, 401, 404],
		input: ({ param, query }) => ({ id: param.id, cursor: query.cursor ?? null, ...(query.limit !== undefined ? { limit: Number(query.limit) } : {}) }),
		reply: (page) => ({ status: 200, body: page }),
	},
	history: {
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
	pause: controlRoute('pause'),
	resume: controlRoute('resume'),
	terminate: {
		method: 'post',
		path: '/workflows/{id}/terminate',
		summary: 'Terminate an instance (with rollback=true, after running the rollbacks of its completed steps)',
		request: { params: IdParam, query: TerminateQuery },
		responses: { 200: { schema: ControlSchema, description: 'The new status: terminated, or rolling_back with rollback=true' } },
		errors: [400, 401, 404, 409],
		input: ({ param, query }) => ({ id: param.id, ...(query.rollback === 'true' ? { rollback: true } : {}) }),
		reply: (status: WorkflowStatus, { id }) => ({ status: 200, body: { id, status } }),
	},
	restart: {
		method: 'post',
		path: '/workflows/{id}/restart',
		summary: 'Restart an instance: from the start, or from a step with {"from": "<step name>"} or {"from": {"name", "type", "count"}}',
		request: { params: IdParam, body: { schema: RestartBody, required: false } },
		responses: { 200: { schema: ControlSchema, description: 'The new status' } },
		errors: [400, 401, 404, 409, 415],
		input: (request) => ({ id: request.param.id, ...(request.hasBody && request.json?.from !== undefined ? { from: request.json.from } : {}) }),
		reply: (status: WorkflowStatus, { id }) => ({ status: 200, body: { id, status } }),
	},
	sendEvent: {
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
	delete: {
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
	reindex: {
		method: 'post',
		path: '/admin/workflows/{id}/reindex',
		summary: 'Make an instance publish its current index entry again and wait for the delivery',
		request: { params: IdParam },
		responses: { 200: { schema: ReindexSchema, description: 'The entry now published' } },
		errors: [400, 401, 404],
		input: (request) => ({ id: request.param.id }),
		reply: ({ entry, delivered }) => ({ status: 200, body: { id: entry.id, type: entry.type, version: entry.version, delivered } }),
	},
};
