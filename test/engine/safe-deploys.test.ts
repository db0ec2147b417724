import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/engine/support/errors';
import { defineRegistry } from '../../src/engine/definition/registry';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

/** Step functions that ran, by name, across every version of the code in a test. */
let ran: string[] = [];
const effect = (name: string) => () => {
	ran.push(name);
	return name;
};
const approval = {} as { ok: boolean };

/** Version 1 of an order: reserve, wait for approval, charge. */
class OrderV1 extends Workflow<{}, string> {
	static override readonly type = 'order';
	static override events = { approval };
	async run(step: Step<typeof OrderV1.events>) {
		await step.do('reserve', effect('reserve'));
		await step.waitForEvent('approval');
		await step.do('charge', effect('charge'));
		await step.sleep('settle', '1 hour');
		return step.do('receipt', effect('receipt'));
	}
}

/** Version 2 adds a fraud check before the charge, guarded by a patch. */
class OrderV2Patched extends Workflow<{}, string> {
	static override readonly type = 'order';
	static override events = { approval };
	async run(step: Step<typeof OrderV2Patched.events>) {
		await step.do('reserve', effect('reserve'));
		await step.waitForEvent('approval');
		if (await step.patched('fraud-check')) await step.do('fraud-check', effect('fraud-check'));
		await step.do('charge', effect('charge'));
		await step.sleep('settle', '1 hour');
		return step.do('receipt', effect('receipt'));
	}
}

/** The same change without a patch: unsafe for instances that already charged. */
class OrderV2Unpatched extends Workflow<{}, string> {
	static override readonly type = 'order';
	static override events = { approval };
	async run(step: Step<typeof OrderV2Unpatched.events>) {
		await step.do('reserve', effect('reserve'));
		await step.waitForEvent('approval');
		await step.do('fraud-check', effect('fraud-check'));
		await step.do('charge', effect('charge'));
		await step.sleep('settle', '1 hour');
		return step.do('receipt', effect('receipt'));
	}
}

/** A fraud check moved before the approval wait, without a patch: an instance waiting for approval diverges. */
class OrderV2CheckFirst extends Workflow<{}, string> {
	static override readonly type = 'order';
	static override events = { approval };
	async run(step: Step<typeof OrderV2CheckFirst.events>) {
		await step.do('reserve', effect('reserve'));
		await step.do('fraud-check', effect('fraud-check'));
		await step.waitForEvent('approval');
		return step.do('charge', effect('charge'));
	}
}

/** Starts an instance on `from`, then "deploys" `to`: a new engine with the new code over the same storage. */
async function deploy(from: typeof Workflow<{}, string>, to: typeof Workflow<{}, string>, before: (host: VirtualHost) => Promise<void>) {
	ran = [];
	const old = new VirtualHost({ registry: registryOf(from as never) });
	const engine = old.engine();
	await engine.create('wf-1', 'order', {});
	await old.idle();
	await before(old);
	// The Durable Object's storage, alarm and time survive a deploy.
	const host = new VirtualHost({ registry: registryOf(to as never), durable: old.durable, clock: old.clock });
	ran = [];
	return { host, engine: host.engine() };
}

const approve = async (host: VirtualHost, engine = host.engine()) => {
	await engine.sendEvent('approval', { ok: true });
	await host.idle();
};
const charged = async (host: VirtualHost) => approve(host); // leaves the instance sleeping after "charge"

describe('step.patched', () => {
	it('takes the new branch on an instance that had not reached the patch point, and records the marker', async () => {
		const { host, engine } = await deploy(OrderV1, OrderV2Patched, async () => {}); // waiting for approval
		await approve(host, engine);
		expect(ran).toEqual(['fraud-check', 'charge']);
		expect(engine.history().events.map((e) => e.kind)).toContain('patch.recorded');
		host.advance(3_600_000);
		await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'receipt' });
	});

	it('keeps the old branch on an instance whose history passed the patch point without the marker', async () => {
		const { host, engine } = await deploy(OrderV1, OrderV2Patched, charged); // sleeping after "charge"
		host.advance(3_600_000);
		await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'receipt' });
		expect(ran).toEqual(['receipt']);
		expect(engine.history().events.map((e) => e.kind)).not.toContain('patch.recorded');
	});

	it('answers true again on every replay once the marker is recorded', async () => {
		ran = [];
		const host = new VirtualHost({ registry: registryOf(OrderV2Patched) });
		const engine = host.engine();
		await engine.create('wf-1', 'order', {});
		await host.idle();
		await approve(host, engine);
		expect(ran).toEqual(['reserve', 'fraud-check', 'charge']);
		ran = [];
		host.advance(3_600_000);
		await host.fireAlarm(engine);
		expect(ran).toEqual(['receipt']);
		expect(engine.status().status).toBe('completed');
	});

	it('deprecatePatch records the marker on new runs and accepts histories without it', async () => {
		class OrderV3 extends Workflow<{}, string> {
			static override readonly type = 'order';
			static override events = { approval };
			async run(step: Step<typeof OrderV3.events>) {
				await step.do('reserve', effect('reserve'));
				await step.waitForEvent('approval');
				await step.deprecatePatch('fraud-check');
				await step.do('fraud-check', effect('fraud-check'));
				await step.do('charge', effect('charge'));
				await step.sleep('settle', '1 hour');
				return step.do('receipt', effect('receipt'));
			}
		}
		const { host, engine } = await deploy(OrderV2Patched, OrderV3, async () => {});
		await approve(host, engine);
		expect(ran).toEqual(['fraud-check', 'charge']);
		expect(engine.status().status).toBe('sleeping');
	});
});

describe('divergence detection', () => {
	it('stops an instance whose history has a step where the new code asks for another, running no step function', async () => {
		const { host, engine } = await deploy(OrderV1, OrderV2Unpatched, charged);
		host.advance(3_600_000);
		await host.fireAlarm(engine);
		expect(ran).toEqual([]);
		const status = engine.status();
		expect(status.status).toBe('diverged');
		expect(status.error).toMatchObject({ name: 'DivergenceError', code: ErrorCode.Diverged });
		expect(status.error!.message).toContain('position 2');
		expect(status.error!.message).toContain('do "charge"');
		expect(status.error!.message).toContain('do "fraud-check"');
		expect(engine.history().events.at(-1)).toMatchObject({
			kind: 'workflow.diverged',
			position: 2,
			recorded: { kind: 'do', name: 'charge' },
			requested: { kind: 'do', name: 'fraud-check' },
		});
		expect(host.indexEntries.at(-1)).toMatchObject({ status: 'diverged' });
	});

	it('catches a step name that is not deterministic', async () => {
		let n = 0;
		class Stamped extends Workflow<{}, void> {
			static override readonly type = 'stamped';
			async run(step: Step) {
				await step.do(`fetch-${n++}`, effect('fetch'));
				await step.sleep('nap', '1 minute');
			}
		}
		ran = [];
		const host = new VirtualHost({ registry: registryOf(Stamped) });
		const engine = host.engine();
		await engine.create('wf-1', 'stamped', {});
		await host.idle();
		host.advance(60_000);
		await host.fireAlarm(engine);
		expect(ran).toEqual(['fetch']);
		expect(engine.status()).toMatchObject({ status: 'diverged', error: { code: ErrorCode.Diverged } });
	});

	it('catches a removed step when run() ends before reaching recorded steps', async () => {
		class Shorter extends Workflow<{}, string> {
			static override readonly type = 'order';
			static override events = { approval };
			async run(step: Step<typeof Shorter.events>) {
				await step.do('reserve', effect('reserve'));
				await step.waitForEvent('approval');
				await step.sleep('settle', '1 hour');
				return 'done';
			}
		}
		const { host, engine } = await deploy(OrderV1, Shorter, charged);
		host.advance(3_600_000);
		await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'diverged' });
		expect(engine.history().events.at(-1)).toMatchObject({ kind: 'workflow.diverged', position: 2, recorded: { name: 'charge' }, requested: { kind: 'end' } });
	});

	it('runs nothing while diverged, then resumes after a fix and finishes', async () => {
		const { host, engine } = await deploy(OrderV1, OrderV2Unpatched, charged);
		host.advance(3_600_000);
		await host.fireAlarm(engine);
		expect(engine.status().status).toBe('diverged');
		expect(await host.fireAlarm(engine)).toBe(false); // no alarm: a diverged instance waits for an operator
		// The fix: the patched code, deployed over the same storage.
		const fixed = new VirtualHost({ registry: registryOf(OrderV2Patched) });
		fixed.store = host.store;
		fixed.clock.moveTo(host.now());
		const revived = fixed.engine();
		expect(revived.resume()).toBe('running');
		await fixed.idle();
		expect(revived.status()).toMatchObject({ status: 'completed', output: 'receipt' });
		expect(revived.status().error).toBeUndefined();
		expect(ran).toEqual(['receipt']);
	});

	it('restarts a diverged instance from the start', async () => {
		const { host, engine } = await deploy(OrderV1, OrderV2Unpatched, charged);
		host.advance(3_600_000);
		await host.fireAlarm(engine);
		expect(engine.restart()).toBe('created');
		await host.idle();
		expect(engine.status().status).toBe('waiting');
		expect(ran).toEqual(['reserve']);
	});

	it('counts and records the event a diverged run never consumed when it is restarted, instead of losing it silently', async () => {
		const { host, engine } = await deploy(OrderV1, OrderV2CheckFirst, async () => {});
		await engine.sendEvent('approval', { ok: true }); // the pass it starts diverges before any wait takes it
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'diverged', bufferedEvents: 1, droppedEvents: 0 });
		engine.restart();
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'waiting', generation: 1, bufferedEvents: 0, droppedEvents: 1 });
		expect(engine.history({ generation: 0 }).events.at(-1)).toMatchObject({ kind: 'workflow.diverged' }); // the old run's outcome stays last
		expect(engine.history({ generation: 1 }).events[0]).toMatchObject({ kind: 'workflow.restarted', previousGeneration: 0, droppedEvents: 1 });
	});

	it('never raises a false divergence for parallel steps that replay in another order', async () => {
		let slowFirst = true;
		class Fanout extends Workflow<{}, number> {
			static override readonly type = 'fanout';
			async run(step: Step) {
				const branch = async (b: string, delays: number[]) => {
					let sum = 0;
					for (const [i, ms] of delays.entries()) {
						sum += await step.do(`${b}-${i}`, async () => {
							await new Promise((r) => setTimeout(r, slowFirst ? ms : 0));
							return i;
						});
					}
					return sum;
				};
				const sums = await Promise.all([branch('a', [1, 1, 1, 1]), branch('b', [5, 0]), branch('c', [0, 0, 0, 0, 0, 0])]);
				await step.sleep('nap', '1 minute');
				// New steps after the sleep, asked for by branches that replay at different depths.
				const more = await Promise.all([branch('d', [0]), branch('e', [0, 0])]);
				return [...sums, ...more].reduce((x, y) => x + y, 0);
			}
		}
		const host = new VirtualHost({ registry: registryOf(Fanout) });
		const engine = host.engine();
		await engine.create('wf-1', 'fanout', {});
		await host.idle();
		expect(engine.status().status).toBe('sleeping');
		slowFirst = false;
		host.advance(60_000);
		await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 6 + 1 + 15 + 0 + 1 });
	});

	it('never raises a false divergence when one branch asks for a new step while a sibling still replays recorded ones', async () => {
		class Lagging extends Workflow<{}, string[]> {
			static override readonly type = 'lagging';
			async run(step: Step) {
				const a = async () => {
					await step.do('a0', () => 'a0');
					await step.do('a1', () => 'a1');
					await step.sleep('a-nap', '1 minute');
					return step.do('a2', () => 'a2');
				};
				const b = async () => {
					await step.do('b0', () => new Promise<string>((r) => setTimeout(() => r('b0'), 5)));
					return step.do('b1', () => 'b1');
				};
				const [x, y] = await Promise.all([a(), b()]);
				return [x, y];
			}
		}
		const host = new VirtualHost({ registry: registryOf(Lagging) });
		const engine = host.engine();
		await engine.create('wf-1', 'lagging', {});
		await host.idle();
		// The sleep stopped branch b after b0: its b1 is new on the next pass, asked for
		// while branch a has yet to reach its recorded a1 and a-nap.
		expect(engine.status().steps.map((s) => s.name).sort()).toEqual(['a-nap', 'a0', 'a1', 'b0']);
		host.advance(60_000);
		await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', output: ['a2', 'b1'] });
	});

	it('never raises a false divergence while a sibling branch replays hundreds of recorded steps across yields', async () => {
		class LongSibling extends Workflow<{}, number> {
			static override readonly type = 'long-sibling';
			async run(step: Step) {
				let reachedSleep!: () => void;
				const aAtSleep = new Promise<void>((r) => (reachedSleep = r));
				const a = async () => {
					let sum = 0;
					for (let i = 0; i < 700; i++) sum += await step.do(`a${i}`, () => 1);
					reachedSleep();
					await step.sleep('a-nap', '1 minute');
					return sum;
				};
				const b = async () => {
					await step.do('b0', async () => {
						await aAtSleep;
						return 0;
					});
					return step.do('b1', () => 1);
				};
				const [x, y] = await Promise.all([a(), b()]);
				return x + y;
			}
		}
		const host = new VirtualHost({ registry: registryOf(LongSibling) });
		host.logStepCompletions = false;
		const engine = host.engine();
		await engine.create('wf-1', 'long-sibling', {});
		await host.idle();
		expect(engine.status().stepCounts).toMatchObject({ completed: 701, sleeping: 1 });
		host.advance(60_000);
		await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 701 });
	});

	it('never raises a false divergence for the losers of a Promise.race still replaying when run() returns', async () => {
		class Racer extends Workflow<{}, string> {
			static override readonly type = 'racer';
			async run(step: Step) {
				const slow = step.do('slow-1', () => 'slow').then(() => step.do('slow-2', () => 'slow'));
				const winner = await Promise.race([step.do('fast', () => 'fast'), slow]);
				await step.sleep('nap', '1 minute');
				return winner;
			}
		}
		const host = new VirtualHost({ registry: registryOf(Racer) });
		const engine = host.engine();
		await engine.create('wf-1', 'racer', {});
		await host.idle();
		host.advance(60_000);
		await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'fast' });
	});
});

describe('code version labels', () => {
	const at = (version: string | undefined, workflow: typeof Workflow<{}, string> = OrderV1) =>
		defineRegistry({ order: { workflow: workflow as typeof OrderV1, ...(version !== undefined ? { version } : {}) } });

	it('records the version that started an instance and the one that last ran it, in the status, the index entry and the history', async () => {
		ran = [];
		const old = new VirtualHost({ registry: at('v1') });
		const engine = old.engine();
		await engine.create('wf-1', 'order', {});
		await old.idle();
		expect(engine.status()).toMatchObject({ codeVersion: 'v1', lastCodeVersion: 'v1' });
		expect(old.indexEntries.at(-1)).toMatchObject({ codeVersion: 'v1' });
		expect(engine.history().events[0]).toMatchObject({ kind: 'workflow.created', codeVersion: 'v1' });

		const host = new VirtualHost({ registry: at('v2', OrderV2Patched), durable: old.durable, clock: old.clock });
		const redeployed = host.engine();
		await redeployed.sendEvent('approval', { ok: true });
		await host.idle();
		expect(redeployed.status()).toMatchObject({ codeVersion: 'v1', lastCodeVersion: 'v2' });
		expect(host.indexEntries.at(-1)).toMatchObject({ codeVersion: 'v1' });
		expect(redeployed.history().events.filter((e) => e.kind === 'workflow.code_changed')).toEqual([
			expect.objectContaining({ previous: 'v1', current: 'v2' }),
		]);
	});

	it('says which code parked a diverged instance: the last code version, a code_changed record and the version on workflow.diverged', async () => {
		ran = [];
		const old = new VirtualHost({ registry: at('ver-a') });
		await old.engine().create('wf-1', 'order', {});
		await old.idle();
		await approve(old); // sleeping after "charge", as ver-a ran it
		const host = new VirtualHost({ registry: at('ver-b', OrderV2Unpatched), durable: old.durable, clock: old.clock });
		host.advance(3_600_000);
		host.alarmAt = host.now();
		const engine = host.engine();
		await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'diverged', codeVersion: 'ver-a', lastCodeVersion: 'ver-b' });
		const events = engine.history().events;
		expect(events.at(-2)).toMatchObject({ kind: 'workflow.code_changed', previous: 'ver-a', current: 'ver-b' });
		expect(events.at(-1)).toMatchObject({ kind: 'workflow.diverged', codeVersion: 'ver-b', recorded: { name: 'charge' } });
	});

	it('leaves the labels out when the registry gives no version, and refuses a malformed one', () => {
		expect(at('has space').problem?.message).toMatch(/version must be 1-64 visible ASCII characters/);
		expect(() => at('x'.repeat(65)).get('order')).toThrow(/version/);
		expect(at(undefined).get('order').version).toBeNull();
	});
});
