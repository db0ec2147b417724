import type { z } from 'zod';
import type { ArchiveRecord } from '../engine/archive';
import type { DeleteResult } from '../engine/deletion';
import type { IndexEntry } from '../engine/index-entry';
import type { CreateResult, InstanceEngine } from '../engine/instance-engine';
import type { Registry } from '../engine/registry';

/** What an operation's engine code reaches on the instance it is sent to (the instance role). */
export interface InstanceAccess {
	create(request: { id: string; type: string; payload: unknown; parent?: unknown }): Promise<CreateResult>;
	/** The engine of an instance that exists; NOT_FOUND otherwise (and nothing is written). */
	existing(): InstanceEngine;
	/** The entry the index should hold, or null when there is no such instance. Writes nothing. */
	currentIndexEntry(): IndexEntry | null;
	/** Deletes the instance (or, when only its archive is left, erases that). `input` is unchecked: any caller's. */
	delete(input: unknown): Promise<DeleteResult>;
	/** The live instance's answer or, once it is deleted, its archive record's (NOT_FOUND if neither exists). */
	orArchived<T>(live: (engine: InstanceEngine) => T, archived: (record: ArchiveRecord) => T): Promise<T>;
}

/** The parts of an HTTP request an operation maps to its input (validated by the route's schemas). */
export interface HttpRequestView {
	param: any;
	query: any;
	/** The validated JSON body (the validator reads a missing optional body as `{}`: see `hasBody`). */
	json: any;
	hasBody: boolean;
	header(name: string): string | undefined;
}

export interface HttpResponseSpec {
	schema: z.ZodType;
	description: string;
}

/** How an operation is served over HTTP (registered by `src/api/operation-routes.ts`). */
export interface HttpBinding<Input, Output> {
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
	/** The request, once validated, as the operation's input. `registry` lets a route refuse an unknown type early. */
	input(request: HttpRequestView, registry: Registry): Input;
	/** The response for the operation's output. */
	reply(output: Output, input: Input): { status: number; body: unknown };
}

/**
 * One control operation of a workflow instance, declared once. The instance
 * client, the typed static helpers of `Workflow`, the RPC method of the
 * Durable Object and the HTTP route are all derived from it.
 */
export interface Operation<Rpc extends string, Input extends { id?: string }, Output, HelperArgs extends unknown[]> {
	/** The RPC method of the Durable Object (usually the operation's name). */
	rpc: Rpc;
	/** The static helper `Workflow.<name>(env, ...args)`: maps its arguments (after the class's type) to the input. Absent: no helper. */
	helper?: (type: string, ...args: HelperArgs) => NoInfer<Input>;
	/** Checks and completes the input on the caller's side, before any object is touched (cheap checks only: hot paths run it). */
	prepare?(input: Input): Input;
	/** The engine code, run inside the instance. `input` is whatever the caller sent: never trust its shape. */
	run(instance: InstanceAccess, input: Input): Output | Promise<Output>;
	http?: HttpBinding<NoInfer<Input>, NoInfer<Output>>;
}

export type AnyOperation = Operation<string, any, any, any>;

/** Declares an operation with its types inferred (the `rpc` name stays a literal). */
export function operation<const Rpc extends string, Input extends { id?: string }, Output, HelperArgs extends unknown[] = never>(
	op: Operation<Rpc, Input, Output, HelperArgs>,
): Operation<Rpc, Input, Output, HelperArgs> {
	return op;
}
