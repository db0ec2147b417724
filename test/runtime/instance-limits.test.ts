import { abortAllDurableObjects, runInDurableObject } from 'cloudflare:test';
import { afterEach, describe, expect, it } from 'vitest';
import { instances } from '../../src/client/instance-client';
import { ErrorCode } from '../../src/engine/support/errors';
import { defineRegistry } from '../../src/engine/definition/registry';
import { api } from '../api/helpers';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId } from '../helpers';
import { executions } from '../worker/probes';
import { StepLimitedWorkflow } from '../worker/workflows';
import { CompactInstanceStore } from '../../src/runtime/compact-instance-store';
import { hasTable, storedCount } from '../stored-parts';

afterEach(() => resetClock());

/** The instance row's running history total and the bytes its history really holds. */
async function historyTotals(id: string) {
	return runInDurableObject(stub(id), (_, state) => {
		if (!hasTable(state.storage, 'instance') && storedCount(state.storage, 'instance') > 0) {
			// A compact instance: a store that kept nothing reads its record, and sums its history from storage.
			const store = new CompactInstanceStore(state.storage);
			const instance = store.readInstance()!;
			const tail = store.historySize(0);
			return { row: { bytes: instance.historyBytes, seq: instance.historySeq }, real: { bytes: tail.bytes, seq: tail.lastSeq } };
		}
		const row = [...state.storage.sql.exec('SELECT history_bytes AS bytes, history_seq AS seq FROM instance')][0] as { bytes: number; seq: number };
		// The history: its table, and the records step rows stand for (drizzle/0013; a completed one's value is the row's result).
		const real = [
			...state.storage.sql.exec(
				'SELECT (SELECT sum(coalesce(octet_length(value), 0) + coalesce(octet_length(detail), 0)) FROM history) + ' +
					'(SELECT coalesce(sum(octet_length(result)), 0) FROM steps WHERE record_count = 2) AS bytes, ' +
					'max((SELECT max(seq) FROM history), (SELECT coalesce(max(record_seq + record_count - 1), 0) FROM steps)) AS seq',
			),
		][0] as { bytes: number; seq: number };
		return { row, real };
	});
}

describe('per-instance limits in the real runtime', () => {
	it('refuses a registry whose limits.steps is above 25,000 when the Worker starts, naming the limit', () => {
		// The Worker answers every route 500 INVALID_REGISTRY naming it (test/api/broken-registry.test.ts).
		expect(defineRegistry({ 'step-limited': { workflow: StepLimitedWorkflow, limits: { steps: 30_000 } } }).problem?.message).toContain(
			"step-limited.limits.steps must be a whole number from 1 to 25000 (Cloudflare Workflows' maximum of steps per instance), got 30000",
		);
	});

	it('fails a run past its step limit with STEP_LIMIT_EXCEEDED across an eviction, without running the step, and GET shows the code', async () => {
		const id = uniqueId('steps');
		await instances.create(testEnv, { type: 'step-limited', id, payload: { steps: 9 } });
		await settle(id);
		expect((await instances.status(testEnv, { id })).status).toBe('sleeping');
		// Evicted while it sleeps: the next pass counts the steps from storage.
		await abortAllDurableObjects().catch(() => {});
		advanceClock(61_000);
		await fireAlarm(id);
		const { status, json } = await api('GET', `/workflows/${id}`);
		expect(status).toBe(200);
		expect(json).toMatchObject({ status: 'errored', error: { name: 'StepLimitExceededError', code: ErrorCode.StepLimitExceeded } });
		expect(json.error.message).toMatch(/step "s5" would be step 6 of this run, past the type's limit of 5 steps/);
		// s1..s4 and the sleep are the five steps; s5 never ran.
		expect(executions.get(`${id}:s4`)).toBe(1);
		expect(executions.get(`${id}:s5`)).toBeUndefined();
		const history = await api('GET', `/workflows/${id}/history?limit=1000`);
		expect(history.json.events.at(-1)).toMatchObject({ kind: 'workflow.errored', error: { code: 'STEP_LIMIT_EXCEEDED' } });
	});

	it('completes a run of exactly its step limit', async () => {
		const id = uniqueId('steps');
		await instances.create(testEnv, { type: 'step-limited', id, payload: { steps: 4 } });
		await settle(id);
		advanceClock(61_000);
		await fireAlarm(id);
		expect(await instances.status(testEnv, { id })).toMatchObject({ status: 'completed', output: 4 });
	});

	it('fails a run whose history reached its size limit with HISTORY_LIMIT_EXCEEDED, keeping the running total in the instance row exact', async () => {
		const id = uniqueId('history');
		await instances.create(testEnv, { type: 'history-limited', id, payload: { steps: 10 } });
		await settle(id);
		const status = await instances.status(testEnv, { id });
		expect(status).toMatchObject({ status: 'errored', error: { name: 'HistoryLimitExceededError', code: ErrorCode.HistoryLimitExceeded } });
		// Three results of 600 kB fit in 2 MiB (2,097,152 bytes); the fourth ran but was not stored, the fifth never ran.
		expect(executions.get(`${id}:s4`)).toBe(1);
		expect(executions.get(`${id}:s5`)).toBeUndefined();
		const { row, real } = await historyTotals(id);
		expect(real.bytes).toBeGreaterThan(3 * 600_000);
		expect(real.bytes).toBeLessThanOrEqual(2 * 1024 * 1024);
		expect(row).toEqual(real);
	});
});
