import { AsyncLocalStorage } from 'node:async_hooks';
import type { WorkersSpan, WorkersTracing } from '../../src/runtime/workers-tracer';

/** A span as the fake runtime keeps it: its name, parent, attributes, exceptions, status and whether it ended. */
export class FakeSpan implements WorkersSpan {
	readonly attributes: Record<string, unknown> = {};
	/** The attributes it had when the code that started it first yielded: what it says if it is cut before its end. */
	atStart: Record<string, unknown> | undefined;
	readonly exceptions: { name: string; message: string; code?: string }[] = [];
	status: string | undefined;
	ended = false;
	constructor(readonly name: string, readonly parent: FakeSpan | undefined, readonly sampled: boolean) {}
	/** As workerd reports it: true for a span of a sampled invocation until it ends, false after (measured under wrangler dev 4.164). */
	get isTraced(): boolean {
		return this.sampled && !this.ended;
	}
	setAttributes(attributes: Record<string, unknown>) {
		for (const [k, v] of Object.entries(attributes)) if (v !== undefined) this.attributes[k] = v;
		return this;
	}
	recordException(exception: { name: string; message: string; code?: string }) {
		this.exceptions.push(exception);
	}
	setStatus(status: { code: string }) {
		this.status = status.code;
		return this;
	}
	end() {
		this.ended = true;
	}
}

/**
 * Workers tracing as the runtime offers it (`startActiveSpan`, `getActiveSpan`), with
 * the active span carried by the async context as workerd carries it; `sampled: false` is an
 * invocation head sampling left out.
 */
export class FakeTracing implements WorkersTracing {
	readonly spans: FakeSpan[] = [];
	private readonly active = new AsyncLocalStorage<FakeSpan>();
	readonly root: FakeSpan;
	constructor(sampled = true) {
		this.root = new FakeSpan('invocation', undefined, sampled);
	}
	/** A span that is not made active (what platform instrumentation, a fetch, records). */
	startSpan(name: string): FakeSpan {
		const parent = this.getActiveSpan();
		// The invocation's sampling decides, not the parent's state: a span started under one that ended is recorded (workerd does so).
		const span = new FakeSpan(name, parent, parent.sampled);
		this.spans.push(span);
		return span;
	}
	startActiveSpan<T>(name: string, callback: (span: WorkersSpan) => T): T {
		const span = this.startSpan(name);
		queueMicrotask(() => (span.atStart ??= { ...span.attributes }));
		return this.active.run(span, () => callback(span));
	}
	getActiveSpan(): FakeSpan {
		return this.active.getStore() ?? this.root;
	}
	/** `name attribute=value ...` of the spans, in start order, for readable expectations. */
	named(name: string) {
		return this.spans.filter((s) => s.name === name);
	}
}

/** The names of a span's ancestors, nearest first (the root's `invocation` last). */
export function ancestry(span: FakeSpan): FakeSpan[] {
	const chain: FakeSpan[] = [];
	for (let p = span.parent; p; p = p.parent) chain.push(p);
	return chain;
}
