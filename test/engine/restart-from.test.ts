import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/engine/support/errors';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf, startInstance } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

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
/** A `sleep` and a `do` share the name `checkpoint` (Cloudflare's "should default restart from step type to step.do"). */
class SharedName extends Workflow<{}, string> {
	static override readonly type = 'shared-name';
	async run(step: Step) {
		const setup = await step.do('setup', () => (ran('setup'), `s${runs.get('setup')}`));
		await step.sleep('checkpoint', 0);
		const between = await step.do('between', () => (ran('between'), `b${runs.get('between')}`));
		const checkpoint = await step.do('checkpoint', () => (ran('checkpoint'), `c${runs.get('checkpoint')}`));
		await step.sleep('nap', 0);
		return `${setup}/${between}/${checkpoint}`;
	}
}
/** A run that goes on past a step that failed for good (caught) and a wait that timed out (found from outside: both ended the kept steps). */
class GoesOn extends Workflow<{}, string> {
	static override readonly type = 'goes-on';
	static override events = { late: {} as {} };
	async run(step: Step<typeof GoesOn.events>) {
		const first = await step.do('first', () => (ran('first'), `f${runs.get('first')}`));
		const lost = await step
			.do('flaky', () => (ran('flaky'), Promise.reject(new Error('down'))), { retries: { limit: 0, delay: '1s' } })
			.then(() => 'ok', () => 'caught');
		const answer = await step.waitForEvent('late', { timeout: '1s' }).then(() => 'came', () => 'timed-out');
		const after = await step.do('after', () => (ran('after'), `a${runs.get('after')}`));
		const last = await step.do('last', () => (ran('last'), `l${runs.get('last')}`));
		return `${first}/${lost}/${answer}/${after}/${last}`;
	}
}
/** Two steps side by side: `a` fails for good while `failCharge` is set and ends the run; `b`, recorded after it, completes. */
class SideBySide extends Workflow<{}, string> {
	static override readonly type = 'side-by-side';
	async run(step: Step) {
		const a = step.do('a', () => {
			ran('a');
			if (failCharge) throw new Error('a is down');
			return `a${runs.get('a')}`;
		}, { retries: { limit: 0, delay: '1s' } });
		const b = step.do('b', async () => (ran('b'), `b${runs.get('b')}`));
		return (await Promise.all([a, b])).join('/');
	}
}
const registry = registryOf(Order, SharedName, GoesOn, SideBySide);

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

	it('keeps a step that failed for good and a wait that timed out before it, when the run went on past them: the steps after them are not run again', async () => {
		runs.clear();
		const { engine, host } = await startInstance(registry, 'goes-on', {});
		await host.idle();
		while (engine.status().status === 'waiting') await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'f1/caught/timed-out/a1/l1' });
		engine.restart({ from: 'last' });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'f1/caught/timed-out/a1/l2', generation: 1 });
		expect(Object.fromEntries(runs)).toEqual({ first: 1, flaky: 1, after: 1, last: 2 });
		expect(engine.history().events[0]).toMatchObject({ kind: 'workflow.restarted', from: 'last', keptSteps: 4 });
	});

	it('runs a failed step again on a restart of a run that errored, even one recorded before the step restarted from: its failure may be what ended the run', async () => {
		runs.clear();
		failCharge = true;
		const { engine, host } = await startInstance(registry, 'side-by-side', {});
		await host.idle();
		expect(engine.status().status).toBe('errored');
		failCharge = false;
		engine.restart({ from: 'b' });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'a2/b2' });
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

	it.for([[''], [42], ['x'.repeat(257)]] as const)('refuses from = %j, which cannot name a step, with INVALID_OPTIONS', async ([from]) => {
		const { engine } = await finished();
		expect(() => engine.restart({ from: from as string })).toThrow(expect.objectContaining({ code: ErrorCode.InvalidOptions }));
		expect(engine.status().generation).toBe(0);
	});

	// Cloudflare: engine.test.ts "should default restart from step type to step.do".
	it('restarts from the do step of a name a sleep shares when no kind is given, as Cloudflare does', async () => {
		runs.clear();
		const { engine, host } = await startInstance(registry, 'shared-name', {});
		expect(engine.status()).toMatchObject({ status: 'completed', output: 's1/b1/c1' });
		engine.restart({ from: 'checkpoint' });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 's1/b1/c2' });
		engine.restart({ from: { name: 'checkpoint' } });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 's1/b1/c3' });
	});

	it('restarts from the sleep of a shared name when the caller picks the kind', async () => {
		runs.clear();
		const { engine, host } = await startInstance(registry, 'shared-name', {});
		engine.restart({ from: { name: 'checkpoint', type: 'sleep', count: 1 } });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 's1/b2/c2' });
		const restarted = engine.history().events[0];
		expect(restarted).toMatchObject({ kind: 'workflow.restarted', from: 'checkpoint', fromType: 'sleep', keptSteps: 1 });
	});

	it('still restarts from a step of another kind named by a plain string when no do has that name', async () => {
		runs.clear();
		const { engine, host } = await startInstance(registry, 'shared-name', {});
		engine.restart({ from: 'nap' });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: 's1/b1/c1', generation: 1 });
		expect(engine.restart({ from: { name: 'nap', type: 'sleep' } })).toBe('created');
	});

	it('refuses a kind the name was not recorded with, and an occurrence past the first, with UNKNOWN_STEP', async () => {
		const { engine } = await finished();
		expect(() => engine.restart({ from: { name: 'reserve', type: 'sleep' } })).toThrow(expect.objectContaining({ code: ErrorCode.UnknownStep, message: expect.stringContaining('no sleep step "reserve"') }));
		// Step names are unique per kind in a run, so a name has one occurrence (Cloudflare counts repeats).
		expect(() => engine.restart({ from: { name: 'reserve', count: 2 } })).toThrow(expect.objectContaining({ code: ErrorCode.UnknownStep, message: expect.stringContaining('count 1') }));
		expect(engine.status().generation).toBe(0);
	});

	it.for([
		[{ name: 'reserve', type: 'nap' }, 'from.type'],
		[{ name: 'reserve', count: 0 }, 'from.count'],
		[{ name: 'reserve', count: 1.5 }, 'from.count'],
		[{ name: 'reserve', kind: 'do' }, '"kind"'],
		[{ type: 'do' }, 'from.name'],
	] as const)('refuses from = %j with INVALID_OPTIONS naming %s', async ([from, named]) => {
		const { engine } = await finished();
		expect(() => engine.restart({ from: from as never })).toThrow(expect.objectContaining({ code: ErrorCode.InvalidOptions, message: expect.stringContaining(named) }));
		expect(engine.status().generation).toBe(0);
	});

	it('survives a crash right after the restart: an engine over what was stored then replays the kept steps and finishes', async () => {
		const { engine, host } = await finished();
		engine.restart({ from: 'charge-card' });
		// The storage as the restart's transaction left it, before any pass ran: what a kill -9 leaves.
		const survivor = new VirtualHost({ registry, clock: host.clock });
		Object.assign(survivor.durable.store, structuredClone({ ...host.durable.store }));
		survivor.alarmAt = host.alarmAt;
		await host.idle();
		const revived = survivor.engine();
		expect(revived.status()).toMatchObject({ status: 'created', generation: 1 });
		await survivor.fireAlarm(revived);
		expect(revived.status()).toMatchObject({ status: 'completed', output: 'r1/c3/s3' });
		expect(runs.get('reserve')).toBe(1);
	});
});
