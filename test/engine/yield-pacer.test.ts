import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/engine/definition/types';
import { CALM_MS, FIRST_STEPS_PER_YIELD, MAX_STEPS_PER_YIELD, MIN_STEPS_PER_MS, MIN_STEPS_PER_YIELD, SLICE_MS } from '../../src/engine/steps/yield-pacer';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

class Long extends Workflow<{}, number> {
	static override readonly type = 'long';
	async run(step: Step) {
		let total = 0;
		for (let i = 0; i < 3000; i++) total += await step.do(`s${i}`, () => i);
		return total;
	}
}

/**
 * Runs 3000 new steps with a host whose yields report `othersRan`; returns the steps between yields. Each yield moves the
 * clock by `msPerYield` (a number, or a function of the yield's number and the steps of the slice before it: the round's time).
 */
async function slices(othersRan: (yieldNumber: number) => boolean | undefined, msPerYield: number | ((yieldNumber: number, slice: number) => number) = 0): Promise<number[]> {
	const host = new VirtualHost({ registry: registryOf(Long) });
	// One pass of the whole run: the invocation budget (invocation-budget.test.ts) would end it at 1,000 steps.
	host.invocationBudget = { steps: Number.MAX_SAFE_INTEGER, ms: Number.MAX_SAFE_INTEGER };
	const yieldToEventLoop = host.yieldToEventLoop.bind(host);
	const stepsAt: number[] = [];
	let stepsDone = 0;
	const writeStep = host.store.writeStep.bind(host.store);
	host.store.writeStep = (row) => {
		if (row.status === 'completed') stepsDone++;
		writeStep(row);
	};
	host.yieldToEventLoop = async () => {
		const slice = stepsDone - (stepsAt.at(-1) ?? 0);
		stepsAt.push(stepsDone);
		await yieldToEventLoop();
		host.advance(typeof msPerYield === 'number' ? msPerYield : msPerYield(stepsAt.length, slice));
		return othersRan(stepsAt.length);
	};
	const engine = host.engine();
	await engine.create('wf-1', 'long', {});
	await host.idle();
	expect(engine.status()).toMatchObject({ status: 'completed', output: (2999 * 3000) / 2 });
	return stepsAt.map((at, i) => at - (stepsAt[i - 1] ?? 0));
}

describe('yielding the isolate during a long run of new steps', () => {
	it('yields less and less often while nobody else is waiting and rounds are quick, up to the longest slice (fewer commits)', async () => {
		// CPU-light steps: a round (slice and commit) takes 1 ms whatever its length.
		const lengths = await slices(() => false, 1);
		expect(lengths.slice(0, 3)).toEqual([FIRST_STEPS_PER_YIELD, FIRST_STEPS_PER_YIELD * 2, FIRST_STEPS_PER_YIELD * 4]);
		expect(Math.max(...lengths)).toBe(MAX_STEPS_PER_YIELD);
		expect(lengths.length).toBeLessThan(15);
	});

	it('sizes slices by the time their rounds take, so costly steps never hold the isolate much past SLICE_MS', async () => {
		// Each step costs 0.5 ms: a slice of n steps and its commit take n / 2 + 1 ms.
		const lengths = await slices(() => false, (_, slice) => slice / 2 + 1);
		const settled = lengths.slice(5, -1);
		expect(Math.max(...settled) / 2 + 1).toBeLessThanOrEqual(SLICE_MS * 2);
		expect(Math.min(...settled) / 2 + 1).toBeGreaterThanOrEqual(SLICE_MS / 4);
		// Steps of 20 ms each: a slice of its own is as short as slices go.
		const heavy = await slices(() => false, (_, slice) => slice * 20);
		expect(new Set(heavy.slice(4, -1))).toEqual(new Set([MIN_STEPS_PER_YIELD]));
	});

	it('returns to short slices as soon as other work of the isolate ran during a yield', async () => {
		// Other work shows up at the 5th yield only.
		const lengths = await slices((n) => n === 5);
		expect(lengths[5]).toBe(MIN_STEPS_PER_YIELD);
		expect(lengths[4]).toBeGreaterThan(MIN_STEPS_PER_YIELD);
	});

	it('keeps short slices for a while after others showed up, so the next request of a burst finds no long slice', async () => {
		// Other work during the 5th yield only; each of the yields after it takes 25 ms of the clock (quick ones after those).
		const calmYields = Math.ceil(CALM_MS / 25);
		const lengths = await slices((n) => n === 5, (n) => (n > 5 && n <= 5 + calmYields ? 25 : 1));
		expect(lengths.slice(5, 5 + calmYields)).toEqual(Array(calmYields).fill(MIN_STEPS_PER_YIELD));
		expect(Math.max(...lengths.slice(5 + calmYields))).toBe(MAX_STEPS_PER_YIELD);
	});

	it('does not let others starve a long run: short slices grow while the run falls under its least progress, and shrink again', async () => {
		// Others during every yield, each yield taking 20 ms: 2 steps per 20 ms is far under 0.5 steps/ms.
		const busy = await slices(() => true, 20);
		expect(busy.slice(1, 4)).toEqual([MIN_STEPS_PER_YIELD, MIN_STEPS_PER_YIELD, MIN_STEPS_PER_YIELD]);
		// Settles around the least progress: 16 steps per 20-ms yield is 0.8 steps/ms, 8 is 0.4.
		const settled = busy.slice(20, -1);
		expect(Math.min(...settled)).toBeGreaterThanOrEqual(8);
		expect(settled.reduce((a, b) => a + b, 0) / (settled.length * 20)).toBeGreaterThanOrEqual(MIN_STEPS_PER_MS * 0.8);
		// Quick yields (1 ms, one poller): 2 steps a yield is 2 steps/ms, enough: the slices stay short.
		const light = await slices(() => true, 1);
		expect(new Set(light.slice(1))).toEqual(new Set([MIN_STEPS_PER_YIELD]));
	});

	it('keeps short slices when the host cannot tell whether others are waiting', async () => {
		const lengths = await slices(() => undefined);
		expect(lengths[0]).toBe(FIRST_STEPS_PER_YIELD);
		expect(new Set(lengths.slice(1))).toEqual(new Set([MIN_STEPS_PER_YIELD]));
	});
});
