import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

/** What the running step saw of its signal. */
let seen: { aborted: boolean; reason?: unknown } | undefined;
let started: () => void;

/** A step that waits on its signal the way a fetch does, and reports how it ended. */
class Listening extends Workflow<{}, string> {
	static override readonly type = 'listening';
	async run(step: Step) {
		return step.do('call', ({ signal }) =>
			new Promise<string>((resolve, reject) => {
				started();
				signal.addEventListener('abort', () => {
					seen = { aborted: true, reason: signal.reason };
					reject(signal.reason);
				});
			}),
		);
	}
}

/** A step that reads its signal only after the terminate: it must see it aborted. */
class LateReader extends Workflow<{}, string> {
	static override readonly type = 'late-reader';
	async run(step: Step) {
		return step.do('call', async (attempt) => {
			started();
			await new Promise((r) => setTimeout(r, 20));
			seen = { aborted: attempt.signal.aborted, reason: attempt.signal.reason };
			return 'late';
		});
	}
}

async function startAndWait(type: string) {
	seen = undefined;
	const running = new Promise<void>((r) => (started = r));
	const host = new VirtualHost({ registry: registryOf(Listening, LateReader) });
	const engine = host.engine();
	await engine.create('wf-1', type, {});
	await running;
	return { host, engine };
}

describe('cancellation into a running step', () => {
	it('terminate aborts the signal of the attempt in flight with an AbortError', async () => {
		const { host, engine } = await startAndWait('listening');
		expect(engine.terminate()).toBe('terminated');
		await host.idle();
		expect(seen).toMatchObject({ aborted: true, reason: { name: 'AbortError' } });
		expect(String((seen!.reason as Error).message)).toContain('terminated');
		expect(engine.status().status).toBe('terminated');
	});

	it('a step that reads its signal after the terminate finds it already aborted', async () => {
		const { host, engine } = await startAndWait('late-reader');
		engine.terminate();
		await host.idle();
		// The pass ended at the terminate; the abandoned attempt reads its signal 20 ms in.
		for (let i = 0; i < 50 && seen === undefined; i++) await new Promise((r) => setTimeout(r, 5));
		expect(seen).toMatchObject({ aborted: true, reason: { name: 'AbortError' } });
	});

	it('gives a restarted run fresh signals, which the next terminate aborts', async () => {
		const { host, engine } = await startAndWait('listening');
		engine.terminate();
		await host.idle();
		const again = new Promise<void>((r) => (started = r));
		seen = undefined;
		engine.restart();
		await again;
		// The restarted run's attempt is in flight; terminating it aborts that one too.
		engine.terminate();
		await host.idle();
		expect(seen).toMatchObject({ aborted: true });
	});
});

describe('an attempt that ignores its signal', () => {
	it('does not hold back the restarted run: the new generation starts while the old attempt still hangs', async () => {
		let calls = 0;
		let hung!: () => void;
		const hanging = new Promise<void>((r) => (hung = r));
		class Deaf extends Workflow<{}, string> {
			static override readonly type = 'deaf';
			async run(step: Step) {
				await step.do('pre', () => 'pre');
				return step.do('mid', async () => {
					if (++calls === 1) {
						hung();
						await new Promise(() => {}); // never settles, never reads its signal
					}
					return 'mid';
				});
			}
		}
		const host = new VirtualHost({ registry: registryOf(Deaf) });
		const engine = host.engine();
		await engine.create('wf-1', 'deaf', {});
		await hanging;
		engine.terminate();
		engine.restart();
		// Not host.idle(): the abandoned attempt never settles. The new run must complete anyway.
		for (let i = 0; i < 50 && engine.status().status !== 'completed'; i++) await new Promise((r) => setTimeout(r, 2));
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'mid' });
		expect(engine.history().generation).toBe(1);
	});
});

class Napping extends Workflow<{}, string> {
	static override readonly type = 'napping-cancel';
	async run(step: Step) {
		await step.do('before', () => 1);
		await step.sleep('nap', '1 hour');
		return 'woke';
	}
}

describe('what a terminate leaves of the steps it interrupted', () => {
	it('marks the attempt in flight cancelled, not running for good, and counts it so', async () => {
		const { host, engine } = await startAndWait('listening');
		// The step's start is written once its attempt awaits I/O (a step that settles at once writes one row, at the end).
		for (let turn = 0; turn < 100 && engine.status().steps.length === 0; turn++) await new Promise((resolve) => setTimeout(resolve, 0));
		expect(engine.status().steps).toEqual([expect.objectContaining({ name: 'call', status: 'running' })]);
		engine.terminate();
		await host.idle();
		const status = engine.status();
		expect(status.status).toBe('terminated');
		expect(status.steps).toEqual([expect.objectContaining({ name: 'call', status: 'cancelled', finishedAt: expect.any(Number) })]);
		expect(status.stepCounts).toEqual({ total: 1, cancelled: 1 });
	});

	it('marks a sleep cancelled without its wake-up time, and leaves the finished steps as they were', async () => {
		const host = new VirtualHost({ registry: registryOf(Napping) });
		const engine = host.engine();
		await engine.create('wf-nap', 'napping-cancel', {});
		await host.idle();
		expect(engine.status().status).toBe('sleeping');
		engine.terminate();
		await host.idle();
		const steps = engine.status().steps;
		expect(steps).toEqual([
			expect.objectContaining({ name: 'before', status: 'completed' }),
			expect.objectContaining({ name: 'nap', status: 'cancelled', wakeAt: null }),
		]);
	});
});
