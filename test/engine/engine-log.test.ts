import { afterEach, describe, expect, it, vi } from 'vitest';
import { consoleLogger, logFormOf, parseLogLevel, type EngineLogRecord, type LogForm } from '../../src/engine/support/engine-log';
import { wrap } from '../../src/client/rpc';
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

/** Everything the console was handed, whatever its method: [method, the printed value]. */
function captureConsole() {
	const printed: [string, unknown][] = [];
	for (const method of ['log', 'info', 'debug', 'warn', 'error'] as const) {
		vi.spyOn(console, method).mockImplementation((value: unknown) => void printed.push([method, value]));
	}
	return printed;
}

/** What `consoleLogger(level, form)` prints for these records: the objects it handed the console. */
function printedAt(level: Parameters<typeof consoleLogger>[0], records: EngineLogRecord[], form: LogForm = 'object') {
	const printed = captureConsole();
	for (const record of records) consoleLogger(level, form)(record);
	vi.restoreAllMocks();
	return printed.map(([, value]) => (typeof value === 'string' ? JSON.parse(value) : value) as Record<string, unknown>);
}

class Coded extends Workflow<{}, string> {
	static override readonly type = 'coded-log';
	static override events = { approved: {} as { by: string } };
	async run(step: Step<typeof Coded.events>) {
		try {
			await step.waitForEvent('approved', { name: 'approval', timeout: '1 hour' });
		} catch {
			// The timeout is the case under test: go on to the failing step.
		}
		return step.do('charge', () => {
			throw Object.assign(new Error('card declined'), { code: 'CARD_DECLINED' });
		}, { retries: { limit: 0, delay: 0 } });
	}
}

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
		expect(printedAt('info', logs)).toEqual([]);

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
		expect(printedAt('info', logs).map((line) => line.event)).not.toContain('step.completed');
		expect(printedAt('debug', logs).map((line) => line.event)).toContain('step.completed');
	});

	it('print one JSON line per record under wrangler dev, errors on stderr, nothing when off', () => {
		const printed = captureConsole();
		const record = { severity: 'error' as const, event: 'workflow.status', instanceId: 'a', type: 't', status: 'errored', error: { name: 'E', message: 'multi\nline' } };
		consoleLogger('error', logFormOf({ SHARDFLOW_ENV: 'development' }))(record);
		expect(printed).toHaveLength(1);
		const [method, line] = printed[0]!;
		expect(method).toBe('error');
		expect(typeof line === 'string' && !line.includes('\n')).toBe(true);
		expect(JSON.parse(line as string)).toMatchObject({ source: 'shardflow', level: 'error', event: 'workflow.status', instanceId: 'a' });
		consoleLogger('off')(record);
		expect(printed).toHaveLength(1);
	});

	it('hand Workers Logs one object per record in production, its fields filterable: level, msg, event, type, instanceId, step, eventName, errorCode', async () => {
		expect(logFormOf({})).toBe('object');
		const { host, engine, logs } = await startInstance(registryOf(Coded), 'coded-log');
		host.advance(3_600_000);
		await host.fireAlarm(engine);
		const printed = captureConsole();
		for (const record of logs) consoleLogger('info')(record);
		const byEvent = Object.fromEntries(printed.map(([method, value]) => [(value as { event: string }).event, { method, value }]));
		expect(byEvent['wait.timed_out']).toEqual({
			method: 'info',
			value: expect.objectContaining({ source: 'shardflow', level: 'info', event: 'wait.timed_out', type: 'coded-log', instanceId: 'wf-1', step: 'approval', eventName: 'approved', errorCode: 'EVENT_TIMEOUT' }),
		});
		expect(byEvent['step.failed']).toEqual({
			method: 'error',
			value: expect.objectContaining({ level: 'error', event: 'step.failed', type: 'coded-log', instanceId: 'wf-1', step: 'charge', errorCode: 'CARD_DECLINED', msg: 'step.failed coded-log/wf-1 step "charge" attempt 1: Error: card declined' }),
		});
		expect(byEvent['workflow.status']?.value).toMatchObject({ level: 'error', status: 'errored', msg: expect.stringContaining('workflow.status coded-log/wf-1 errored') });
		// Every line is a plain object (no string for Workers Logs to keep opaque) that survives JSON.
		for (const [, value] of printed) expect(JSON.parse(JSON.stringify(value))).toEqual(value);
	});

	it('log an unexpected error behind an RPC as one object with its name, message and stack, not as console arguments', async () => {
		const printed = captureConsole();
		await wrap(() => {
			throw new TypeError('cannot read x');
		});
		expect(printed).toEqual([['error', expect.objectContaining({ source: 'shardflow', level: 'error', event: 'rpc.unexpected_error', error: expect.objectContaining({ name: 'TypeError', message: 'cannot read x', stack: expect.any(String) }) })]]);
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
