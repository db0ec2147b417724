import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

/**
 * Model-based check of parallel steps: pairs of `step.do` under Promise.all
 * or Promise.allSettled whose attempts stay in flight until the schedule
 * releases them, while events, pauses, resumes, early and late alarms,
 * crashes and failing attempts interleave. Whatever the schedule: the right
 * output, every step run exactly once per recorded attempt, and never two
 * live attempts of one step at the same time. The retry delay and the sleeps
 * are drawn, 0 included (a sibling's retry due the moment it fails, while the
 * other attempt still runs), and the drive to the end fires only the alarms
 * the engine armed, so a wake-up that was lost strands the run and fails it.
 */
interface Pending {
	release: () => void;
}
let pending: Pending[] = [];
const executions = new Map<string, number>();
const live = new Map<string, number>();
let overlaps = 0;
let failNext = new Set<string>();

function attempt(name: string, value: number): Promise<number> {
	executions.set(name, (executions.get(name) ?? 0) + 1);
	const running = (live.get(name) ?? 0) + 1;
	live.set(name, running);
	if (running > 1) overlaps++;
	return new Promise<number>((resolve, reject) => {
		pending.push({
			release: () => {
				live.set(name, (live.get(name) ?? 1) - 1);
				if (failNext.delete(name)) reject(new Error('transient'));
				else resolve(value);
			},
		});
	});
}

/** The durations a schedule draws from: 0, 1 ms and the engine's usual seconds. */
const DURATIONS = [0, 1, 1000, 5000];

interface PairsInput {
	n: number;
	retryDelay: number;
	sleep: number;
}

class Pairs extends Workflow<PairsInput, { sum: number; events: number[] }> {
	static override readonly type = 'pairs';
	static override events = { e: {} as { v: number } };
	async run(step: Step<typeof Pairs.events>, { n, retryDelay, sleep }: PairsInput) {
		const retries = { retries: { limit: 8, delay: retryDelay, backoff: 'constant' as const } };
		let sum = 0;
		const events: number[] = [];
		for (let i = 0; i < n; i++) {
			const pair = [step.do(`a${i}`, () => attempt(`a${i}`, i), retries), step.do(`b${i}`, () => attempt(`b${i}`, 10 * i), retries)];
			if (i % 2 === 0) {
				for (const v of await Promise.all(pair)) sum += v;
			} else {
				const settled = await Promise.allSettled(pair);
				for (const s of settled) {
					if (s.status === 'rejected') throw s.reason; // a suspension: the next pass goes on
					sum += s.value;
				}
			}
			if (i % 3 === 1) await step.sleep(`z${i}`, sleep);
			if (i % 3 === 2) events.push((await step.waitForEvent('e', { name: `w${i}` })).v);
		}
		return { sum, events };
	}
}

const turns = async (k = 3) => {
	for (let i = 0; i < k; i++) await new Promise((r) => setTimeout(r, 0));
};

const duration = fc.constantFrom(...DURATIONS);

const op = fc.oneof(
	fc.record({ kind: fc.constant('event' as const) }),
	fc.record({ kind: fc.constant('pause' as const) }),
	fc.record({ kind: fc.constant('resume' as const) }),
	fc.record({ kind: fc.constant('alarm' as const), advance: fc.oneof(fc.constantFrom(...DURATIONS), fc.integer({ min: 0, max: 12_000 })) }),
	fc.record({ kind: fc.constant('crash' as const) }),
	fc.record({ kind: fc.constant('release' as const), count: fc.integer({ min: 1, max: 3 }) }),
	{ arbitrary: fc.record({ kind: fc.constant('failStep' as const), step: fc.integer({ min: 0, max: 5 }), which: fc.constantFrom('a', 'b') }), weight: 3 },
);

describe('random fault schedules with parallel steps', () => {
	it('never run a step twice at once and always reach the model outcome', async () => {
		await fc.assert(
			fc.asyncProperty(fc.integer({ min: 1, max: 6 }), duration, duration, fc.array(op, { maxLength: 30 }), async (n, retryDelay, sleep, ops) => {
				pending = [];
				executions.clear();
				live.clear();
				overlaps = 0;
				failNext = new Set();
				let host = new VirtualHost({ registry: registryOf(Pairs) });
				let engine = host.engine();
				await engine.create('wf-1', 'pairs', { n, retryDelay, sleep });
				const waits = Array.from({ length: n }, (_, i) => i).filter((i) => i % 3 === 2).length;
				const sent: number[] = [];
				await turns();
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
					} else if (o.kind === 'crash') {
						// The isolate dies: attempts in flight never finish, in-memory state is gone.
						pending = [];
						live.clear();
						host.crash();
						host = host.nextIsolate();
						engine = host.engine();
					} else if (o.kind === 'release') {
						for (const p of pending.splice(0, o.count)) p.release();
					} else if (o.kind === 'failStep') {
						failNext.add(`${o.which}${o.step}`);
					}
					await turns();
				}
				// Drive to the end: release attempts one at a time, each followed by the alarm the
				// engine armed, if any (so a sibling's retry falls due while the other attempt still
				// runs), resume, send what is missing.
				for (let i = 0; i < 400 && (engine.status().status !== 'completed' || pending.length); i++) {
					pending.shift()?.release();
					try {
						engine.resume();
					} catch {}
					while (sent.length < waits) {
						sent.push(sent.length + 100);
						await engine.sendEvent('e', { v: sent.at(-1)! });
					}
					await turns();
					// A finished run's alarm is its retention expiry: firing it would delete the instance.
					if (host.alarmAt !== undefined && engine.status().status !== 'completed') {
						host.clock.moveTo(Math.max(host.now(), host.alarmAt));
						host.alarmAt = undefined;
						engine.alarm();
					}
					await turns();
				}
				const status = engine.status();
				expect(overlaps).toBe(0);
				expect(status.status).toBe('completed');
				expect(status.output).toEqual({ sum: 11 * ((n * (n - 1)) / 2), events: sent });
				for (const s of status.steps.filter((x) => x.kind === 'do')) expect(executions.get(s.name)).toBe(s.attempts);
			}),
			{ numRuns: 100, seed: 11 },
		);
	}, 120_000);
});
