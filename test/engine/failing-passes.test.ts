import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';
import { FAILING_REPORT_STALE_MS, summarizeFailing, type FailingPassesPort, type FailingReport } from '../../src/engine/instance/failing-passes';

class Napper extends Workflow<{}, string> {
	static override readonly type = 'napper-failing';
	async run(step: Step) {
		await step.do('before', () => 1);
		await step.sleep('nap', '1 minute');
		return step.do('after', () => 'done');
	}
}

/** A backlog object's reports, as the port reaches them, and every call made. */
function fakeReports() {
	const reports = new Map<string, FailingReport>();
	const calls: string[] = [];
	const port: FailingPassesPort = {
		report: async (type, report) => {
			calls.push(`report ${type}/${report.id} ${report.cause} ${report.count}`);
			reports.set(report.id, { ...report, since: reports.get(report.id)?.since ?? report.since });
		},
		withdraw: async (type, id) => {
			calls.push(`withdraw ${type}/${id}`);
			reports.delete(id);
		},
	};
	return { reports, calls, port };
}

describe('failed passes in a row, reported for GET /metrics', () => {
	it('reports an instance whose passes keep failing from the third in a row, with its count kept current, and withdraws it once a pass ends', async () => {
		const host = new VirtualHost({ registry: registryOf(Napper) });
		const { reports, calls, port } = fakeReports();
		host.failingPasses = port;
		host.log = () => {};
		const engine = host.engine();
		await engine.create('wf-1', 'napper-failing', {});
		await host.idle();
		let broken = true;
		const readSteps = host.store.readSteps.bind(host.store);
		host.store.readSteps = () => {
			if (broken) throw new Error('storage refused the read');
			return readSteps();
		};
		host.advance(60_000); // the nap is due
		for (let i = 0; i < 2; i++) await host.fireAlarm(engine);
		expect(calls).toEqual([]); // two failures in a row: not yet
		await host.fireAlarm(engine);
		await host.fireAlarm(engine);
		expect(calls).toEqual(['report napper-failing/wf-1 failed 3', 'report napper-failing/wf-1 failed 4']);
		expect(summarizeFailing(reports.values(), host.now())).toMatchObject({ instances: 1, mostInARow: 4, worst: [{ id: 'wf-1', cause: 'failed', count: 4 }] });

		broken = false;
		await host.fireAlarm(engine);
		expect(engine.status().status).toBe('completed');
		expect(calls.at(-1)).toBe('withdraw napper-failing/wf-1');
		expect(reports.size).toBe(0);
	});

	it('reports nothing for a run that goes well, nor for one failed pass the next pass makes good', async () => {
		const host = new VirtualHost({ registry: registryOf(Napper) });
		const { calls, port } = fakeReports();
		host.failingPasses = port;
		host.log = () => {};
		const engine = host.engine();
		await engine.create('wf-2', 'napper-failing', {});
		await host.idle();
		let failOnce = true;
		const readSteps = host.store.readSteps.bind(host.store);
		host.store.readSteps = () => {
			if (failOnce) {
				failOnce = false;
				throw new Error('storage refused the read');
			}
			return readSteps();
		};
		host.advance(60_000);
		for (let i = 0; i < 2; i++) await host.fireAlarm(engine); // the failed pass, then its retry
		expect(failOnce).toBe(false);
		expect(engine.status().status).toBe('completed');
		expect(calls).toEqual([]);
	});
});

/** A step that never settles while `hanging` is set: the pass it is in is cut short when the isolate dies. */
let hanging = true;
class Hanger extends Workflow<{}, string> {
	static override readonly type = 'hanger-failing';
	async run(step: Step) {
		return step.do('hang', () => (hanging ? new Promise<string>(() => {}) : 'done'), { timeout: '1 day', retries: { limit: 100, delay: 0 } });
	}
}

describe('passes cut short in a row (a crash loop), reported for GET /metrics', () => {
	it('reports the instance from the third cut pass in a row, as cut, and withdraws it once a pass ends', async () => {
		hanging = true;
		const { reports, calls, port } = fakeReports();
		let host = new VirtualHost({ registry: registryOf(Hanger) });
		host.failingPasses = port;
		host.log = () => {};
		let engine = host.engine();
		await engine.create('wf-3', 'hanger-failing', {});
		const turn = () => new Promise((resolve) => setTimeout(resolve, 0));
		await turn();
		const die = () => {
			host.crash();
			host = host.nextIsolate();
			engine = host.engine();
		};
		const fire = async () => {
			if (host.alarmAt === undefined) return false;
			host.clock.moveTo(Math.max(host.now(), host.alarmAt));
			host.alarmAt = undefined;
			engine.alarm();
			await turn();
			return true;
		};
		// Each death cuts the pass in flight; the alarm that starts the next counts it.
		for (let cuts = 0; cuts < 4; cuts++) {
			die();
			await fire(); // the watchdog: starts the next pass, or moves the alarm to the backoff's end
			if (host.store.readCutPasses()?.count !== cuts + 1) await fire();
			expect(host.store.readCutPasses()?.count).toBe(cuts + 1);
		}
		expect(calls).toEqual(['report hanger-failing/wf-3 cut 3']);
		expect(summarizeFailing(reports.values(), host.now())).toMatchObject({ instances: 1, mostInARow: 3, worst: [{ id: 'wf-3', cause: 'cut' }] });

		hanging = false;
		die();
		while (engine.status().status !== 'completed' && (await fire()));
		await host.idle();
		expect(engine.status().status).toBe('completed');
		expect(calls.at(-1)).toBe('withdraw hanger-failing/wf-3');
	});
});

describe('summarizeFailing', () => {
	it('counts the live reports, the most failures in a row first, and leaves out a report nobody refreshed for 15 minutes', () => {
		const now = 10 * FAILING_REPORT_STALE_MS;
		const summary = summarizeFailing(
			[
				{ id: 'a', cause: 'failed', count: 3, since: now - 60_000, at: now - 1000 },
				{ id: 'b', cause: 'cut', count: 9, since: now - 600_000, at: now - 2000 },
				{ id: 'gone', cause: 'failed', count: 40, since: 0, at: now - FAILING_REPORT_STALE_MS },
			],
			now,
		);
		expect(summary).toEqual({
			instances: 2,
			mostInARow: 9,
			threshold: 3,
			worst: [
				{ id: 'b', cause: 'cut', count: 9, since: now - 600_000 },
				{ id: 'a', cause: 'failed', count: 3, since: now - 60_000 },
			],
		});
	});
});
