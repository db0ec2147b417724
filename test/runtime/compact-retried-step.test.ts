import { abortAllDurableObjects, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { readStepValue, type EncodedStep } from '../../src/runtime/compact-step-codec';
import type { StoredStep } from '../../src/runtime/compact-history';
import { api } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId, until } from '../helpers';
import { executions } from '../worker/probes';

// A retried step at storage format 5 (wrangler.jsonc): its failed attempts ride in the `sleeping` puts, its last attempt,
// settled at once, in the next write of its turn, its errors in the compact encoding (compact-error-detail.ts). What a
// user reads of it (status, steps, history) and what the engine guarantees (an attempt that may run past its turn has its
// start written first) stay what they were, at every level (`SHARDFLOW_STORAGE_FORMAT=4 npx vitest` runs these too).

afterEach(resetClock);

interface Event {
	kind: string;
	step?: string;
	attempt?: number;
	at: number;
	retryAt?: number;
	error?: { name: string; message: string; stack?: string };
}

async function history(id: string): Promise<Event[]> {
	return (await api('GET', `/workflows/${id}/history`)).json.events as Event[];
}

async function steps(id: string) {
	return ((await api('GET', `/workflows/${id}/steps`)).json.items as { name: string; status: string; attempts: number }[]).map((s) => [s.name, s.status, s.attempts]);
}

/** Fires the instance's alarm, a second on, until its status is not `sleeping` (at most `times`). */
async function wakeUntilSettled(id: string, times = 5): Promise<void> {
	for (let i = 0; i < times && (await instances.status(testEnv, { id })).status === 'sleeping'; i++) {
		advanceClock(1_000);
		await fireAlarm(id);
	}
}

/** `flaky`'s records of the history, as `kind attempt` (and the error's message for a failure). */
function flakyRecords(events: Event[]): string[] {
	return events.filter((e) => e.step === 'flaky').map((e) => `${e.kind} ${e.attempt ?? ''}${e.error ? ` ${e.error.message}` : ''}`.trim());
}

describe('a retried step (compact layout)', () => {
	it('an attempt that awaits I/O has its start written before it runs: one that kills its isolate counts against the limit', async () => {
		const id = uniqueId('layout-compact-retry');
		await instances.create(testEnv, { type: 'retry-awaits', id, payload: { failures: 1, limit: 3, hang: true } });
		await settle(id);
		expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
		advanceClock(1_000);
		// The second attempt never finishes: the alarm's call is cut by the abort below.
		fireAlarm(id).catch(() => {});
		await until(async () => executions.get(`${id}:flaky-awaits`) === 1, 'the second attempt to await', 200);
		await abortAllDurableObjects();
		// What storage kept of the step: its own key, `running`, its second attempt (put before the attempt ran).
		const kept = await runInDurableObject(stub(id), (_, state) => {
			const value = state.storage.kv.get<StoredStep | EncodedStep>('s:000000000002');
			return value === undefined ? undefined : readStepValue(value, 0);
		});
		expect(kept).toMatchObject({ name: 'flaky', status: 'running', attempts: 2 });
		// The runtime runs an alarm whose handler died again (test/runtime/crash-and-concurrency.test.ts does the same).
		advanceClock(60_000);
		await runInDurableObject(stub(id), (runner) => (runner as unknown as { alarm(info: AlarmInvocationInfo): Promise<void> }).alarm({ retryCount: 1, isRetry: true, scheduledTime: Date.now() }));
		await settle(id);
		await wakeUntilSettled(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 5 });
		// Attempt 2 died with its isolate and was counted: the step completed at its third attempt.
		expect(await steps(id)).toEqual([['before', 'completed', 1], ['flaky', 'completed', 3], ['after', 'completed', 1]]);
		expect(executions.get(`${id}:flaky`)).toBe(3);
		const records = flakyRecords(await history(id));
		expect(records.filter((r) => r.startsWith('step.started'))).toEqual(['step.started 1', 'step.started 2', 'step.started 3']);
		expect(records.at(-1)).toBe('step.completed 3');
	});

	it('a step retried past its limit ends the run with its last error; each attempt in the steps and the history', async () => {
		const id = uniqueId('layout-compact-retry');
		await instances.create(testEnv, { type: 'retry-awaits', id, payload: { failures: 5, limit: 2 } });
		await settle(id);
		await wakeUntilSettled(id);
		const status = await instances.status(testEnv, { id });
		expect(status).toMatchObject({ status: 'errored', error: { name: 'StepFailedError' } });
		expect(JSON.stringify(status.error)).toContain('attempt 3 fails, as an outside API may');
		expect(await steps(id)).toEqual([['before', 'completed', 1], ['flaky', 'failed', 3]]);
		const events = await history(id);
		expect(flakyRecords(events)).toEqual([
			'step.started 1', 'step.attempt_failed 1 attempt 1 fails, as an outside API may',
			'step.started 2', 'step.attempt_failed 2 attempt 2 fails, as an outside API may',
			'step.started 3', 'step.failed 3 attempt 3 fails, as an outside API may',
		]);
		for (const e of events.filter((e) => e.kind === 'step.attempt_failed' || e.kind === 'step.failed')) {
			expect(e.error?.stack).toMatch(new RegExp(`^Error: attempt ${e.attempt} fails, as an outside API may\\n    at `));
			// A second after the failure (the record's time is read just after the retry's).
			if (e.kind === 'step.attempt_failed') expect(e.retryAt! - e.at).toBeGreaterThan(990);
			if (e.kind === 'step.attempt_failed') expect(e.retryAt! - e.at).toBeLessThanOrEqual(1_000);
		}
		// And from a fresh object: the same, read back from storage.
		await abortAllDurableObjects();
		expect(await history(id)).toEqual(events);
	});

	it('a restart from the retried step runs it again from its first attempt; one from the step after keeps it, every attempt', async () => {
		const id = uniqueId('layout-compact-retry');
		await instances.create(testEnv, { type: 'retry-awaits', id, payload: { failures: 2, limit: 2 } });
		await settle(id);
		await wakeUntilSettled(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 5 });
		const firstRun = flakyRecords(await history(id));
		expect(firstRun).toEqual([
			'step.started 1', 'step.attempt_failed 1 attempt 1 fails, as an outside API may',
			'step.started 2', 'step.attempt_failed 2 attempt 2 fails, as an outside API may',
			'step.started 3', 'step.completed 3',
		]);

		// From `after`: `flaky` (carried by `after`'s value since its completion) is kept with its three attempts, not run.
		expect((await api('POST', `/workflows/${id}/restart`, { from: 'after' })).status).toBe(200);
		await settle(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 5 });
		expect(await steps(id)).toEqual([['before', 'completed', 1], ['flaky', 'completed', 3], ['after', 'completed', 1]]);
		expect(executions.get(`${id}:flaky`)).toBe(3);
		await abortAllDurableObjects();
		expect(await steps(id)).toEqual([['before', 'completed', 1], ['flaky', 'completed', 3], ['after', 'completed', 1]]);

		// From `flaky`: it runs again from its first attempt, and fails twice again.
		expect((await api('POST', `/workflows/${id}/restart`, { from: 'flaky' })).status).toBe(200);
		await settle(id);
		await wakeUntilSettled(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 5 });
		expect(await steps(id)).toEqual([['before', 'completed', 1], ['flaky', 'completed', 3], ['after', 'completed', 1]]);
		expect(executions.get(`${id}:flaky`)).toBe(6);
		expect(flakyRecords(await history(id))).toEqual(firstRun);
	});
});
