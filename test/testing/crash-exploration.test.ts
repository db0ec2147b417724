import { describe, expect, it } from 'vitest';
import { assertCrashSafe, CrashDivergenceError, exploreCrashes } from '../../src/testing';
import { NonRetryableError } from '../../src/engine/support/errors';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { CarefulChargeWorkflow, CarelessChargeWorkflow, FakeBank, OrderWorkflow, SilentChargeWorkflow } from './fixtures';

const freshBank = () => ({ bank: new FakeBank() });

describe('exploreCrashes', () => {
	it('finds the non-idempotent charge and names the crash point: just before its completion is written', async () => {
		const report = await exploreCrashes(CarelessChargeWorkflow, { payload: {}, env: freshBank });
		expect(report.baseline.outcome).toEqual({ status: 'completed', output: { chargeNumber: 1 } });
		expect(report.ok).toBe(false);
		expect(report.divergent.map((run) => run.point.label)).toEqual([expect.stringMatching(/^before write \d+ \((?:status running, )?step\.started "charge", step\.completed "charge"\)$/)]);
		expect(report.divergent[0]).toMatchObject({ outcome: { status: 'completed', output: { chargeNumber: 2 } }, reran: [{ step: 'charge', times: 2 }] });
		expect(() => assertCrashSafe(report)).toThrow(CrashDivergenceError);
		expect(() => assertCrashSafe(report)).toThrow(/before write \d+ \(step\.started "charge", step\.completed "charge"\).*ran twice: charge/);
	});

	it('finds a step that charges twice without changing the output once the test says what the outside world saw', async () => {
		// Outcomes alone cannot see it: the output is the same, only `reran` mentions the step.
		const blind = await exploreCrashes(SilentChargeWorkflow, { payload: {}, env: freshBank });
		expect(blind).toMatchObject({ ok: true, effectsChecked: false });
		expect(blind.reran.map((r) => r.step)).toEqual(['charge']);

		const report = await exploreCrashes(SilentChargeWorkflow, { payload: {}, env: freshBank, effects: (env: { bank: FakeBank }) => ({ charges: env.bank.charges }) });
		expect(report).toMatchObject({ ok: false, effectsChecked: true, baseline: { effects: { charges: 1 } } });
		expect(report.divergent.map((run) => run.point.label)).toEqual([expect.stringMatching(/^before write \d+ \((?:status running, )?step\.started "charge", step\.completed "charge"\)$/)]);
		expect(report.divergent[0]).toMatchObject({ sameOutcome: true, sameEffects: false, effects: { charges: 2 } });
		expect(() => assertCrashSafe(report)).toThrow(/left effects \{"charges":2\} \(without a crash: \{"charges":1\}\); ran twice: charge/);
		// With an idempotency key the same effects hold at every crash point.
		const careful = await exploreCrashes(CarefulChargeWorkflow, { payload: {}, env: freshBank, effects: (env: { bank: FakeBank }) => env.bank.charges });
		expect(careful.ok).toBe(true);
	});

	it('passes the same workflow with an idempotency key, and still lists where each step ran twice', async () => {
		const report = await exploreCrashes(CarefulChargeWorkflow, { payload: {}, env: freshBank });
		expect(report.ok).toBe(true);
		expect(() => assertCrashSafe(report)).not.toThrow();
		expect(report.runs.length).toBe(2 * report.baseline.writes.length);
		expect(report.runs.every((run) => run.outcome.status === 'completed')).toBe(true);
		expect(report.reran).toEqual([
			{ step: 'reserve', crashPoints: [expect.stringMatching(/before write \d+ \((?:status running, )?step\.started "reserve", step\.completed "reserve"\)/)] },
			{ step: 'charge', crashPoints: [expect.stringMatching(/before write \d+ \(step\.started "charge", step\.completed "charge"\)/)] },
		]);
	});

	it('crashes before and after every durable write, including the create and an event send, and restarts each time', async () => {
		const report = await exploreCrashes(OrderWorkflow, { payload: { sku: 'book' }, events: [{ event: 'confirm', payload: { by: 'ops' } }] });
		for (const record of ['workflow.created', 'event.received', 'event.consumed "confirm"']) {
			expect(report.baseline.writes.some((writes) => writes.includes(record))).toBe(true);
		}
		expect(report.ok).toBe(true);
		expect(report.runs.every((run) => run.outcome.status === 'completed')).toBe(true);
		expect(report.baseline.outcome).toMatchObject({ output: { confirmedBy: 'ops' } });
	});

	it('passes a workflow that errors on a step failing for good: an interrupted attempt adds to the count, not a divergence', async () => {
		class Declined extends Workflow<{}, void> {
			static override readonly type = 'declined';
			async run(step: Step) {
				await step.do('charge', () => {
					throw new NonRetryableError('card declined');
				});
			}
		}
		const report = await exploreCrashes(Declined, { payload: {} });
		expect(report.baseline.outcome).toMatchObject({ status: 'errored', error: { name: 'StepFailedError' } });
		expect(report.ok).toBe(true);
	});
});

