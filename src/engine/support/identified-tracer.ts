import type { SpanAttributes, Tracer } from './tracer';

/**
 * `tracer`, with `identity` (the instance's type, id and generation) added to every span it starts, at its start.
 * A step attempt's span then says whose attempt it is on its own, not only through its parent pass: a search on
 * the instance id finds it, and a span whose parent is missing from an export still names its instance.
 */
export function identifiedTracer(tracer: Tracer, identity: SpanAttributes): Tracer {
	return { run: (name, attributes, fn) => tracer.run(name, { ...identity, ...attributes }, fn) };
}
