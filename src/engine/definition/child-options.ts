import type { StandardSchemaV1 } from '@standard-schema/spec';

// What a workflow names when it starts a child (`step.invoke`, `step.start`): part of the
// step API's types (types.ts), so it sits in definition/, below children/ which runs them.

/** What terminating the parent does to an unfinished child: terminate it (default) or leave it running. */
export type OnParentTerminate = 'terminate' | 'abandon';

/** Options of `step.invoke` and `step.start`. */
export interface ChildOptions<P> {
	payload: P;
	/** The child's id; by default derived from the parent's id, its generation and the step name (see `childIdFor`). */
	id?: string;
	/** `'abandon'` leaves the child running when the parent is terminated (default `'terminate'`). */
	onParentTerminate?: OnParentTerminate;
	/**
	 * `true` lets the child's type live in another group than the parent (its type's pinned
	 * group, or the one it chooses from the payload): the child is created in its own group,
	 * under an id of that group, and never runs inline. The child's output is then stored in the
	 * parent's history too, and the pair is not atomic (docs/residency.md "Across groups").
	 * Without it, such a child is refused (CROSS_GROUP).
	 */
	allowCrossGroup?: boolean;
}

/** A workflow class as `step.invoke` sees it: its type, and for the types its payload and output. */
export type ChildClass = { readonly type: string; new (...args: any): { run(step: any, payload: any): Promise<unknown> } };
/** What a child's create accepts: the schema's input when `static payload` is a schema, else `run`'s payload type. */
export type ChildPayload<C> = C extends { payload: infer S extends StandardSchemaV1 }
	? StandardSchemaV1.InferInput<S>
	: C extends abstract new (...args: any) => { run(step: any, payload: infer P): any }
		? P
		: never;
/** What `run` of a child returns. */
export type ChildOutput<C> = C extends abstract new (...args: any) => { run(...args: any): Promise<infer O> } ? O : unknown;
