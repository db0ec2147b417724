import type { ArchivedInstance } from '../engine/lifecycle/archive-reader';
import type { DeleteResult } from '../engine/lifecycle/deletion';
import type { IndexEntry } from '../engine/index/index-entry';
import type { CreateResult } from '../engine/instance/create';
import type { InstanceEngine } from '../engine/instance/instance-engine';
import type { InlineRead } from '../engine/instance/inline-child';

/** What an operation's engine code reaches on the instance it is sent to (the instance role). */
export interface InstanceAccess {
	create(request: { id: string; type: string; payload: unknown; parent?: unknown; transplant?: unknown; group?: unknown }): Promise<CreateResult>;
	/** The engine of an instance that exists; NOT_FOUND otherwise (and nothing is written). */
	existing(): InstanceEngine;
	/**
	 * `existing()`, for an event or a control: a child its parent runs inline and has not published
	 * yet is published first (its parent hands it over: engine/instance/parts/inline-children.ts).
	 */
	published(): Promise<InstanceEngine>;
	/** The entry the index should hold, or null when there is no such instance. Writes nothing. */
	currentIndexEntry(): IndexEntry | null;
	/** A bulk job's action, applied at most once per job (`delete`: the instance's delete). `input` is unchecked: any caller's. */
	bulkAct(input: unknown): Promise<'applied' | 'already'>;
	/** Deletes the instance (or, when only its archive is left, erases that). `input` is unchecked: any caller's. */
	delete(input: unknown): Promise<DeleteResult>;
	/**
	 * The live instance's answer; else, for a child its parent ran inline and has not published yet,
	 * the parent's answer to `inline` (the same read); else, once it is deleted, its archive's
	 * (NOT_FOUND if none exists).
	 */
	orArchived<T>(live: (engine: InstanceEngine) => T, archived: (archived: ArchivedInstance) => T | Promise<T>, inline?: InlineRead): Promise<T>;
}

/**
 * One control operation of a workflow instance, declared once. The instance
 * client, the typed static helpers of `Workflow` and the RPC method of the
 * Durable Object are all derived from it; its HTTP route, if any, is its entry
 * in `./http.ts`.
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
}

export type AnyOperation = Operation<string, any, any, any>;

/** Declares an operation with its types inferred (the `rpc` name stays a literal). */
export function operation<const Rpc extends string, Input extends { id?: string }, Output, HelperArgs extends unknown[] = never>(
	op: Operation<Rpc, Input, Output, HelperArgs>,
): Operation<Rpc, Input, Output, HelperArgs> {
	return op;
}
