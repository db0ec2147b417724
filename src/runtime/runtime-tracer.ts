import * as workers from 'cloudflare:workers';
import type { Tracer } from '../engine/support/tracer';
import { workersTracer } from './workers-tracer';

/**
 * This runtime's tracer: Workers tracing where the runtime has custom spans, else none.
 * Read through the module namespace, not a named import, so a runtime without `tracing`
 * loads this module and traces nothing instead of failing to link it.
 */
export const runtimeTracer: Tracer | undefined = workersTracer((workers as unknown as { tracing?: unknown }).tracing);

/**
 * The tracer of a deployment: `runtimeTracer`, unless `SHARDFLOW_TRACING` is `off` (shardflow then
 * starts no span of its own; the platform's spans of requests, RPC calls and storage stay). Also
 * what the bench's A/B of tracing switches (bench/tracing-ab.mjs).
 */
export function tracerOf(env: unknown): Tracer | undefined {
	return (env as { SHARDFLOW_TRACING?: unknown } | undefined)?.SHARDFLOW_TRACING === 'off' ? undefined : runtimeTracer;
}
