import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineRegistry } from '../../src/engine/definition/registry';
import { ErrorCode } from '../../src/engine/support/errors';
import { placeOf } from '../../src/engine/support/group-id';
import { Workflow, type StepOf } from '../../src/authoring';
import { World } from './child-world';

// A child in another group than its parent's, opted in per call (docs/residency.md "Across groups"):
// engine instances on virtual hosts that reach each other through a ChildPort (child-world.ts).

class EuOrder extends Workflow<{ amount: number }, { settled: number }> {
	static override readonly type = 'eu-order';
	static override payload = z.object({ amount: z.number() });
	static override events = { go: z.object({}) };
	async run(step: StepOf<typeof EuOrder>, { amount }: { amount: number }) {
		await step.waitForEvent('go');
		return step.do('settle', () => ({ settled: amount }));
	}
}

class HomeParent extends Workflow<{ allow?: boolean; explicitId?: string; start?: boolean }, unknown> {
	static override readonly type = 'home-parent';
	async run(step: StepOf<typeof HomeParent>, { allow, explicitId, start }: { allow?: boolean; explicitId?: string; start?: boolean }) {
		const options = { payload: { amount: 5 }, ...(allow === undefined ? {} : { allowCrossGroup: allow }), ...(explicitId ? { id: explicitId } : {}) };
		try {
			if (start) return { started: await step.start('order', EuOrder, options) };
			return { order: await step.invoke('order', EuOrder, options) };
		} catch (error) {
			return { refused: (error as { code?: string }).code, message: (error as Error).message };
		}
	}
}

const registry = defineRegistry(
	{ 'eu-order': { workflow: EuOrder, group: 'eu' }, 'home-parent': { workflow: HomeParent } },
	{ groups: { default: 'global', groups: { eu: { jurisdiction: 'eu' } } } },
);
const CHILD = 'eu.eu~.::-::p::order';

/** A world whose hosts run short children inline (as the runner's do): a cross-group child must not. */
async function parentWith(payload: object): Promise<World> {
	const world = new World(registry, true);
	await world.engine('p').create('p', 'home-parent', payload);
	await world.idle();
	return world;
}

describe('a child in another group (allowCrossGroup)', () => {
	it("creates the child in its type's group under the documented id, never inline, and a replay after a crash finds the same child", async () => {
		const world = await parentWith({ allow: true });
		expect(world.engine('p').status()).toMatchObject({ status: 'waiting' });
		expect(world.transplanted).toEqual([]);
		expect([...world.engines.keys()].filter((id) => id !== 'p')).toEqual([CHILD]);
		expect(placeOf(CHILD)).toMatchObject({ group: 'eu', jurisdiction: 'eu' });
		expect(world.engine(CHILD).status()).toMatchObject({ type: 'eu-order', status: 'waiting', parentId: 'p' });
		// kill -9 of the parent: its replay asks the same child, and starts no second one.
		world.evict('p');
		await world.advance(2_000);
		await world.engine(CHILD).sendEvent('go', {});
		await world.idle();
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: { order: { settled: 5 } } });
		expect([...world.engines.keys()].filter((id) => id !== 'p')).toEqual([CHILD]);
		// The opt-in is on the child's record of its parent.
		expect(world.engine(CHILD).history().events[0]).toMatchObject({ kind: 'workflow.created', parent: { id: 'p', step: 'order', crossGroup: true } });
	});

	it('refuses the child without the option (CROSS_GROUP), and an explicit id in another group without it too', async () => {
		const refused = await parentWith({});
		expect(refused.engine('p').status().output).toMatchObject({ refused: ErrorCode.StepFailed, message: expect.stringContaining('unless its step passes allowCrossGroup: true') });
		const explicit = await parentWith({ explicitId: 'eu.eu~mine' });
		expect(explicit.engine('p').status().output).toMatchObject({ refused: ErrorCode.StepFailed, message: expect.stringContaining('would live in another group') });
		for (const world of [refused, explicit]) {
			expect(world.engine('p').history().events.find((e) => e.kind === 'child.failed')).toMatchObject({ status: 'refused', error: { code: ErrorCode.CrossGroup } });
		}
		expect(explicit.engine('eu.eu~mine').exists).toBe(false);
		const allowed = await parentWith({ explicitId: 'eu.eu~mine', allow: true });
		expect(allowed.engine('eu.eu~mine').status()).toMatchObject({ status: 'waiting', parentId: 'p' });
	});

	it("starts a child in another group with step.start, and terminating the parent terminates it", async () => {
		const world = await parentWith({ allow: true, start: true });
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: { started: CHILD } });
		const waiting = await parentWith({ allow: true });
		waiting.engine('p').terminate();
		await waiting.idle();
		expect(waiting.engine(CHILD).status()).toMatchObject({ status: 'terminated' });
	});
});
