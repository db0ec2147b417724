import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ErrorCode, NonRetryableError } from '../../src/engine/support/errors';
import { HISTORY_FORMAT_VERSION, type HistoryEvent } from '../../src/engine/history/history';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf, startInstance } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

let flaky = 0;
class Order extends Workflow<{ sku: string }, { charged: number }> {
	static override readonly type = 'order';
	static override payload = z.object({ sku: z.string() });
	static override events = { approval: z.object({ ok: z.boolean() }) };
	static override defaults = { retries: { limit: 2, delay: '1 second', backoff: 'constant' as const } };
	async run(step: Step<typeof Order.events>, { sku }: { sku: string }) {
		const price = await step.do('price', () => (sku === 'book' ? 12 : 30));
		await step.do('flaky', () => {
			if (flaky++ < 1) throw new TypeError('gateway hiccup');
			return 'ok';
		});
		await step.sleep('cool-off', '1 minute');
		const approval = await step.waitForEvent('approval', { timeout: '1 hour' });
		if (!approval.ok) throw new Error('not approved');
		return { charged: price };
	}
}

class Failing extends Workflow<{}, void> {
	static override readonly type = 'failing';
	async run(step: Step) {
		await step.do('boom', () => {
			throw new NonRetryableError('card declined');
		});
	}
}

class Waits extends Workflow<{}, string> {
	static override readonly type = 'waits';
	static override events = { go: {} as { n: number } };
	async run(step: Step<typeof Waits.events>) {
		try {
			await step.waitForEvent('go', { timeout: '10 seconds' });
		} catch {
			return 'timed out';
		}
		return 'got it';
	}
}

const registry = registryOf(Order, Failing, Waits);
const kinds = (events: HistoryEvent[]) => events.map((e) => ('step' in e ? `${e.kind} ${e.step}` : e.kind));

async function finishOrder(host: VirtualHost, engine: ReturnType<VirtualHost['engine']>, ok = true) {
	await host.fireAlarm(engine); // the retry of "flaky"
	await host.fireAlarm(engine); // the end of "cool-off"
	await engine.sendEvent('approval', { ok });
	await host.idle();
}

describe('the instance history', () => {
	it('records every step, retry, sleep, wait and event of a run, in order, with the run\'s outcome', async () => {
		flaky = 0;
		const { host, engine } = await startInstance(registry, 'order', { sku: 'book' });
		await finishOrder(host, engine);
		const page = engine.history();
		expect(page).toMatchObject({ id: 'wf-1', type: 'order', generation: 0, formatVersion: HISTORY_FORMAT_VERSION, nextCursor: null });
		expect(kinds(page.events)).toEqual([
			'workflow.created',
			'step.started price',
			'step.completed price',
			'step.started flaky',
			'step.attempt_failed flaky',
			'step.started flaky',
			'step.completed flaky',
			'sleep.started cool-off',
			'sleep.finished cool-off',
			'wait.started approval',
			'event.received',
			'event.consumed approval',
			'workflow.completed',
		]);
		const seqs = page.events.map((e) => e.seq);
		expect(seqs).toEqual(seqs.map((_, i) => i + 1));
		const ats = page.events.map((e) => e.at);
		expect(ats).toEqual([...ats].sort((a, b) => a - b));
		expect(page.events[0]).toMatchObject({ kind: 'workflow.created', payload: { sku: 'book' } });
		expect(page.events[2]).toMatchObject({ kind: 'step.completed', attempt: 1, result: 12 });
		expect(page.events[4]).toMatchObject({
			kind: 'step.attempt_failed',
			attempt: 1,
			error: { name: 'TypeError', message: 'gateway hiccup', stack: expect.stringContaining('gateway hiccup') },
		});
		expect((page.events[4] as { retryAt: number }).retryAt).toBe(page.events[4]!.at + 1000);
		expect(page.events[6]).toMatchObject({ kind: 'step.completed', attempt: 2, result: 'ok' });
		expect(page.events[7]).toMatchObject({ kind: 'sleep.started', until: page.events[7]!.at + 60_000 });
		expect(page.events[9]).toMatchObject({ kind: 'wait.started', event: 'approval', timeoutAt: page.events[9]!.at + 3_600_000 });
		expect(page.events[10]).toMatchObject({ kind: 'event.received', event: 'approval', payload: { ok: true } });
		expect(page.events[11]).toMatchObject({ kind: 'event.consumed', event: 'approval', payload: { ok: true } });
		expect(page.events[12]).toMatchObject({ kind: 'workflow.completed', output: { charged: 12 } });
	});

	it('keeps every failed attempt\'s own error, not only the last one', async () => {
		class TwoErrors extends Workflow<{}, void> {
			static override readonly type = 'two-errors';
			async run(step: Step) {
				await step.do('call', ({ attempt }) => {
					throw new RangeError(`failure number ${attempt}`);
				}, { retries: { limit: 1, delay: 10, backoff: 'constant' } });
			}
		}
		const { host, engine } = await startInstance(registryOf(TwoErrors), 'two-errors');
		await host.fireAlarm(engine);
		const events = engine.history().events;
		const failures = events.filter((e) => e.kind === 'step.attempt_failed' || e.kind === 'step.failed');
		expect(failures.map((e) => [e.kind, 'error' in e ? e.error.message : ''])).toEqual([
			['step.attempt_failed', 'failure number 1'],
			['step.failed', 'failure number 2'],
		]);
		expect(events.at(-1)).toMatchObject({ kind: 'workflow.errored', error: { name: 'StepFailedError' } });
		expect(engine.status().error).toMatchObject({ name: 'StepFailedError', stack: expect.any(String) });
	});

	it('stamps each retry\'s step.started with the time that attempt began, not the first attempt\'s', async () => {
		class Retried extends Workflow<{}, number> {
			static override readonly type = 'retried';
			async run(step: Step) {
				return step.do('call', ({ attempt }) => {
					if (attempt < 3) throw new Error(`failure number ${attempt}`);
					return attempt;
				}, { retries: { limit: 2, delay: '10 seconds', backoff: 'constant' } });
			}
		}
		const { host, engine } = await startInstance(registryOf(Retried), 'retried');
		await host.fireAlarm(engine);
		await host.fireAlarm(engine);
		const events = engine.history().events;
		const started = events.filter((e) => e.kind === 'step.started');
		const retryAts = events.filter((e) => e.kind === 'step.attempt_failed').map((e) => (e as { retryAt: number }).retryAt);
		expect(started.map((e) => e.at)).toEqual([started[0]!.at, ...retryAts]);
		expect(retryAts[0]).toBeGreaterThan(started[0]!.at);
		const ats = events.map((e) => e.at);
		expect(ats).toEqual([...ats].sort((a, b) => a - b));
	});

	it('records a step that fails for good and the workflow error that follows', async () => {
		const { engine } = await startInstance(registry, 'failing');
		expect(kinds(engine.history().events)).toEqual(['workflow.created', 'step.started boom', 'step.failed boom', 'workflow.errored']);
		expect(engine.history().events[2]).toMatchObject({ error: { name: 'NonRetryableError', message: 'card declined' } });
	});

	it('records a wait that timed out', async () => {
		const { host, engine } = await startInstance(registry, 'waits');
		await host.fireAlarm(engine);
		expect(kinds(engine.history().events)).toEqual(['workflow.created', 'wait.started go', 'wait.timed_out go', 'workflow.completed']);
	});

	it('records pause, resume, terminate and the events a finished instance dropped, the terminal record last', async () => {
		const { host, engine } = await startInstance(registry, 'waits');
		engine.pause();
		await engine.sendEvent('go', { n: 1 });
		engine.resume();
		engine.terminate();
		await host.idle();
		const events = engine.history().events;
		expect(kinds(events)).toEqual([
			'workflow.created', 'wait.started go', 'workflow.paused', 'event.received', 'workflow.resumed', 'events.dropped', 'workflow.terminated',
		]);
		expect(events.at(-2)).toMatchObject({ kind: 'events.dropped', count: 1 });
	});

	it('ends a completed run with its outcome even when the finish dropped buffered events (the last record is the outcome)', async () => {
		const { host, engine } = await startInstance(registry, 'waits');
		await engine.sendEvent('go', { n: 1 });
		await engine.sendEvent('go', { n: 2 }); // nobody waits for a second one: buffered, then dropped at the finish
		await host.idle();
		const events = engine.history().events;
		expect(engine.status().status).toBe('completed');
		expect(events.at(-1)).toMatchObject({ kind: 'workflow.completed' });
		expect(events.at(-2)).toMatchObject({ kind: 'events.dropped', count: 1 });
	});

	it('starts a new generation on restart and keeps the old one readable', async () => {
		const { host, engine } = await startInstance(registry, 'failing');
		const first = engine.history().events;
		engine.restart();
		await host.idle();
		const second = engine.history();
		expect(second.generation).toBe(1);
		expect(kinds(second.events)).toEqual(['workflow.restarted', 'step.started boom', 'step.failed boom', 'workflow.errored']);
		expect(second.events[0]).toMatchObject({ previousGeneration: 0, generation: 1 });
		expect(second.events[0]!.seq).toBe(first.at(-1)!.seq + 1);
		expect(engine.history({ generation: 0 }).events).toEqual(first);
		expect(() => engine.history({ generation: 2 })).toThrow(expect.objectContaining({ code: ErrorCode.InvalidQuery }));
	});

	it('is never rewritten: replays after a crash only append', async () => {
		flaky = 0;
		let { host, engine } = await startInstance(registry, 'order', { sku: 'pen' });
		const before = structuredClone(host.store.history);
		host.crash();
		host = host.nextIsolate();
		const revived = host.engine();
		revived.alarm();
		await host.idle();
		await finishOrder(host, revived);
		expect(host.store.history.slice(0, before.length)).toEqual(before);
		expect(revived.history().events.at(-1)).toMatchObject({ kind: 'workflow.completed', output: { charged: 30 } });
	});

	it('records a second attempt after a crash mid-step, with no outcome for the interrupted one', async () => {
		let calls = 0;
		let release!: () => void;
		class Slow extends Workflow<{}, string> {
			static override readonly type = 'slow';
			async run(step: Step) {
				return step.do('slow', () => (++calls === 1 ? new Promise<string>((r) => (release = () => r('late'))) : 'fast'));
			}
		}
		let host = new VirtualHost({ registry: registryOf(Slow) });
		await host.engine().create('wf-1', 'slow', {});
		await new Promise((r) => setTimeout(r, 5));
		host.crash();
		host = host.nextIsolate();
		const revived = host.engine();
		revived.alarm();
		await host.idle();
		expect(kinds(revived.history().events)).toEqual(['workflow.created', 'step.started slow', 'step.started slow', 'step.completed slow', 'workflow.completed']);
		expect(revived.history().events.filter((e) => e.kind === 'step.started').map((e) => ('attempt' in e ? e.attempt : 0))).toEqual([1, 2]);
		release();
	});

	it('pages in sequence order with after and limit, and refuses a malformed cursor', async () => {
		flaky = 0;
		const { host, engine } = await startInstance(registry, 'order', { sku: 'book' });
		await finishOrder(host, engine);
		const all = engine.history().events;
		const seen: HistoryEvent[] = [];
		let after: string | null = null;
		do {
			const page = engine.history({ after, limit: 4 });
			expect(page.events.length).toBeLessThanOrEqual(4);
			seen.push(...page.events);
			after = page.nextCursor;
		} while (after !== null);
		expect(seen).toEqual(all);
		expect(engine.history({ after: String(all.at(-1)!.seq) }).events).toEqual([]);
		for (const bad of ['x', '-1', '1.5', '9'.repeat(20)]) {
			expect(() => engine.history({ after: bad })).toThrow(expect.objectContaining({ code: ErrorCode.InvalidCursor }));
		}
		for (const limit of [0, 1001, 2.5]) {
			expect(() => engine.history({ limit })).toThrow(expect.objectContaining({ code: ErrorCode.InvalidQuery }));
		}
	});

	it('cuts a page before it passes the byte budget, never below one record', async () => {
		class Big extends Workflow<{}, void> {
			static override readonly type = 'big';
			async run(step: Step) {
				for (let i = 0; i < 6; i++) await step.do(`big-${i}`, () => 'x'.repeat(1024 * 1024 - 100));
			}
		}
		const { engine } = await startInstance(registryOf(Big), 'big');
		const page = engine.history({ limit: 100 });
		const bytes = page.events.reduce((sum, e) => sum + ('result' in e ? JSON.stringify(e.result).length : 0), 0);
		expect(bytes).toBeLessThanOrEqual(4 * 1024 * 1024);
		expect(page.nextCursor).not.toBeNull();
		const events = [...page.events];
		for (let after = page.nextCursor; after !== null; ) {
			const next = engine.history({ after, limit: 100 });
			expect(next.events.length).toBeGreaterThan(0);
			events.push(...next.events);
			after = next.nextCursor;
		}
		expect(events.filter((e) => e.kind === 'step.completed')).toHaveLength(6);
	});
});
