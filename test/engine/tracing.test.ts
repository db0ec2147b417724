import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/engine/definition/types';
import { NonRetryableError } from '../../src/engine/support/errors';
import { VirtualHost } from '../../src/testing/virtual-host';
import { workersTracer } from '../../src/runtime/workers-tracer';
import { FakeTracing, type FakeSpan } from './fake-tracing';
import { tracedCall } from '../../src/runtime/traced-call';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';

let failures = 0;
class Charge extends Workflow<{}, string> {
	static override readonly type = 'traced-charge';
	async run(step: Step) {
		await step.do('reserve', () => 'R1');
		await step.sleep('cool-off', '1 second');
		return step.do('charge', () => {
			if (failures-- > 0) throw Object.assign(new TypeError('upstream 503'), { code: 'UPSTREAM' });
			return 'charged';
		}, { retries: { limit: 2, delay: '5 seconds', backoff: 'constant' } });
	}
}

let undone: string[] = [];
class Trip extends Workflow<{}, string> {
	static override readonly type = 'traced-trip';
	async run(step: Step) {
		await step.do('flight', () => 'F1', { rollback: async () => void undone.push('flight') });
		return step.do('pay', () => {
			throw new NonRetryableError('card declined');
		});
	}
}

async function traced(Workflow: { type: string }, sampled = true) {
	const tracing = new FakeTracing(sampled);
	const host = new VirtualHost({ registry: registryOf(Workflow) });
	host.tracer = workersTracer(tracing);
	const engine = host.engine();
	await engine.create('wf-1', Workflow.type, {});
	await host.idle();
	return { tracing, host, engine };
}

describe('spans of passes and step attempts (Workers tracing through the engine host)', () => {
	it('records a span per pass and per step attempt, each attempt a child of its pass, with type, instance, step, kind, attempt and outcome', async () => {
		failures = 0;
		const { tracing, host, engine } = await traced(Charge);
		await host.fireAlarm(engine);
		const passes = tracing.named('shardflow.pass');
		expect(passes.map((p) => p.attributes)).toEqual([
			{ 'shardflow.workflow.type': 'traced-charge', 'shardflow.instance.id': 'wf-1', 'shardflow.instance.generation': 0, 'shardflow.instance.status': 'created', 'shardflow.outcome': 'sleeping' },
			{ 'shardflow.workflow.type': 'traced-charge', 'shardflow.instance.id': 'wf-1', 'shardflow.instance.generation': 0, 'shardflow.instance.status': 'sleeping', 'shardflow.outcome': 'completed' },
		]);
		const attempts = tracing.named('shardflow.step');
		expect(attempts.map((s) => [s.attributes['shardflow.step.name'], s.attributes['shardflow.step.kind'], s.attributes['shardflow.step.attempt'], s.attributes['shardflow.outcome']])).toEqual([
			['reserve', 'do', 1, 'completed'],
			['charge', 'do', 1, 'completed'],
		]);
		expect(attempts[0]!.parent).toBe(passes[0]);
		expect(attempts[1]!.parent).toBe(passes[1]);
		expect(passes.every((p) => p.parent === tracing.root)).toBe(true);
		expect(tracing.spans.every((s) => s.ended)).toBe(true);
	});

	it('records the exception and the retry delay on a failed attempt, and the retry as a new attempt', async () => {
		failures = 1;
		const { tracing, host, engine } = await traced(Charge);
		await host.fireAlarm(engine); // the sleep ends: charge fails once
		await host.fireAlarm(engine); // its retry, 5 s later
		const charges = tracing.named('shardflow.step').filter((s) => s.attributes['shardflow.step.name'] === 'charge');
		expect(charges.map((s) => [s.attributes['shardflow.step.attempt'], s.attributes['shardflow.outcome'], s.attributes['shardflow.step.retry_delay_ms']])).toEqual([
			[1, 'retrying', 5000],
			[2, 'completed', undefined],
		]);
		expect(charges[0]!.exceptions).toEqual([expect.objectContaining({ name: 'TypeError', message: 'upstream 503', code: 'UPSTREAM' })]);
		expect(charges[0]!.status).toBe('error');
		expect(charges[1]!.exceptions).toEqual([]);
	});

	it('spans the function itself: what a step starts (a fetch, a storage call) is a child of its attempt', async () => {
		const tracing = new FakeTracing();
		let inner: FakeSpan | undefined;
		class Fetches extends Workflow<{}, void> {
			static override readonly type = 'traced-fetch';
			async run(step: Step) {
				await step.do('fetch', async () => {
					await Promise.resolve();
					inner = tracing.startSpan('fetch');
					inner.end();
				});
			}
		}
		const host = new VirtualHost({ registry: registryOf(Fetches) });
		host.tracer = workersTracer(tracing);
		await host.engine().create('wf-1', 'traced-fetch', {});
		await host.idle();
		expect(inner!.parent).toBe(tracing.named('shardflow.step')[0]);
	});

	it('marks the rollback pass and each rollback attempt', async () => {
		undone = [];
		const { tracing } = await traced(Trip);
		expect(undone).toEqual(['flight']);
		const pay = tracing.named('shardflow.step').find((s) => s.attributes['shardflow.step.name'] === 'pay')!;
		expect(pay.attributes['shardflow.outcome']).toBe('failed');
		expect(pay.exceptions).toEqual([expect.objectContaining({ name: 'NonRetryableError', message: 'card declined' })]);
		const rollback = tracing.named('shardflow.step').find((s) => s.attributes['shardflow.step.kind'] === 'rollback')!;
		expect(rollback.attributes).toMatchObject({ 'shardflow.step.name': 'flight', 'shardflow.rollback': true, 'shardflow.step.attempt': 1, 'shardflow.outcome': 'completed' });
		const rollbackPass = rollback.parent!;
		expect(rollbackPass.name).toBe('shardflow.pass');
		expect(rollbackPass.attributes).toMatchObject({ 'shardflow.rollback': true, 'shardflow.instance.status': 'rolling_back', 'shardflow.outcome': 'errored' });
	});

	it('names the instance, its type, the step, its kind and attempt on every attempt\'s span from its start, so a span cut before its end still says what it was', async () => {
		undone = [];
		const { tracing } = await traced(Trip);
		const attempts = tracing.named('shardflow.step');
		expect(attempts.map((s) => s.atStart)).toEqual([
			{ 'shardflow.workflow.type': 'traced-trip', 'shardflow.instance.id': 'wf-1', 'shardflow.instance.generation': 0, 'shardflow.step.name': 'flight', 'shardflow.step.kind': 'do', 'shardflow.step.attempt': 1 },
			{ 'shardflow.workflow.type': 'traced-trip', 'shardflow.instance.id': 'wf-1', 'shardflow.instance.generation': 0, 'shardflow.step.name': 'pay', 'shardflow.step.kind': 'do', 'shardflow.step.attempt': 1 },
			{ 'shardflow.workflow.type': 'traced-trip', 'shardflow.instance.id': 'wf-1', 'shardflow.instance.generation': 0, 'shardflow.step.name': 'flight', 'shardflow.step.kind': 'rollback', 'shardflow.step.attempt': 1, 'shardflow.rollback': true },
		]);
		expect(tracing.named('shardflow.pass').map((p) => p.atStart)).toEqual([
			{ 'shardflow.workflow.type': 'traced-trip', 'shardflow.instance.id': 'wf-1', 'shardflow.instance.generation': 0, 'shardflow.instance.status': 'created' },
			{ 'shardflow.workflow.type': 'traced-trip', 'shardflow.instance.id': 'wf-1', 'shardflow.instance.generation': 0, 'shardflow.instance.status': 'rolling_back', 'shardflow.rollback': true },
		]);
	});

	it('after a crash mid-step, the next pass\'s spans name the same instance and generation, and count the attempt again', async () => {
		const tracing = new FakeTracing();
		let calls = 0;
		class Slow extends Workflow<{}, string> {
			static override readonly type = 'traced-slow';
			async run(step: Step) {
				return step.do('slow', () => (++calls === 1 ? new Promise<string>(() => {}) : 'fast'));
			}
		}
		let host = new VirtualHost({ registry: registryOf(Slow) });
		host.tracer = workersTracer(tracing);
		await host.engine().create('wf-1', 'traced-slow', {});
		await new Promise((r) => setTimeout(r, 5));
		host.crash();
		host = host.nextIsolate();
		const revived = host.engine();
		revived.alarm();
		await host.idle();
		const [cut, next] = tracing.named('shardflow.pass');
		// The cut pass's span never ended (its isolate died): an exporter shows it open, its attempt open under it.
		expect(cut!.ended).toBe(false);
		expect(next!.attributes).toMatchObject({ 'shardflow.instance.id': 'wf-1', 'shardflow.instance.generation': 0, 'shardflow.outcome': 'completed' });
		expect(cut!.attributes['shardflow.instance.id']).toBe(next!.attributes['shardflow.instance.id']);
		expect(tracing.named('shardflow.step').map((s) => [s.attributes['shardflow.step.attempt'], s.ended, s.parent])).toEqual([
			[1, false, cut],
			[2, true, next],
		]);
	});

	it('starts no span at all when the invocation is not sampled', async () => {
		failures = 1;
		const { tracing, host, engine } = await traced(Charge, false);
		await host.fireAlarm(engine);
		await host.fireAlarm(engine);
		expect((await engine.status()).status).toBe('completed');
		expect(tracing.spans).toEqual([]);
	});

	it('asks whether the invocation is sampled once per pass, not once per attempt, when it is not', async () => {
		class TenSteps extends Workflow<{}, number> {
			static override readonly type = 'traced-ten';
			async run(step: Step) {
				let n = 0;
				for (let i = 0; i < 10; i++) n = await step.do(`s${i}`, () => n + 1);
				return n;
			}
		}
		const tracing = new FakeTracing(false);
		let asked = 0;
		const getActiveSpan = tracing.getActiveSpan.bind(tracing);
		tracing.getActiveSpan = () => (asked++, getActiveSpan());
		const host = new VirtualHost({ registry: registryOf(TenSteps) });
		host.tracer = workersTracer(tracing);
		const engine = host.engine();
		await engine.create('wf-10', 'traced-ten', {});
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 10 });
		expect(tracing.spans).toEqual([]);
		expect(asked).toBe(1); // the one pass; its ten attempts ask nothing
	});

	it('is no tracer on a runtime without custom spans', () => {
		expect(workersTracer(undefined)).toBeUndefined();
		expect(workersTracer({})).toBeUndefined();
		expect(workersTracer({ enterSpan: () => undefined, startSpan: () => undefined })).toBeUndefined();
	});

	it('wraps an RPC call in a span named after it, its failure recorded, and calls it bare when untraced', async () => {
		const tracing = new FakeTracing();
		const tracer = workersTracer(tracing);
		expect(await tracedCall('create', 'wf-1', async () => 'created', tracer)).toBe('created');
		await expect(tracedCall('sendEvent', 'wf-1', async () => Promise.reject(Object.assign(new Error('no such event'), { code: 'UNKNOWN_EVENT' })), tracer)).rejects.toThrow('no such event');
		expect(tracing.spans.map((s) => [s.name, s.attributes['shardflow.call'], s.attributes['shardflow.instance.id'], s.attributes['shardflow.outcome'] ?? s.status, s.ended])).toEqual([
			['shardflow.create', 'create', 'wf-1', 'ok', true],
			['shardflow.sendEvent', 'sendEvent', 'wf-1', 'error', true],
		]);
		expect(tracedCall('status', 'wf-1', () => 'plain', undefined)).toBe('plain');
	});
});
