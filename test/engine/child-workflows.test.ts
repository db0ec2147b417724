import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ChildWorkflowError, ErrorCode } from '../../src/engine/support/errors';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';
import { World } from './child-world';
import { VirtualHost } from '../../src/testing/virtual-host';

const runs = new Map<string, number>();
const ran = (key: string) => runs.set(key, (runs.get(key) ?? 0) + 1).get(key)!;

class Double extends Workflow<{ n: number }, number> {
	static override readonly type = 'double';
	static override payload = z.object({ n: z.number() });
	static override events = { go: {} as {} };
	async run(step: Step<typeof Double.events>, { n }: { n: number }) {
		ran(`double:${this.ctx.id}`);
		if (n < 0) throw new Error(`cannot double ${n}`);
		if (n === 0) await step.waitForEvent('go');
		return step.do('double', () => n * 2);
	}
}

class Parent extends Workflow<{ n: number; abandon?: boolean }, string> {
	static override readonly type = 'parent';
	async run(step: Step, { n, abandon }: { n: number; abandon?: boolean }) {
		const receipt = await step.start('receipt', Double, { payload: { n: 1 } });
		try {
			const doubled = await step.invoke('double', Double, { payload: { n }, ...(abandon ? { onParentTerminate: 'abandon' as const } : {}) });
			return `${doubled} (receipt ${receipt})`;
		} catch (error) {
			if (error instanceof ChildWorkflowError) return `child ${error.childId} ${error.childStatus}: ${error.childError?.message}`;
			throw error;
		}
	}
}

/** Invokes the child with an explicit id, so a restarted parent invokes the same child again. */
class Reinvoker extends Workflow<{}, number> {
	static override readonly type = 'reinvoker';
	async run(step: Step) {
		return step.invoke('double', Double, { id: 'shared-double', payload: { n: 0 } });
	}
}

const MiB = 1024 * 1024;
/** Returns about 1 MiB of JSON once it hears "go". */
class Big extends Workflow<{}, string> {
	static override readonly type = 'big';
	static override events = { go: {} as {} };
	async run(step: Step<typeof Big.events>) {
		await step.waitForEvent('go');
		return `${this.ctx.id}:${'x'.repeat(MiB - 100)}`;
	}
}
/** Invokes `n` Big children at once and answers with the lengths of their outputs. */
class FanOut extends Workflow<{ n: number }, number[]> {
	static override readonly type = 'fan-out';
	async run(step: Step, { n }: { n: number }) {
		const outputs = await Promise.all(Array.from({ length: n }, (_, i) => step.invoke(`big-${i}`, Big, { payload: {} })));
		return outputs.map((output, i) => (output.startsWith(`f::big-${i}:`) ? output.length : -1));
	}
}

class Unregistered extends Workflow<{}, void> {
	static override readonly type = 'unregistered';
	async run() {}
}
class CallsUnregistered extends Workflow<{}, void> {
	static override readonly type = 'calls-unregistered';
	async run(step: Step) {
		await step.invoke('x', Unregistered, { payload: {} });
	}
}

/** One step that awaits a timer: a child that finishes, but not at once. */
class Slow extends Workflow<{}, number> {
	static override readonly type = 'slow';
	async run(step: Step) {
		ran(`slow:${this.ctx.id}`);
		return step.do('wait', () => new Promise<number>((resolve) => setTimeout(() => resolve(7), 20)));
	}
}
/** Invokes a child that waits for "go" beside one that finishes a little later. */
class Pair extends Workflow<{}, number[]> {
	static override readonly type = 'pair';
	async run(step: Step) {
		return Promise.all([step.invoke('waits', Double, { payload: { n: 0 } }), step.invoke('slow', Slow, { payload: {} })]);
	}
}

const registry = registryOf(Double, Parent, CallsUnregistered, Reinvoker, Big, FanOut, Slow, Pair);

let world: World;
beforeEach(() => {
	world = new World(registry);
	runs.clear();
});

async function startParent(payload: { n: number; abandon?: boolean }) {
	await world.engine('p').create('p', 'parent', payload);
	await world.idle();
	return world.engine('p');
}

describe('step.invoke', () => {
	it('starts the child with an id derived from the parent and the step, and returns its output', async () => {
		const parent = await startParent({ n: 21 });
		expect(parent.status()).toMatchObject({ status: 'completed', output: '42 (receipt p::receipt)' });
		expect(world.engine('p::double').status()).toMatchObject({ status: 'completed', output: 42, parentId: 'p' });
	});

	it('takes the output of a child that finishes at once from the call that created it, and the child sends no notice', async () => {
		const parent = await startParent({ n: 21 });
		expect(parent.status()).toMatchObject({ status: 'completed', output: '42 (receipt p::receipt)' });
		expect(world.outcomeCalls).toBe(0);
		expect(world.noticesFrom).not.toContain('p::double');
	});

	it('gets the outcome later when the answer that carried it is lost, and runs the child once', async () => {
		world.loseAnswers = true;
		const parent = await startParent({ n: 21 });
		expect(parent.status().status).toBe('sleeping');
		expect(world.noticesFrom).not.toContain('p::double');
		world.loseAnswers = false;
		await world.advance(2_000);
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: '42 (receipt p::receipt)' });
		expect(runs.get('double:p::double')).toBe(1);
	});

	it('records the child in both histories: child.started and child.completed in the parent, the parent in the child', async () => {
		const parent = await startParent({ n: 21 });
		const kinds = parent.history().events.filter((e) => e.kind.startsWith('child.'));
		expect(kinds).toMatchObject([
			{ kind: 'child.started', step: 'receipt', childId: 'p::receipt', childType: 'double', mode: 'start' },
			{ kind: 'child.started', step: 'double', childId: 'p::double', childType: 'double', mode: 'invoke' },
			{ kind: 'child.completed', step: 'double', childId: 'p::double', output: 42 },
		]);
		expect(world.engine('p::double').history().events[0]).toMatchObject({ kind: 'workflow.created', parent: { id: 'p', type: 'parent', step: 'double' } });
	});

	it('throws a catchable ChildWorkflowError with the child id, status and error when the child errors', async () => {
		const parent = await startParent({ n: -1 });
		expect(parent.status()).toMatchObject({ status: 'completed', output: 'child p::double errored: cannot double -1' });
		expect(parent.history().events.find((e) => e.kind === 'child.failed')).toMatchObject({ childId: 'p::double', status: 'errored', error: { message: 'cannot double -1' } });
	});

	it('throws ChildWorkflowError with status terminated when the child is terminated', async () => {
		const parent = await startParent({ n: 0 });
		expect(parent.status().status).toBe('waiting');
		world.engine('p::double').terminate();
		await world.idle();
		expect(parent.status()).toMatchObject({ status: 'completed', output: 'child p::double terminated: undefined' });
	});

	it('wakes the parent exactly once when the child finishes while the parent is evicted', async () => {
		await startParent({ n: 0 });
		world.evict('p');
		await world.engine('p::double').sendEvent('go', {});
		await world.idle();
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: '0 (receipt p::receipt)' });
		expect(world.engine('p').history().events.filter((e) => e.kind === 'child.completed')).toHaveLength(1);
		expect(runs.get('double:p::double')).toBe(2); // one pass waited for "go", one finished
	});

	it("takes the child's outcome from its notice, without calling the child back", async () => {
		await startParent({ n: 0 });
		const calls = world.outcomeCalls;
		await world.engine('p::double').sendEvent('go', {});
		await world.idle();
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: '0 (receipt p::receipt)' });
		expect(world.outcomeCalls).toBe(calls);
	});

	it.for<[string, () => unknown]>([
		['a malformed outcome', () => ({ status: 'completed', output: 42 })],
		['no outcome', () => undefined],
		['an unknown status', () => ({ status: 'done' })],
	])('ignores a notice with %s and asks the child itself', async ([, forge]) => {
		await startParent({ n: 0 });
		world.forge = forge;
		await world.engine('p::double').sendEvent('go', {});
		await world.idle();
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: '0 (receipt p::receipt)' });
	});

	it('hears of a child whose notice was lost (a crash between its end and the notice) by polling it from the alarm', async () => {
		const parent = await startParent({ n: 0 });
		world.deaf = true;
		await world.engine('p::double').sendEvent('go', {});
		await world.idle();
		expect(parent.status().status).toBe('waiting');
		await world.advance(2_000);
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: '0 (receipt p::receipt)' });
		expect(world.engine('p').history().events.filter((e) => e.kind === 'child.completed')).toHaveLength(1);
	});

	it('retries the create while the child cannot be reached, and never starts a second child', async () => {
		world.unreachable = true;
		const parent = await startParent({ n: 5 });
		expect(parent.status().status).toBe('sleeping');
		world.unreachable = false;
		await world.advance(2_000);
		await world.advance(2_000);
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: '10 (receipt p::receipt)' });
		expect(runs.get('double:p::double')).toBe(1);
		expect(runs.get('double:p::receipt')).toBe(1);
	});

	it('starts no second child when the parent crashes after the create and replays', async () => {
		await startParent({ n: 0 });
		const revived = world.evict('p');
		revived.alarm();
		await world.idle();
		await world.advance(10_000);
		expect(world.engine('p::double').history().events.filter((e) => e.kind === 'workflow.created')).toHaveLength(1);
		expect(revived.history().events.filter((e) => e.kind === 'child.started')).toHaveLength(2);
	});

	it('refuses an unregistered child class with UNKNOWN_TYPE before creating anything', async () => {
		await world.engine('u').create('u', 'calls-unregistered', {});
		await world.idle();
		expect(world.engine('u').status()).toMatchObject({ status: 'errored', error: { code: ErrorCode.UnknownType } });
		expect(world.hosts.has('u:x')).toBe(false);
	});

	it('fails the step with the refusal when the child payload is refused by its schema', async () => {
		class BadPayload extends Workflow<{}, void> {
			static override readonly type = 'parent';
			async run(step: Step) {
				await step.invoke('double', Double, { payload: { n: 'x' } as never });
			}
		}
		const host = new VirtualHost({ registry: registryOf(BadPayload, Double) });
		host.children = world.port;
		const engine = host.engine();
		await engine.create('bad', 'parent', {});
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'errored', error: { code: ErrorCode.StepFailed } });
		expect(engine.history().events.find((e) => e.kind === 'child.failed')).toMatchObject({ status: 'refused', error: { code: ErrorCode.InvalidPayload } });
	});
});

describe("a child's outcome is delivered once per invoke", () => {
	it('records the output of a child that finished while its sibling invoke suspended the parent, in the same pass', async () => {
		await world.engine('pp').create('pp', 'pair', {});
		await world.idle();
		expect(world.engine('pp').status()).toMatchObject({ status: 'waiting', stepCounts: { total: 2, completed: 1, waiting: 1 } });
		await world.engine('pp::waits').sendEvent('go', {});
		await world.idle();
		expect(world.engine('pp').status()).toMatchObject({ status: 'completed', output: [0, 7] });
		expect(world.engine('pp').history().events.filter((e) => e.kind === 'child.completed')).toHaveLength(2);
		expect(runs.get('slow:pp::slow')).toBe(1);
	});

	it('refuses a child id taken by an instance this parent did not create, so the parent can neither read it nor terminate it (found from outside)', async () => {
		await world.engine('shared-double').create('shared-double', 'double', { n: 0 });
		await world.idle();
		await world.engine('q').create('q', 'reinvoker', {});
		await world.idle();
		const parent = world.engine('q').status();
		expect(parent.status).toBe('errored');
		expect(JSON.stringify(parent.error)).toMatch(/shared-double.*not created by this parent/);
		expect(world.engine('shared-double').status().status).toBe('waiting');
		expect(world.engine('shared-double').status().parentId ?? null).toBeNull();
	});

	it.for(['notice', 'late notice'] as const)(
		"makes a restarted parent that invokes the same child id wait for the child's new run, not answer from its old outcome (%s)",
		async (notice) => {
			await world.engine('q').create('q', 'reinvoker', {});
			await world.idle();
			if (notice === 'late notice') world.held = [];
			await world.engine('shared-double').sendEvent('go', {});
			await world.idle();
			if (notice === 'late notice') {
				// The parent hears the outcome by polling the child; the notice comes after that.
				await world.advance(2_000);
				world.deliver();
				await world.idle();
			}
			expect(world.engine('q').status()).toMatchObject({ status: 'completed', output: 0 });
			// The child runs again (restarted), and so does the parent, which invokes the same id.
			world.engine('shared-double').restart();
			await world.idle();
			expect(world.engine('shared-double').status().status).toBe('waiting');
			world.engine('q').restart();
			await world.idle();
			expect(world.engine('q').status().status).toBe('waiting');
			await world.engine('shared-double').sendEvent('go', {});
			await world.idle();
			expect(world.engine('q').status()).toMatchObject({ status: 'completed', output: 0 });
			expect(runs.get('double:shared-double')).toBe(4); // each run: a pass waited for "go", one finished
		},
	);

	it("forgets a child's notice after the parent's next pass: a restarted parent polling the same child id waits for the child's new run", async () => {
		await world.engine('q').create('q', 'reinvoker', {});
		await world.idle();
		await world.engine('shared-double').sendEvent('go', {});
		await world.idle();
		// The notice answered the parent's invoke in the pass that completed it.
		expect(world.engine('q').status()).toMatchObject({ status: 'completed', output: 0 });
		world.engine('shared-double').restart();
		await world.idle();
		world.engine('q').restart();
		await world.idle();
		expect(world.engine('q').status().status).toBe('waiting');
		// The parent's alarm polls its waiting invoke: the child runs again, so the answer is "not yet",
		// never the outcome of the child's earlier run that the old notice carried.
		for (let i = 0; i < 3; i++) await world.advance(2_000);
		expect(world.engine('shared-double').status().status).toBe('waiting');
		expect(world.engine('q').status().status).toBe('waiting');
		expect(world.engine('q').history().events.filter((e) => e.kind === 'child.completed')).toHaveLength(0);
		await world.engine('shared-double').sendEvent('go', {});
		await world.idle();
		expect(world.engine('q').status()).toMatchObject({ status: 'completed', output: 0 });
	});

	it('keeps at most 4 MiB of notices for its next pass: a fan-out of 1 MiB outputs past that asks its children, and every invoke gets its own output', async () => {
		await world.engine('f').create('f', 'fan-out', { n: 8 });
		await world.idle();
		expect(world.engine('f').status().status).toBe('waiting');
		const calls = world.outcomeCalls;
		world.held = [];
		for (let i = 0; i < 8; i++) await world.engine(`f::big-${i}`).sendEvent('go', {});
		await world.idle();
		world.deliver();
		await world.idle();
		expect(world.engine('f').status()).toMatchObject({ status: 'completed', output: Array.from({ length: 8 }, (_, i) => `f::big-${i}:`.length + MiB - 100) });
		// Four notices of 1 MiB fit in 4 MiB: the other four children were asked.
		expect(world.outcomeCalls - calls).toBe(4);
	});
});

describe('terminating a parent', () => {
	it('terminates its unfinished children', async () => {
		const parent = await startParent({ n: 0 });
		parent.terminate();
		await world.idle();
		expect(world.engine('p::double').status().status).toBe('terminated');
		// The receipt child had finished: it stays completed.
		expect(world.engine('p::receipt').status().status).toBe('completed');
	});

	it('terminates its unfinished children after its rollbacks when terminated with rollback', async () => {
		const parent = await startParent({ n: 0 });
		parent.terminate({ rollback: true });
		await world.idle();
		expect(parent.status().status).toBe('terminated');
		expect(world.engine('p::double').status().status).toBe('terminated');
		expect(world.engine('p::receipt').status().status).toBe('completed');
	});

	it("leaves a child started with onParentTerminate: 'abandon' running", async () => {
		const parent = await startParent({ n: 0, abandon: true });
		parent.terminate();
		await world.idle();
		expect(world.engine('p::double').status().status).toBe('waiting');
	});

	it('retries the cascade from the alarm while a child cannot be reached', async () => {
		const parent = await startParent({ n: 0 });
		world.unreachable = true;
		parent.terminate();
		await world.idle();
		expect(world.engine('p::double').status().status).toBe('waiting');
		world.unreachable = false;
		await world.advance(1_000);
		expect(world.engine('p::double').status().status).toBe('terminated');
	});
});

describe('step.start', () => {
	it('returns the child id idempotently: a replay returns the same id and starts nothing', async () => {
		const parent = await startParent({ n: 3 });
		expect(parent.status().output).toContain('receipt p::receipt');
		parent.restart({ from: 'double' });
		await world.idle();
		expect(parent.status()).toMatchObject({ status: 'completed', output: '6 (receipt p::receipt)' });
		expect(runs.get('double:p::receipt')).toBe(1);
	});
});
