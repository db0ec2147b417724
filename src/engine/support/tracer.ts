import type { ThrownDescription } from './thrown-value';

/**
 * The engine's narrow port to a tracing system (Workers tracing in production,
 * runtime/workers-tracer.ts; a fake in tests). The engine asks for a span and gets
 * none when there is nothing to record (no tracing API, an unsampled invocation):
 * every call site then skips its tracing at the cost of one check, so a run that
 * is not traced pays nothing measurable.
 */
export interface Tracer {
	/**
	 * Runs `fn` inside a new span named `name`, a child of whatever span is active, and active
	 * itself for `fn` and all it starts (so a step's fetches and storage calls nest under its
	 * attempt). `fn` gets the span, which it ends (it may outlive `fn`: an attempt's outcome is
	 * written after its function returned), or undefined when this invocation records no trace;
	 * then `fn` is simply called.
	 */
	run<T>(name: string, attributes: SpanAttributes, fn: (span: TraceSpan | undefined) => T): T;
}

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

export interface TraceSpan {
	set(attributes: SpanAttributes): void;
	/** Records a failure on the span (an exception event) and marks it as an error. */
	fail(error: ThrownDescription): void;
	end(): void;
}

/** The attribute names shardflow's spans carry (one owner, so a query names them the same everywhere). */
export const SPAN = {
	type: 'shardflow.workflow.type',
	instanceId: 'shardflow.instance.id',
	generation: 'shardflow.instance.generation',
	status: 'shardflow.instance.status',
	step: 'shardflow.step.name',
	kind: 'shardflow.step.kind',
	attempt: 'shardflow.step.attempt',
	outcome: 'shardflow.outcome',
	retryDelayMs: 'shardflow.step.retry_delay_ms',
	rollback: 'shardflow.rollback',
	call: 'shardflow.call',
} as const;
