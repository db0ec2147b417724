import { afterEach, describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { advanceClock, fireAlarm, resetClock, settle, testEnv, uniqueId } from '../helpers';
import { executions } from '../worker/probes';

afterEach(resetClock);

/** Fires alarms (moving the clock past each retry wait) until the instance finishes. */
async function finish(id: string) {
	for (let i = 0; i < 10; i++) {
		await settle(id);
		const status = await instances.status(testEnv, { id });
		if (['completed', 'errored', 'terminated'].includes(status.status)) return status;
		advanceClock(1_000);
		await fireAlarm(id);
	}
	return instances.status(testEnv, { id });
}

describe('parallel steps in the real runtime', () => {
	it.for(['all', 'allSettled', 'race'] as const)(
		'Promise.%s: a sibling retry never starts a running step again, and its result, the step row and the output agree',
		async (combine) => {
			const id = uniqueId(`par-${combine}`);
			await instances.create(testEnv, { type: 'parallel', id, payload: { combine, slowMs: 400 } });
			// The flaky sibling fails at once and its retry falls due while `slow` still runs.
			advanceClock(200);
			await fireAlarm(id);
			const status = await finish(id);
			expect(status.status).toBe('completed');
			expect(executions.get(`${id}:slow`)).toBe(1);
			const slow = status.steps.find((s) => s.name === 'slow');
			expect(slow).toMatchObject({ status: 'completed', attempts: 1, result: 'slow#1' });
			if (combine === 'all') expect(status.output).toBe('slow#1+flaky-ok');
			if (combine === 'race') expect(['slow#1', 'flaky-ok']).toContain(status.output);
		},
	);

	it('pause and resume while parallel steps run: every step runs once and the instance completes', async () => {
		const id = uniqueId('par-pause');
		await instances.create(testEnv, { type: 'parallel', id, payload: { combine: 'all', slowMs: 600 } });
		await new Promise((r) => setTimeout(r, 50));
		await instances.pause(testEnv, { id });
		await new Promise((r) => setTimeout(r, 100));
		expect(await instances.resume(testEnv, { id })).toBe('running');
		const status = await finish(id);
		expect(status).toMatchObject({ status: 'completed', output: 'slow#1+flaky-ok' });
		expect(executions.get(`${id}:slow`)).toBe(1);
	});
});
