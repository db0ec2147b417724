import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/engine/errors';
import type { Step } from '../../src/engine/types';
import { Workflow } from '../../src/workflow';
import { FakeHost, registryOf, startInstance } from './fake-host';

/** Counts how often each step function ran; `failCharge` makes the charge fail once for good. */
const runs = new Map<string, number>();
let failCharge = false;
const ran = (name: string) => runs.set(name, (runs.get(name) ?? 0) + 1);

class Order extends Workflow<{}, string> {
	static override readonly type = 'order';
	async run(step: Step) {
		const reserved = await step.do('reserve', () => (ran('reserve'), `r${runs.get('reserve')}`));
		await step.do('cool-down', () => ran('cool-down') && null);
		const charged = await step.do(
			'charge-card',
			() => {
				ran('charge-card');
				if (failCharge) throw new Error('card declined');
				return `c${runs.get('charge-card')}`;
			},
			{ retries: { limit: 0, delay: '1s' } },
		);
		const shipped = await step.do('ship', () => (ran('ship'), `s${runs.get('ship')}`));
		return `${reserved}/${charged}/${shipped}`;
	}
}
const registry = registryOf(Order);

async function finished(fail = false) {
	runs.clear();
	failCharge = fail;
	const started = await startInstance(registry, 'order', {});
	return started;
}

describe('restart from a step', () => {
	it('replays the completed steps before it and runs it and every later step anew', async () => {
		const { engine, host } = await finished();
		expect(engine.status().error).toBeUndefined();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'r1/c1/s1' });
		expect(engine.restart({ from: 'charge-card' })).toBe('created');
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'r1/c2/s2', generation: 1 });
		expect(Object.fromEntries(runs)).toEqual({ reserve: 1, 'cool-down': 1, 'charge-card': 2, ship: 2 });
	});

	it('turns a failed step into a completed run once the cause is fixed, without repeating the steps before it', async () => {
		const { engine, host } = await finished(true);
		expect(engine.status().status).toBe('errored');
		failCharge = false;
		engine.restart({ from: 'charge-card' });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'r1/c2/s1' });
		expect(runs.get('reserve')).toBe(1);
	});

	it('records the restart with its from and how many steps it kept, first in the new generation', async () => {
		const { engine, host } = await finished();
		engine.restart({ from: 'ship' });
		await host.idle();
		const page = engine.history();
		expect(page.generation).toBe(1);
		expect(page.events[0]).toMatchObject({ kind: 'workflow.restarted', previousGeneration: 0, from: 'ship', keptSteps: 3 });
		expect(page.events.filter((e) => e.kind === 'step.started').map((e) => (e as { step: string }).step)).toEqual(['ship']);
	});

	it('refuses a step the run did not record with UNKNOWN_STEP, naming the recorded ones, and changes nothing', async () => {
		const { engine, host } = await finished();
		const before = engine.status();
		expect(() => engine.restart({ from: 'refund' })).toThrow(expect.objectContaining({ code: ErrorCode.UnknownStep, message: expect.stringContaining('reserve, cool-down, charge-card, ship') }));
		await host.idle();
		expect(engine.status()).toEqual(before);
		expect(engine.history().events.at(-1)?.kind).toBe('workflow.completed');
	});

	it.for([[''], [42], ['x'.repeat(257)]] as const)('refuses from = %j with UNKNOWN_STEP', async ([from]) => {
		const { engine } = await finished();
		expect(() => engine.restart({ from: from as string })).toThrow(expect.objectContaining({ code: ErrorCode.UnknownStep }));
		expect(engine.status().generation).toBe(0);
	});

	it('survives a crash right after the restart: an engine over what was stored then replays the kept steps and finishes', async () => {
		const { engine, host } = await finished();
		engine.restart({ from: 'charge-card' });
		// The storage as the restart's transaction left it, before any pass ran: what a kill -9 leaves.
		const survivor = new FakeHost(registry);
		Object.assign(survivor.store, structuredClone({ ...host.store }));
		survivor.alarmAt = host.alarmAt;
		await host.idle();
		const revived = survivor.engine();
		expect(revived.status()).toMatchObject({ status: 'created', generation: 1 });
		await survivor.fireAlarm(revived);
		expect(revived.status()).toMatchObject({ status: 'completed', output: 'r1/c3/s3' });
		expect(runs.get('reserve')).toBe(1);
	});
});
