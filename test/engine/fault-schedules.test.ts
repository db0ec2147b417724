import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/engine/types';
import { Workflow } from '../../src/workflow';
import { FakeHost, registryOf } from './fake-host';

/**
 * Model-based check of the engine on the fake host: random schedules of
 * events, pauses, resumes, early and late alarms, evictions and failing index
 * deliveries, then a drive to completion. Whatever the schedule, the outcome
 * is the model's: the right output, each event consumed once in arrival
 * order, every step run once per recorded attempt, and the index told the
 * newest version.
 */
const executions = new Map<string, number>();
let failNext = new Set<string>();

class Modelled extends Workflow<{ n: number }, { sum: number; events: number[] }> {
	static override readonly type = 'modelled';
	static override events = { e: {} as { v: number } };
	static override defaults = { retries: { limit: 5, delay: '1s', backoff: 'constant' as const } };
	async run(step: Step<typeof Modelled.events>, { n }: { n: number }) {
		let sum = 0;
		const events: number[] = [];
		for (let i = 0; i < n; i++) {
			sum += await step.do(`s${i}`, () => {
				executions.set(`s${i}`, (executions.get(`s${i}`) ?? 0) + 1);
				if (failNext.delete(`s${i}`)) throw new Error('transient');
				return i;
			});
			if (i % 4 === 1) await step.sleep(`z${i}`, '5s');
			if (i % 4 === 3) events.push((await step.waitForEvent('e', { name: `w${i}` })).v);
		}
		return { sum, events };
	}
}

const op = fc.oneof(
	fc.record({ kind: fc.constant('event' as const) }),
	fc.record({ kind: fc.constant('pause' as const) }),
	fc.record({ kind: fc.constant('resume' as const) }),
	fc.record({ kind: fc.constant('alarm' as const), advance: fc.integer({ min: 0, max: 10_000 }) }),
	fc.record({ kind: fc.constant('evict' as const) }),
	fc.record({ kind: fc.constant('failIndex' as const), times: fc.integer({ min: 1, max: 3 }) }),
	fc.record({ kind: fc.constant('failStep' as const), step: fc.integer({ min: 0, max: 11 }) }),
);

describe('random fault schedules', () => {
	it('always reach the model outcome', async () => {
		await fc.assert(
			fc.asyncProperty(fc.integer({ min: 1, max: 12 }), fc.array(op, { maxLength: 40 }), async (n, ops) => {
				executions.clear();
				failNext = new Set();
				const host = new FakeHost(registryOf(Modelled));
				let engine = host.engine();
				await engine.create('wf-1', 'modelled', { n });
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
						host.clock += o.advance;
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
				}
				// Drive to the end: resume, send what is missing, let every alarm fire.
				try {
					engine.resume();
				} catch {}
				while (sent.length < waits) {
					sent.push(sent.length + 100);
					await engine.sendEvent('e', { v: sent.at(-1)! });
				}
				for (let i = 0; i < 50 && (engine.status().status !== 'completed' || host.store.outbox); i++) {
					host.clock += 60_000;
					engine.alarm();
					await host.idle();
				}
				const status = engine.status();
				expect(status.status).toBe('completed');
				expect(status.output).toEqual({ sum: (n * (n - 1)) / 2, events: sent });
				for (const s of status.steps.filter((x) => x.kind === 'do')) expect(executions.get(s.name)).toBe(s.attempts);
				expect(host.store.events).toEqual([]);
				expect(host.delivered.at(-1)).toMatchObject({ status: 'completed', version: status.version });
				expect(host.store.outbox).toBeUndefined(); // acknowledged, nothing left to retry
			}),
			{ numRuns: 150, seed: 7 },
		);
	}, 120_000);
});
