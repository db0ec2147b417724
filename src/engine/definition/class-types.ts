import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { AttributesOf } from '../index/search-attributes';
import type { EventMap, Step, StreamMap, WorkflowStatusInfo } from './types';

// Types read off a workflow class (its static events, streams, payload schema, run's output):
// what the authoring base class (src/workflow.ts) and the client (src/client/) both name, so
// neither imports the other for them.

/** The `step` type of a class's `run()`: its events, streams and search attributes (`Step<EventsOf<W>, StreamsOf<W>, AttributesOf<W>>`). */
export type StepOf<W> = Step<EventsOf<W>, StreamsOf<W>, AttributesOf<W>>;

/** The `static events` of a class, or `{}` when it declares none (then `waitForEvent` does not compile). */
export type EventsOf<W> = W extends { events: infer E extends EventMap } ? E : {};

/** The `static streams` of a class, or `{}` when it declares none (then `step.emit` does not compile). */
export type StreamsOf<W> = W extends { streams: infer S extends StreamMap } ? S : {};

/** What `create` accepts: the schema's input when `static payload` is a schema, else `run`'s payload type. */
export type PayloadInputOf<W> = W extends { payload: infer S extends StandardSchemaV1 }
	? StandardSchemaV1.InferInput<S>
	: W extends abstract new (...args: any) => { run(step: any, payload: infer P): any }
		? P
		: never;

/** What `run` returns once completed. */
export type OutputOf<W> = W extends abstract new (...args: any) => { run(...args: any): Promise<infer O> } ? O : unknown;

/** The payload type `run` receives: the schema's output when `static payload` is a schema. */
export type PayloadOf<S> = S extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<S> : S;

/** The status of an instance, with `output` typed by the workflow class. */
export type TypedStatus<W> = Omit<WorkflowStatusInfo, 'output'> & { output?: OutputOf<W> };
