import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventTimeoutError } from '../../src/engine/support/errors';
import type { Step } from '../../src/engine/definition/types';
import { FINISHED_STATUSES } from '../../src/engine/support/statuses';
import { Workflow } from '../../src/workflow';
import type { InstanceEngine } from '../../src/engine/instance/instance-engine';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

/**
 * Model-based check of the engine on the virtual host (src/testing/virtual-host.ts): random schedules of
 * events, pauses, resumes, early and late alarms, evictions and failing index
 * deliveries, then a drive to completion. Whatever the schedule, the outcome
 * is the model's: the right output, each event consumed once in arrival
 * order, every step run once per recorded attempt, and the index told the
 * newest version.
 *
 * The retry delay, the sleeps and a wait's timeout are drawn too, 0 included,
 * and alarms move the clock by those same amounts: a wake-up due at the very
 * time of the pass that writes it, or at the time of another, must never
 * strand the instance. After every operation an instance that can go on has
 * the wake-up of each step that waits on time and an alarm no later than the
 * earliest one, and the drive to completion fires only the alarms the engine
 * armed (a spurious alarm would revive a stranded instance and hide it).
 */
const executions = new Map<string, number>();
let failNext = new Set<string>();

/** The durations a schedule draws from: 0, 1 ms and the engine's usual seconds. */
const DURATIONS = [0, 1, 1000, 5000];

interface ModelledInput {
	n: number;
	retryDelay: number;
	sleep: number;
	timeout: number;
}

class Modelled extends Workflow<ModelledInput, { sum: number; events: number[] }> {
	static override readonly type = 'modelled';
	static override events = { e: {} as { v: number }, never: {} as {} };
	async run(step: Step<typeof Modelled.events>, { n, retryDelay, sleep, timeout }: ModelledInput) {
		let sum = 0;
		const events: number[] = [];
		for (let i = 0; i < n; i++) {
			sum += await step.do(
				`s${i}`,
				() => {
					executions.set(`s${i}`, (executions.get(`s${i}`) ?? 0) + 1);
					if (failNext.delete(`s${i}`)) throw new Error('transient');
					return i;
				},
				{ retries: { limit: 5, delay: retryDelay, backoff: 'constant' } },
			);
			if (i % 4 === 1) await step.sleep(`z${i}`, sleep);
			if (i % 4 === 2) {
				// An event nobody sends: the wait always ends by its timeout.
				await step.waitForEvent('never', { name: `t${i}`, timeout }).catch((error) => {
					if (!(error instanceof EventTimeoutError)) throw error;
				});
			}
			if (i % 4 === 3) events.push((await step.waitForEvent('e', { name: `w${i}` })).v);
		}
		return { sum, events };
	}
}

/** A duration of the schedule, or any other clock move. */
const advance = fc.oneof(fc.constantFrom(...DURATIONS), fc.integer({ min: 0, max: 10_000 }));

const duration = fc.constantFrom(...DURATIONS);

const op = fc.oneof(
	fc.record({ kind: fc.constant('event' as const) }),
	fc.record({ kind: fc.constant('pause' as const) }),
	fc.record({ kind: fc.constant('resume' as const) }),
	fc.record({ kind: fc.constant('alarm' as const), advance }),
	fc.record({ kind: fc.constant('evict' as const) }),
	fc.record({ kind: fc.constant('failIndex' as const), times: fc.integer({ min: 1, max: 3 }) }),
	fc.record({ kind: fc.constant('failStep' as const), step: fc.integer({ min: 0, max: 11 }) }),
);

describe('random fault schedules', () => {
	it('always reach the model outcome', async () => {
		await fc.assert(
			fc.asyncProperty(fc.integer({ min: 1, max: 12 }), duration, duration, duration, fc.array(op, { maxLength: 40 }), async (n, retryDelay, sleep, timeout, ops) => {
				executions.clear();
				failNext = new Set();
				const host = new VirtualHost({ registry: registryOf(Modelled) });
				let engine = host.engine();
				await engine.create('wf-1', 'modelled', { n, retryDelay, sleep, timeout });
				await host.idle();
				expectNotStranded(host, engine);
				const waits = Array.from({ length: n }, (_, i) => i).filter((i) => i % 4 === 3).length;
				const sent: number[] = [];
				for (const o of ops) {
					if (o.kind === 'event' && sent.length < waits) {
						sent.push(sent.length + 100);
						await engine.sendEvent('e', { v: sent.at(-1)! });
					} else if (o.kind === 'pause') {
						try {
							engine.pause();
						} catch {}
					} else if (o.kind === 'resume') {
						try {
							engine.resume();
						} catch {}
					} else if (o.kind === 'alarm') {
						host.advance(o.advance);
						engine.alarm();
					} else if (o.kind === 'evict') {
						await host.idle();
						engine = host.engine();
					} else if (o.kind === 'failIndex') {
						host.failDeliveries += o.times;
					} else if (o.kind === 'failStep') {
						failNext.add(`s${o.step}`);
					}
					await host.idle();
					expectNotStranded(host, engine);
				}
				// Drive to the end: resume, send what is missing, fire the alarms the engine arms.
				try {
					engine.resume();
				} catch {}
				while (sent.length < waits) {
					sent.push(sent.length + 100);
					await engine.sendEvent('e', { v: sent.at(-1)! });
				}
				await host.idle();
				for (let i = 0; i < 100 && (engine.status().status !== 'completed' || host.store.outbox); i++) {
					expectNotStranded(host, engine);
					if (!(await host.fireAlarm(engine))) break;
				}
				const status = engine.status();
				expect(status.status).toBe('completed');
				expect(status.output).toEqual({ sum: (n * (n - 1)) / 2, events: sent });
				for (const s of status.steps.filter((x) => x.kind === 'do')) expect(executions.get(s.name)).toBe(s.attempts);
				expect(host.store.events).toEqual([]);
				expect(host.indexEntries.at(-1)).toMatchObject({ status: 'completed', version: status.version });
				expect(host.store.outbox).toBeUndefined(); // acknowledged, nothing left to retry
			}),
			{ numRuns: 150, seed: 7 },
		);
	}, 120_000);
});

/**
 * What keeps an instance from stranding: while it can go on (not finished or paused),
 * every step that waits on time has its wake-up, and the alarm is armed no later
 * than the earliest wake-up.
 */
function expectNotStranded(host: VirtualHost, engine: InstanceEngine): void {
	const status = engine.status().status;
	if (FINISHED_STATUSES.includes(status) || status === 'paused') return;
	for (const row of host.store.steps.values()) {
		const waitsOnTime = row.status === 'sleeping' || row.status === 'retrying' || (row.status === 'waiting' && row.wakeAt !== null);
		if (waitsOnTime) expect(host.store.wakeups.get(row.key), `the wake-up of ${row.key} (${row.status})`).toBe(row.wakeAt);
	}
	const earliest = host.store.earliestWakeup();
	if (earliest !== undefined) expect(host.alarmAt, `an alarm by the earliest wake-up (${status})`).toBeLessThanOrEqual(earliest);
}
