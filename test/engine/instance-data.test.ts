import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ErrorCode } from '../../src/engine/support/errors';
import { MAX_BUFFERED_EVENTS, MAX_BUFFERED_EVENT_BYTES } from '../../src/engine/support/limits';
import { toStoredJson } from '../../src/engine/support/json';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf, startInstance } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

const MB = 1_000_000;

class BigResults extends Workflow<{ steps: number; bytes: number }, number> {
	static override readonly type = 'big-results';
	async run(step: Step, { steps, bytes }: { steps: number; bytes: number }) {
		for (let i = 0; i < steps; i++) await step.do(`s${i}`, () => `${i}:`.padEnd(bytes, 'x'));
		return steps;
	}
}

const inboxEvents = { msg: z.object({ n: z.number(), pad: z.string().optional() }), ignored: z.object({ blob: z.string() }) };

class Inbox extends Workflow<{ count: number }, number[]> {
	static override readonly type = 'inbox';
	static override events = inboxEvents;
	static override payload = z.object({ count: z.number() });
	async run(step: Step<typeof inboxEvents>, { count }: { count: number }) {
		const seen: number[] = [];
		for (let i = 0; i < count; i++) seen.push((await step.waitForEvent('msg', { name: `msg-${i}` })).n);
		return seen;
	}
}

/** Returns whatever `kind` names from a step: values JSON would silently change. */
const unfaithful: Record<string, () => unknown> = {
	date: () => new Date(0),
	map: () => new Map([['a', 1]]),
	set: () => new Set([1]),
	'class instance': () => new (class Point { x = 1 })(),
	'undefined in an array': () => [1, undefined],
	NaN: () => NaN,
	Infinity: () => ({ n: -Infinity }),
	function: () => ({ f: () => 1 }),
	symbol: () => ({ s: Symbol('s') }),
	bigint: () => ({ b: 1n }),
	cycle: () => {
		const a: Record<string, unknown> = {};
		a.self = a;
		return a;
	},
};

let executions = 0;
class Unfaithful extends Workflow<{ kind: string }, unknown> {
	static override readonly type = 'unfaithful';
	static override defaults = { retries: { limit: 3, delay: '1s', backoff: 'constant' as const } };
	async run(step: Step, { kind }: { kind: string }) {
		// Typed as unknown: the compile-time check refuses most of these already; this tests the run-time guard.
		return step.do(`make-${kind}`, () => (executions++, unfaithful[kind]!()));
	}
}

const registry = registryOf(BigResults, Inbox, Unfaithful);

describe('status of an instance with large step results', () => {
	it('stays bounded when results add up to more than the 32 MiB RPC limit, and pages the rest', async () => {
		const { engine } = await startInstance(registry, 'big-results', { steps: 40, bytes: MB });
		const status = engine.status();
		expect(status.status).toBe('completed');
		expect(new TextEncoder().encode(JSON.stringify(status)).byteLength).toBeLessThan(8 * 1024 * 1024);
		expect(status.stepCounts).toEqual({ total: 40, completed: 40 });
		expect(status.steps.at(-1)).toMatchObject({ name: 's39', status: 'completed', result: `39:`.padEnd(MB, 'x') });
		expect(status.steps.some((s) => s.resultOmitted)).toBe(true);

		const names: string[] = [];
		let cursor: string | null = null;
		do {
			const page = engine.steps({ cursor });
			expect(new TextEncoder().encode(JSON.stringify(page)).byteLength).toBeLessThan(8 * 1024 * 1024);
			for (const s of page.items) {
				expect(s.result).toBe(`${s.name.slice(1)}:`.padEnd(MB, 'x'));
				names.push(s.name);
			}
			cursor = page.nextCursor;
		} while (cursor);
		expect(names).toEqual(Array.from({ length: 40 }, (_, i) => `s${i}`));
	}, 30_000); // 40 MiB of results through the store: seconds on a loaded machine

	it('shows a window of the most recent steps and counts the ones before it', async () => {
		const { engine } = await startInstance(registry, 'big-results', { steps: 250, bytes: 1 });
		const status = engine.status();
		expect(status.stepCounts.total).toBe(250);
		expect(status.steps).toHaveLength(100);
		expect(status.steps[0]!.name).toBe('s150');
		expect(status.stepsBefore).toBe(150);
		const first = engine.steps({ limit: 10 });
		expect(first.items.map((s) => s.name)).toEqual(Array.from({ length: 10 }, (_, i) => `s${i}`));
		expect(engine.steps({ cursor: first.nextCursor, limit: 10 }).items[0]!.name).toBe('s10');
	});

	it('refuses a step cursor it did not issue', async () => {
		const { engine } = await startInstance(registry, 'big-results', { steps: 1, bytes: 1 });
		expect(() => engine.steps({ cursor: 'forged' })).toThrow(expect.objectContaining({ code: ErrorCode.InvalidCursor }));
	});
});

describe('values that JSON would change', () => {
	it.for(Object.keys(unfaithful))('refuses a step result holding a %s, failing the step at once and naming it', async (kind) => {
		executions = 0;
		const { engine } = await startInstance(registry, 'unfaithful', { kind });
		const status = engine.status();
		expect(status.status).toBe('errored');
		expect(status.error!.message).toContain(`make-${kind}`);
		expect(status.steps[0]).toMatchObject({ status: 'failed', attempts: 1, error: { name: 'ValidationError' } });
		expect(status.steps[0]!.error!.message).toMatch(/not JSON-compatible|not JSON-serialisable/);
		expect(executions).toBe(1);
	});

	it.for([
		['plain objects, arrays, strings, finite numbers, booleans, null', { a: [1, 'two', true, null, { b: 2.5 }] }],
		['an object without a prototype', Object.assign(Object.create(null), { a: 1 })],
		['undefined as an object property (it is left out, as JSON does)', { a: undefined, b: 1 }],
		['undefined at the top (stored as no value)', undefined],
	] as const)('accepts %s', ([, value]) => {
		expect(() => toStoredJson(value, 'value')).not.toThrow();
	});

	it('names the path of the offending value', () => {
		expect(() => toStoredJson({ user: { joined: new Date(0) } }, 'result of step "load"')).toThrow(/result of step "load".*\$\.user\.joined.*Date/);
	});
});

describe('re-creating an id', () => {
	it('answers the existing instance for the same payload, whatever its key order', async () => {
		const { engine } = await startInstance(registry, 'big-results', { steps: 1, bytes: 1 });
		await expect(engine.create('wf-1', 'big-results', { bytes: 1, steps: 1 })).resolves.toMatchObject({ created: false, status: 'completed' });
	});

	it('refuses another payload with PAYLOAD_MISMATCH and keeps the stored one', async () => {
		const { engine } = await startInstance(registry, 'big-results', { steps: 1, bytes: 1 });
		await expect(engine.create('wf-1', 'big-results', { steps: 2, bytes: 1 })).rejects.toMatchObject({ code: ErrorCode.PayloadMismatch });
		expect(engine.status().payload).toEqual({ steps: 1, bytes: 1 });
	});

	it('compares against the payload after restart, which keeps it', async () => {
		const { engine, host } = await startInstance(registry, 'big-results', { steps: 1, bytes: 1 });
		engine.restart();
		await host.idle();
		await expect(engine.create('wf-1', 'big-results', { steps: 1, bytes: 1 })).resolves.toMatchObject({ created: false });
		await expect(engine.create('wf-1', 'big-results', { steps: 3, bytes: 1 })).rejects.toMatchObject({ code: ErrorCode.PayloadMismatch });
	});
});

describe('buffered events', () => {
	it(`refuses more than ${MAX_BUFFERED_EVENTS} buffered events with EVENT_BUFFER_FULL`, async () => {
		const { engine, host } = await startInstance(registry, 'inbox', { count: 1 });
		for (let i = 0; i < MAX_BUFFERED_EVENTS; i++) await engine.sendEvent('ignored', { blob: '' });
		await expect(engine.sendEvent('ignored', { blob: '' })).rejects.toMatchObject({ code: ErrorCode.EventBufferFull });
		expect(host.store.events).toHaveLength(MAX_BUFFERED_EVENTS);
		expect(engine.status().bufferedEvents).toBe(MAX_BUFFERED_EVENTS);
	}, 30_000); // the in-memory store copies its state per transaction: 1000 sends take a few seconds

	it(`refuses an event that would take the buffer past ${MAX_BUFFERED_EVENT_BYTES} bytes`, async () => {
		const { engine, host } = await startInstance(registry, 'inbox', { count: 1 });
		const blob = 'x'.repeat(MB);
		const fits = Math.floor(MAX_BUFFERED_EVENT_BYTES / (MB + 12));
		for (let i = 0; i < fits; i++) await engine.sendEvent('ignored', { blob });
		await expect(engine.sendEvent('ignored', { blob })).rejects.toMatchObject({ code: ErrorCode.EventBufferFull });
		expect(host.store.events).toHaveLength(fits);
		// A waiter consuming events makes room again.
		await engine.sendEvent('msg', { n: 1 });
		await host.idle();
		expect(engine.status().status).toBe('completed');
	});

	it('never lets a full buffer of one event block the event the instance waits for (limits hold per event name)', async () => {
		const { engine, host } = await startInstance(registry, 'inbox', { count: 1 });
		const blob = 'x'.repeat(MB);
		const fits = Math.floor(MAX_BUFFERED_EVENT_BYTES / (MB + 12));
		for (let i = 0; i < fits; i++) await engine.sendEvent('ignored', { blob });
		await expect(engine.sendEvent('ignored', { blob })).rejects.toMatchObject({ code: ErrorCode.EventBufferFull });
		// The awaited event is as big as the ones that filled the buffer: it still gets in.
		await engine.sendEvent('msg', { n: 1, pad: blob });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed' });
	});

	it('drops unconsumed events when the instance finishes, and counts them in the status', async () => {
		const { engine, host } = await startInstance(registry, 'inbox', { count: 1 });
		await engine.sendEvent('ignored', { blob: 'a' });
		await engine.sendEvent('ignored', { blob: 'b' });
		await engine.sendEvent('msg', { n: 7 });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: [7], bufferedEvents: 0, droppedEvents: 2 });
		expect(host.store.events).toEqual([]);
	});

	it('drops unconsumed events on terminate', async () => {
		const { engine, host } = await startInstance(registry, 'inbox', { count: 1 });
		await engine.sendEvent('ignored', { blob: 'a' });
		engine.terminate();
		expect(host.store.events).toEqual([]);
		expect(engine.status()).toMatchObject({ status: 'terminated', droppedEvents: 1 });
	});
});

describe('idempotent event sends', () => {
	it('accepts a key once: a retry is answered the same and buffers nothing, even after the event was consumed', async () => {
		const { engine, host } = await startInstance(registry, 'inbox', { count: 2 });
		await engine.sendEvent('msg', { n: 1 }, { idempotencyKey: 'k-1' });
		await host.idle();
		expect(engine.status().steps.map((s) => s.status)).toEqual(['completed', 'waiting']);
		await engine.sendEvent('msg', { n: 1 }, { idempotencyKey: 'k-1' });
		await host.idle();
		expect(engine.status().status).toBe('waiting');
		expect(host.store.events).toEqual([]);
		await engine.sendEvent('msg', { n: 2 }, { idempotencyKey: 'k-2' });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: [1, 2] });
		// After the instance finished, a retry of an accepted send is still answered the same.
		await expect(engine.sendEvent('msg', { n: 2 }, { idempotencyKey: 'k-2' })).resolves.toBeUndefined();
	});

	it('buffers concurrent retries of one key once', async () => {
		const { engine, host } = await startInstance(registry, 'inbox', { count: 5 });
		engine.pause();
		await Promise.all(Array.from({ length: 5 }, () => engine.sendEvent('msg', { n: 1 }, { idempotencyKey: 'same' })));
		expect(host.store.events).toHaveLength(1);
	});

	it('refuses the same key with another event or payload with IDEMPOTENCY_KEY_REUSED', async () => {
		const { engine, host } = await startInstance(registry, 'inbox', { count: 3 });
		engine.pause();
		await engine.sendEvent('msg', { n: 1 }, { idempotencyKey: 'k' });
		await expect(engine.sendEvent('msg', { n: 2 }, { idempotencyKey: 'k' })).rejects.toMatchObject({ code: ErrorCode.IdempotencyKeyReused });
		await expect(engine.sendEvent('ignored', { blob: '' }, { idempotencyKey: 'k' })).rejects.toMatchObject({ code: ErrorCode.IdempotencyKeyReused });
		expect(host.store.events).toHaveLength(1);
	});

	it.for(['', 'x'.repeat(256), 'with space', 'naïve'])('refuses the malformed key %j', async (key) => {
		const { engine } = await startInstance(registry, 'inbox', { count: 1 });
		await expect(engine.sendEvent('msg', { n: 1 }, { idempotencyKey: key })).rejects.toMatchObject({ code: ErrorCode.InvalidIdempotencyKey });
	});

	it('sends without a key are not deduplicated', async () => {
		const host = new VirtualHost({ registry });
		const engine = host.engine();
		await engine.create('wf-1', 'inbox', { count: 2 });
		await engine.sendEvent('msg', { n: 1 });
		await engine.sendEvent('msg', { n: 1 });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: [1, 1] });
	});
});
