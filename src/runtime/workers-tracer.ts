import type { SpanAttributes, TraceSpan, Tracer } from '../engine/support/tracer';

/**
 * The part of Workers tracing (`import { tracing } from 'cloudflare:workers'`, custom spans:
 * changelog 2026-06-16, 2026-07-28 and 2026-09-25) that shardflow uses. Declared here rather than
 * taken from workers-types so that a runtime without it, or a fake in tests, fits the same shape.
 * `startActiveSpan` rather than `startSpan` + `withActiveSpan`: the pinned workerd has no
 * `withActiveSpan` yet, and a span must be active for what it covers to nest under it.
 */
export interface WorkersTracing {
	startActiveSpan<T>(name: string, callback: (span: WorkersSpan) => T): T;
	getActiveSpan(): WorkersSpan | undefined;
}

export interface WorkersSpan {
	readonly isTraced: boolean;
	setAttributes(attributes: SpanAttributes): unknown;
	recordException(exception: { name: string; message: string; code?: string; stack?: string }): void;
	setStatus(status: { code: 'unset' | 'ok' | 'error'; message?: string }): unknown;
	end(): void;
}

/**
 * The engine's Tracer over Workers tracing, or undefined when the runtime has no custom spans
 * (an older workerd, Node): the engine then skips tracing altogether. A span is started only when
 * the invocation is sampled (its active span `isTraced`, or one this tracer started); otherwise the
 * work runs as it would untraced, after one check.
 */
export function workersTracer(tracing: unknown): Tracer | undefined {
	const t = tracing as Partial<WorkersTracing> | undefined;
	if (!t || typeof t.startActiveSpan !== 'function' || typeof t.getActiveSpan !== 'function') return undefined;
	const api = t as WorkersTracing;
	// The spans this tracer started in a sampled invocation. An ended span stays the active one for
	// what it started (a create's first pass runs on the next macrotask, after the call's span
	// ended) but reports `isTraced: false` from then on, while a span started under it is still
	// recorded (both measured under wrangler dev 4.164's local collector): so a span of ours counts
	// as sampled after it ended, or the first pass of every create would go untraced.
	const sampled = new WeakSet<WorkersSpan>();
	return {
		run(name, attributes, fn) {
			const active = api.getActiveSpan();
			if (!active || (active.isTraced !== true && !sampled.has(active))) return fn(undefined);
			return api.startActiveSpan(name, (span) => {
				sampled.add(span);
				span.setAttributes(attributes);
				return fn(workersSpan(span));
			});
		},
	};
}

function workersSpan(span: WorkersSpan): TraceSpan {
	return {
		set: (attributes) => void span.setAttributes(attributes),
		fail: (error) => {
			span.recordException({ name: error.name, message: error.message, ...(error.code ? { code: error.code } : {}), ...(error.stack ? { stack: error.stack } : {}) });
			span.setStatus({ code: 'error', message: error.message });
		},
		end: () => span.end(),
	};
}
