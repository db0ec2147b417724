import { afterEach, describe, expect, it, vi } from 'vitest';
import { consoleLogger, parseLogLevel } from '../../src/engine/support/engine-log';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf, startInstance } from './start-instance';

let failures = 0;
class Flaky extends Workflow<{ failures: number; thenThrow: boolean }, string> {
	static override readonly type = 'flaky-log';
	async run(step: Step, input: { failures: number; thenThrow: boolean }) {
		failures = input.failures;
		await step.do('ok', () => 1);
		const value = await step.do('charge', () => {
			if (failures-- > 0) throw new TypeError('upstream 503');
			return 'charged';
		}, { retries: { limit: 1, delay: 1000 } });
		if (input.thenThrow) throw new RangeError('amount out of range');
		return value;
	}
}
class Waits extends Workflow<{}, string> {
	static override readonly type = 'waits-log';
	static override events = { go: {} as { n: number } };
	async run(step: Step<typeof Waits.events>) {
		return String((await step.waitForEvent('go')).n);
	}
}
const registry = registryOf(Flaky);

afterEach(() => vi.restoreAllMocks());

describe('structured log records', () => {
	it('record every status change (the routine ones at debug), and an errored workflow with its error and stack', async () => {
		const { logs } = await startInstance(registry, 'flaky-log', { failures: 0, thenThrow: true });
		const statuses = logs.filter((r) => r.event === 'workflow.status').map((r) => [r.status, r.severity]);
		expect(statuses).toEqual([['created', 'debug'], ['running', 'debug'], ['errored', 'error']]);
		const errored = logs.find((r) => r.status === 'errored')!;
		expect(errored).toMatchObject({ severity: 'error', instanceId: 'wf-1', type: 'flaky-log', error: { name: 'RangeError', message: 'amount out of range' } });
		expect((errored.error as { stack: string }).stack).toContain('RangeError');
	});

	it('say nothing at info level about a run that completes, and log a terminate at info', async () => {
		const { logs } = await startInstance(registry, 'flaky-log', { failures: 0, thenThrow: false });
		expect(logs.filter((r) => r.event === 'workflow.status').map((r) => [r.status, r.severity])).toEqual([['created', 'debug'], ['running', 'debug'], ['completed', 'debug']]);
		const printed = vi.spyOn(console, 'log').mockImplementation(() => {});
		for (const record of logs) consoleLogger('info')(record);
		expect(printed).not.toHaveBeenCalled();

		const waiting = await startInstance(registryOf(Waits), 'waits-log');
		waiting.engine.terminate();
		await waiting.host.idle();
		expect(waiting.logs.filter((r) => r.event === 'workflow.status').at(-1)).toMatchObject({ status: 'terminated', severity: 'info' });
	});

	it('log a deletion through the API at info and one by retention at debug', async () => {
		const deleted = await startInstance(registryOf(Waits), 'waits-log');
		deleted.host.advance(1);
		await deleted.engine.delete({ terminate: true });
		await deleted.host.idle();
		expect(deleted.logs.filter((r) => r.event.startsWith('workflow.delet')).map((r) => [r.event, r.severity])).toEqual([['workflow.deleting', 'info'], ['workflow.deleted', 'info']]);

		const expired = await startInstance(registry, 'flaky-log', { failures: 0, thenThrow: false });
		await expired.host.fireAlarm(expired.engine);
		expect(expired.host.destroyed).toBe(1);
		expect(expired.logs.filter((r) => r.event.startsWith('workflow.delet')).map((r) => [r.event, r.severity, r.reason])).toEqual([['workflow.deleting', 'debug', 'retention'], ['workflow.deleted', 'debug', 'retention']]);
	});

	it('record each failed attempt with the step, the attempt, whether it retries and when', async () => {
		const { host, engine, logs } = await startInstance(registry, 'flaky-log', { failures: 5, thenThrow: false });
		await host.fireAlarm(engine);
		const failed = logs.filter((r) => r.event === 'step.attempt_failed' || r.event === 'step.failed');
		expect(failed).toEqual([
			expect.objectContaining({ severity: 'warn', event: 'step.attempt_failed', instanceId: 'wf-1', step: 'charge', attempt: 1, willRetry: true, retryAt: expect.any(Number), error: expect.objectContaining({ name: 'TypeError', message: 'upstream 503' }) }),
			expect.objectContaining({ severity: 'error', event: 'step.failed', step: 'charge', attempt: 2, willRetry: false }),
		]);
	});

	it('say nothing at info level about steps that succeed; debug adds them', async () => {
		const { logs } = await startInstance(registry, 'flaky-log', { failures: 0, thenThrow: false });
		const completions = logs.filter((r) => r.event === 'step.completed');
		expect(completions).toHaveLength(2);
		const printed = vi.spyOn(console, 'log').mockImplementation(() => {});
		for (const record of logs) consoleLogger('info')(record);
		expect(printed.mock.calls.map(([line]) => JSON.parse(line as string).event)).not.toContain('step.completed');
		printed.mockClear();
		for (const record of logs) consoleLogger('debug')(record);
		expect(printed.mock.calls.map(([line]) => JSON.parse(line as string).event)).toContain('step.completed');
	});

	it('print one JSON line per record, errors on stderr, nothing when off', () => {
		const err = vi.spyOn(console, 'error').mockImplementation(() => {});
		const record = { severity: 'error' as const, event: 'workflow.status', instanceId: 'a', type: 't', status: 'errored', error: { name: 'E', message: 'multi\nline' } };
		consoleLogger('error')(record);
		expect(err).toHaveBeenCalledTimes(1);
		const line = err.mock.calls[0]![0] as string;
		expect(line).not.toContain('\n');
		expect(JSON.parse(line)).toMatchObject({ source: 'shardflow', event: 'workflow.status', instanceId: 'a' });
		consoleLogger('off')(record);
		expect(err).toHaveBeenCalledTimes(1);
	});

	it.for([
		[undefined, 'info'],
		['DEBUG', 'debug'],
		['off', 'off'],
		['loud', 'info'],
	] as const)('reads SHARDFLOW_LOG=%s as %s', ([value, level]) => {
		expect(parseLogLevel(value)).toBe(level);
	});
});
