import { beforeEach, describe, expect, it } from 'vitest';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf, startInstance } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

/** A promise the test resolves by hand: a step that takes as long as the test wants. */
function gate<T = string>() {
	let open!: (value: T) => void;
	const promise = new Promise<T>((resolve) => (open = resolve));
	return { promise, open };
}
const turns = () => new Promise((resolve) => setTimeout(resolve, 5));

let calls: Record<string, number> = {};
const count = (name: string) => (calls[name] = (calls[name] ?? 0) + 1);
let slow = gate();
let late = gate<void>();
let flakyFailures = 0;

beforeEach(() => {
	calls = {};
	slow = gate();
	late = gate<void>();
	flakyFailures = 1;
	attemptGates = [];
});

class AllWithRetry extends Workflow<{}, string[]> {
	static override readonly type = 'all-with-retry';
	async run(step: Step) {
		return Promise.all([
			step.do('slow', () => (count('slow'), slow.promise)),
			step.do('flaky', () => {
				count('flaky');
				if (flakyFailures-- > 0) throw new Error('503');
				return 'flaky-ok';
			}, { retries: { limit: 3, delay: 100 } }),
		]);
	}
}

let attemptGates: ReturnType<typeof gate<string>>[] = [];
class AllWithAttemptGates extends Workflow<{}, string[]> {
	static override readonly type = 'all-with-attempt-gates';
	async run(step: Step) {
		return Promise.all([
			step.do('slow', () => {
				const attempt = gate<string>();
				attemptGates.push(attempt);
				return attempt.promise;
			}),
			step.do('flaky', () => {
				if (flakyFailures-- > 0) throw new Error('503');
				return 'flaky-ok';
			}, { retries: { limit: 3, delay: 100 } }),
		]);
	}
}

class AllWithLateStep extends Workflow<{}, string> {
	static override readonly type = 'all-with-late-step';
	async run(step: Step) {
		await Promise.all([
			step.do('slow', () => (count('slow'), slow.promise)),
			(async () => {
				await late.promise;
				return step.do('late', () => (count('late'), 'late'));
			})(),
		]);
		return step.do('after', () => (count('after'), 'done'));
	}
}

class AllSettledWithLateStep extends Workflow<{}, string> {
	static override readonly type = 'all-settled-with-late-step';
	async run(step: Step) {
		await Promise.allSettled([
			step.do('slow', () => (count('slow'), slow.promise)),
			(async () => {
				await late.promise;
				return step.do('late', () => (count('late'), 'late'));
			})(),
		]);
		return step.do('after', () => (count('after'), 'done'));
	}
}

class Race extends Workflow<{}, string> {
	static override readonly type = 'race';
	async run(step: Step) {
		return Promise.race([step.do('slow', () => (count('slow'), slow.promise)), step.do('quick', () => (count('quick'), 'quick'))]);
	}
}

const registry = registryOf(AllWithRetry, AllWithAttemptGates, AllWithLateStep, AllSettledWithLateStep, Race);

async function finish(host: VirtualHost, engine: Parameters<VirtualHost['fireAlarm']>[0]) {
	await host.idle();
	for (let i = 0; i < 20 && !['completed', 'errored'].includes(engine.status().status); i++) await host.fireAlarm(engine);
	return engine.status();
}

describe('parallel steps', () => {
	it('never starts a step again while its first attempt still runs, when a sibling schedules a retry (Promise.all)', async () => {
		const { host, engine } = await startInstance(registry, 'all-with-retry', {}, false);
		await turns();
		expect(calls).toEqual({ slow: 1, flaky: 1 });
		// The sibling's retry is due while `slow` still runs: the alarm fires.
		host.advance(200);
		engine.alarm();
		await turns();
		slow.open('slow-1');
		const status = await finish(host, engine);
		expect(calls.slow).toBe(1);
		expect(status).toMatchObject({ status: 'completed', output: ['slow-1', 'flaky-ok'] });
		expect(status.steps.find((s) => s.name === 'slow')).toMatchObject({ status: 'completed', attempts: 1, result: 'slow-1' });
	});

	it('never lets a late attempt overwrite the stored result: status, step result and output agree', async () => {
		const { host, engine } = await startInstance(registry, 'all-with-attempt-gates', {}, false);
		await turns();
		host.advance(200);
		engine.alarm();
		await turns();
		// Open the newest attempt first, then any older one, as a slow network would.
		for (const attempt of [...attemptGates].reverse()) {
			attempt.open(`slow#${attemptGates.indexOf(attempt) + 1}`);
			await turns();
			await host.idle();
		}
		const status = await finish(host, engine);
		await turns();
		const stored = engine.status().steps.find((s) => s.name === 'slow');
		expect(stored?.result).toBe((status.output as string[])[0]);
		expect(attemptGates).toHaveLength(1);
	});

	it('does not run a step twice when pause and resume arrive while a parallel step runs', async () => {
		const { host, engine } = await startInstance(registry, 'all-with-late-step', {}, false);
		await turns();
		engine.pause();
		late.open();
		await turns();
		engine.resume();
		await turns();
		slow.open('slow-1');
		const status = await finish(host, engine);
		expect(status).toMatchObject({ status: 'completed', output: 'done' });
		expect(calls).toEqual({ slow: 1, late: 1, after: 1 });
	});

	it('lets a resume stand when the pass that saw the pause ends after it (Promise.allSettled)', async () => {
		const { host, engine } = await startInstance(registry, 'all-settled-with-late-step', {}, false);
		await turns();
		engine.pause();
		late.open(); // `late` reaches the pause boundary inside allSettled, so run() goes on
		await turns();
		expect(engine.resume()).toBe('running');
		slow.open('slow-1'); // the old pass now ends, having seen the pause
		const status = await finish(host, engine);
		expect(status).toMatchObject({ status: 'completed', output: 'done' });
		expect(calls).toEqual({ slow: 1, late: 1, after: 1 });
	});

	it('checkpoints the losing step of a Promise.race once it finishes, and runs it once', async () => {
		const { host, engine } = await startInstance(registry, 'race', {}, false);
		await turns();
		slow.open('slow-1');
		const status = await finish(host, engine);
		expect(status).toMatchObject({ status: 'completed', output: 'quick' });
		expect(status.steps.find((s) => s.name === 'slow')).toMatchObject({ status: 'completed', attempts: 1, result: 'slow-1' });
		expect(calls).toEqual({ slow: 1, quick: 1 });
	});
});
