import { tracing } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { runtimeTracer, tracerOf } from '../../src/runtime/runtime-tracer';
import { api } from '../api/helpers';
import { settle, uniqueId } from '../helpers';

describe('Workers tracing in workerd', () => {
	it('finds the custom span API in the pinned workerd, so the engine host is lent a tracer', () => {
		expect(typeof tracing.startSpan).toBe('function');
		expect(runtimeTracer).toBeDefined();
	});

	it('runs a workflow to completion with the tracer lent, whether or not this invocation is sampled', async () => {
		const id = uniqueId('traced');
		expect((await api('POST', '/workflows', { type: 'test', id, payload: { name: 'traced' } })).status).toBe(201);
		await settle(id);
		expect(['running', 'sleeping', 'completed']).toContain((await api('GET', `/workflows/${id}`)).json.status);
		// Outside any custom span the active span is the invocation's root; unsampled, the engine starts none.
		expect(typeof (tracing.getActiveSpan()?.isTraced ?? false)).toBe('boolean');
	});

	it('lends no tracer when SHARDFLOW_TRACING is off, and the runtime\'s otherwise', () => {
		expect(tracerOf({ SHARDFLOW_TRACING: 'off' })).toBeUndefined();
		expect(tracerOf({})).toBe(runtimeTracer);
		expect(tracerOf({ SHARDFLOW_TRACING: 'on' })).toBe(runtimeTracer);
	});
});
