import { runDurableObjectAlarm } from 'cloudflare:test';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterEach, describe, expect, it } from 'vitest';
import { schedules } from '../../src/client/schedule-client';
import { callRole } from '../../src/client/stubs';
import { scheduleName } from '../../src/engine/object-names';
import { scheduledInstanceId } from '../../src/engine/schedule/schedule-name';
import { advanceClock, fireAlarm, resetClock, settle, stub, testEnv, uniqueId } from '../helpers';
import { testClock } from '../worker/test-clock';
import { api, apiWith } from './helpers';

afterEach(resetClock);

const MIN = 60_000;
type Labels = Record<string, string>;

/**
 * The exposition format 0.0.4, checked strictly line by line (the parser below is lenient):
 * every family opens with `# HELP` then `# TYPE`, its samples carry its name, label values are
 * quoted and escaped, values are floats, and no series appears twice.
 */
function checkExposition(text: string): void {
	expect(text.endsWith('\n')).toBe(true);
	const name = '[a-zA-Z_:][a-zA-Z0-9_:]*';
	const sample = new RegExp(`^(${name})(\\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"(?:,(?=[a-zA-Z_]))?)*\\})? (-?[0-9.e+-]+|\\+Inf|-Inf|NaN)$`);
	let family: string | undefined;
	let expecting: 'help' | 'type' | 'sample' = 'help';
	const seen = new Set<string>();
	for (const line of text.slice(0, -1).split('\n')) {
		const help = new RegExp(`^# HELP (${name}) .+$`).exec(line);
		const type = new RegExp(`^# TYPE (${name}) (gauge|counter|untyped)$`).exec(line);
		if (help) {
			expect(seen.has(`# ${help[1]}`), `family ${help[1]} given twice`).toBe(false);
			seen.add(`# ${help[1]}`);
			family = help[1];
			expecting = 'type';
		} else if (type) {
			expect(expecting, line).toBe('type');
			expect(type[1]).toBe(family);
			expecting = 'sample';
		} else {
			expect(expecting, `a sample before its family's HELP and TYPE: ${line}`).toBe('sample');
			const match = sample.exec(line);
			expect(match, `not a sample line: ${line}`).not.toBeNull();
			expect(match![1]).toBe(family);
			expect(seen.has(line.slice(0, line.lastIndexOf(' '))), `series given twice: ${line}`).toBe(false);
			seen.add(line.slice(0, line.lastIndexOf(' ')));
		}
	}
}

interface Family {
	name: string;
	type: string;
	metrics: { labels?: Labels; value: string }[];
}

async function scrape(): Promise<{ value: (family: string, labels: Labels) => number | undefined; families: Family[]; text: string }> {
	const res = await api('GET', '/metrics');
	expect(res.status).toBe(200);
	expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
	checkExposition(res.text);
	const families = parsePrometheusTextFormat(res.text) as Family[];
	const value = (name: string, labels: Labels) => {
		const found = families.find((f) => f.name === name)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
		return found === undefined ? undefined : Number(found.value);
	};
	return { value, families, text: res.text };
}

describe('GET /metrics', () => {
	it('serves the runs of real instances in the Prometheus text format a scraper parses: started, completed, errored and their durations', async () => {
		const before = await scrape();
		const [ok, stopped] = [uniqueId('prom-ok'), uniqueId('prom-stop')];
		await api('POST', '/workflows', { type: 'test', id: ok, payload: { name: 'fine' } });
		await api('POST', '/workflows', { type: 'test', id: stopped, payload: { name: 'stopped' } });
		await Promise.all([settle(ok), settle(stopped)]);
		await api('POST', `/workflows/${stopped}/terminate`);
		advanceClock(1500);
		await fireAlarm(ok);
		await settle(stopped);
		const failed = uniqueId('prom-throws');
		await api('POST', '/workflows', { type: 'throws', id: failed, payload: { kind: 'bigint', inStep: false } });
		await settle(failed);
		expect((await api('GET', `/workflows/${failed}`)).json.status).toBe('errored');

		const after = await scrape();
		const delta = (family: string, labels: Labels) => (after.value(family, labels) ?? 0) - (before.value(family, labels) ?? 0);
		for (const window of ['5m', '1h', '1d']) {
			expect(delta('shardflow_runs', { type: 'test', outcome: 'started', window })).toBe(2);
			expect(delta('shardflow_runs', { type: 'test', outcome: 'completed', window })).toBe(1);
			expect(delta('shardflow_runs', { type: 'test', outcome: 'terminated', window })).toBe(1);
			expect(delta('shardflow_runs', { type: 'throws', outcome: 'errored', window })).toBe(1);
		}
		// The completed run took ~1.5 s: in the buckets from 2.048 s up, not in those below 1.024 s.
		expect(delta('shardflow_run_duration_seconds_bucket', { type: 'test', window: '1h', le: '1.024' })).toBe(0);
		expect(delta('shardflow_run_duration_seconds_bucket', { type: 'test', window: '1h', le: '2.048' })).toBe(1);
		expect(delta('shardflow_run_duration_seconds_bucket', { type: 'test', window: '1h', le: '+Inf' })).toBe(1);
		// Buckets are cumulative: never fewer runs under a larger bound.
		const buckets = after.families.find((f) => f.name === 'shardflow_run_duration_seconds_bucket')!.metrics.filter((m) => m.labels?.type === 'test' && m.labels.window === '1d');
		const counts = buckets.map((m) => Number(m.value));
		expect(counts).toEqual([...counts].sort((a, b) => a - b));
		expect(buckets.at(-1)!.labels!.le).toBe('+Inf');
		expect(after.value('shardflow_run_duration_seconds', { type: 'test', window: '1h', quantile: '0.5' })).toBeGreaterThan(0);
		expect(after.families.every((f) => f.type === 'GAUGE')).toBe(true);
	});

	it('counts instances waiting past their type\'s stuckAfter, and none for a check turned off', async () => {
		const id = uniqueId('prom-stuck');
		await api('POST', '/workflows', { type: 'inbox', id, payload: { expect: 1 } });
		await settle(id);
		const fresh = await scrape();
		expect(fresh.value('shardflow_instances_stuck_threshold_seconds', { type: 'inbox', status: 'waiting' })).toBe(3600);
		expect(fresh.value('shardflow_instances_stuck', { type: 'inbox', status: 'running' })).toBeUndefined();
		const waitingBefore = fresh.value('shardflow_instances_stuck', { type: 'inbox', status: 'waiting' })!;
		advanceClock(61 * MIN);
		const late = await scrape();
		expect(late.value('shardflow_instances_stuck', { type: 'inbox', status: 'waiting' })).toBe(waitingBefore + 1);
		// The default threshold of another type (7 days) is not passed yet.
		expect(late.value('shardflow_instances_stuck_threshold_seconds', { type: 'doorbell', status: 'waiting' })).toBe(7 * 86_400);

		await api('POST', `/workflows/${id}/events/msg`, { n: 1 });
		await settle(id);
		expect((await scrape()).value('shardflow_instances_stuck', { type: 'inbox', status: 'waiting' })).toBe(waitingBefore);
	});

	it('counts the ticks a schedule missed while its alarm did not fire, and how late the one that stood in for them ran', async () => {
		const first = (await schedules.wake(testEnv, 'hourly')).nextRunAt!;
		const before = await scrape();
		// Four ticks pass with no alarm (first, +1h, +2h, +3h): the scrape wakes the schedule, as GET /schedules does,
		// which runs the latest tick 30 s late and records the three older ones as missed.
		advanceClock(first - testClock.now() + 3 * 60 * MIN + 30_000);
		const after = await scrape();
		expect((after.value('shardflow_schedule_missed_ticks', { type: 'hourly', window: '1d' }) ?? 0) - (before.value('shardflow_schedule_missed_ticks', { type: 'hourly', window: '1d' }) ?? 0)).toBe(3);
		// The test clock runs on in real time between the advance and the scrape: a few hundred ms.
		expect(after.value('shardflow_schedule_last_run_delay_seconds', { type: 'hourly' })).toBeGreaterThanOrEqual(30);
		expect(after.value('shardflow_schedule_last_run_delay_seconds', { type: 'hourly' })).toBeLessThan(40);
		expect(after.value('shardflow_schedule_last_run_timestamp_seconds', { type: 'hourly', outcome: 'started' })).toBeGreaterThanOrEqual((first + 3 * 60 * MIN + 30_000) / 1000);
		expect(after.value('shardflow_schedule_overdue_seconds', { type: 'hourly' })).toBe(0);
		await runDurableObjectAlarm(stub(scheduleName('hourly')));
	});

	it('keeps reporting missed ticks for a day, through more runs than GET /schedules shows, and stops after it', async () => {
		const missed = async () => (await scrape()).value('shardflow_schedule_missed_ticks', { type: 'hourly', window: '1d' });
		const fireAt = async (at: number) => {
			advanceClock(at - testClock.now());
			await runDurableObjectAlarm(stub(scheduleName('hourly')));
		};
		const first = (await schedules.wake(testEnv, 'hourly')).nextRunAt!;
		const before = (await missed())!;
		// Two ticks pass with no alarm: the third runs 30 s late and stands in for them.
		await fireAt(first + 2 * 60 * MIN + 30_000);
		expect(await missed()).toBe(before + 2);
		// Eleven on-time ticks later the 10 runs shown are all on time; the day's count is not.
		for (let n = 3; n <= 13; n++) await fireAt(first + n * 60 * MIN + 1000);
		expect((await schedules.wake(testEnv, 'hourly')).lastRuns.every((r) => r.missed === 0)).toBe(true);
		expect(await missed()).toBe(before + 2);
		// A day after the late tick (every tick on time meanwhile), the missed ones are out of the window.
		for (let n = 14; n <= 27; n++) await fireAt(first + n * 60 * MIN + 1000);
		expect(await missed()).toBe(0);
		await Promise.all(Array.from({ length: 26 }, (_, n) => settle(scheduledInstanceId('hourly', first + (n + 2) * 60 * MIN))));
	});

	it('reports the delivery backlog of each type, zero when nothing is behind', async () => {
		const { value } = await scrape();
		expect(value('shardflow_index_backlog_pending', { type: 'payment' })).toBe(0);
		expect(value('shardflow_index_backlog_oldest_age_seconds', { type: 'payment' })).toBe(0);
	});

	it('counts the instances whose passes keep failing, as they reported themselves, and leaves out a report nobody refreshed for 15 minutes', async () => {
		const before = await scrape();
		expect(before.value('shardflow_instances_failing_passes', { type: 'inbox' })).toBe(0);
		expect(before.value('shardflow_failing_passes_max_in_a_row', { type: 'inbox' })).toBe(0);
		const at = testClock.now();
		const [a, b] = [uniqueId('prom-failing'), uniqueId('prom-cut')];
		// What an instance's replay loop sends from its third failed or cut pass in a row (engine/instance/failing-passes.ts).
		await callRole(testEnv as never, 'failingReport', ['inbox'], { id: a, cause: 'failed', count: 3, since: at, at });
		await callRole(testEnv as never, 'failingReport', ['inbox'], { id: b, cause: 'cut', count: 3, since: at, at });
		await callRole(testEnv as never, 'failingReport', ['inbox'], { id: a, cause: 'failed', count: 7, since: at + 60_000, at: at + 60_000 });
		const failing = await scrape();
		expect(failing.value('shardflow_instances_failing_passes', { type: 'inbox' })).toBe(2);
		expect(failing.value('shardflow_failing_passes_max_in_a_row', { type: 'inbox' })).toBe(7);
		expect(failing.value('shardflow_instances_failing_passes', { type: 'payment' })).toBe(0);

		await callRole(testEnv as never, 'failingWithdraw', ['inbox'], { id: a }); // a pass of a ended
		expect((await scrape()).value('shardflow_instances_failing_passes', { type: 'inbox' })).toBe(1);
		advanceClock(16 * MIN); // b's isolate died before it could withdraw: its report ages out
		expect((await scrape()).value('shardflow_instances_failing_passes', { type: 'inbox' })).toBe(0);
	});

	it('is behind the API token like every read: 401 without it, served to the read-only token', async () => {
		const vars = { API_TOKEN: 'secret-admin', API_TOKEN_READONLY: 'secret-read', SHARDFLOW_ENV: undefined };
		expect((await apiWith(vars, 'GET', '/metrics')).status).toBe(401);
		expect((await apiWith(vars, 'GET', '/metrics', { headers: { authorization: 'Bearer secret-read' } })).status).toBe(200);
		expect((await api('GET', '/metrics?format=json')).status).toBe(400);
	});
});
