import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ChildWorkflowError, ErrorCode, NotFoundError } from '../../src/engine/support/errors';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { checkTransplant } from '../../src/engine/children/transplant';
import { INLINE_MAX_STEPS, MAX_INLINE_RUNS } from '../../src/engine/instance/inline-child';
import { INLINE_BUDGET } from '../../src/engine/steps/inline-run';
import { registryOf } from './start-instance';
import { World } from './child-world';

// `step.invoke` of a short child runs it inside its parent first (src/engine/instance/inline-child.ts),
// then publishes it to its own object; these run on virtual hosts that allow it.

const calls = new Map<string, number>();
const called = (key: string) => calls.set(key, (calls.get(key) ?? 0) + 1).get(key)!;
const tick = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** Lets a test stop a step midway: the step awaits `gate` when set. */
let gate: Promise<void> | undefined;

class Add extends Workflow<{ a: number; b: number }, number> {
	static override readonly type = 'add';
	static override payload = z.object({ a: z.number(), b: z.number() });
	async run(step: Step, { a, b }: { a: number; b: number }) {
		const sum = await step.do('sum', () => {
			called(`sum:${this.ctx.id}`);
			return a + b;
		});
		return step.do('io', async () => {
			called(`io:${this.ctx.id}`);
			await tick(1);
			if (gate) await gate;
			return sum * 10;
		});
	}
}

class Fails extends Workflow<{}, void> {
	static override readonly type = 'fails';
	async run(step: Step) {
		await step.do('one', () => called(`one:${this.ctx.id}`));
		throw new Error('no luck');
	}
}

/** A step, a sleep (the inline run hands over there), another step. */
class Sleeper extends Workflow<{}, string> {
	static override readonly type = 'sleeper';
	async run(step: Step) {
		const before = await step.do('before', () => `b${called(`before:${this.ctx.id}`)}`);
		await step.sleep('nap', 1000);
		const after = await step.do('after', () => `a${called(`after:${this.ctx.id}`)}`);
		return `${before}-${after}`;
	}
}

/** A step, then a grandchild: the inline run hands over before the grandchild starts. */
class Grand extends Workflow<{}, number> {
	static override readonly type = 'grand';
	async run(step: Step) {
		const first = await step.do('first', () => called(`first:${this.ctx.id}`));
		const added = await step.invoke('add', Add, { payload: { a: 1, b: 1 } });
		return first + added;
	}
}

/** A grandchild before anything else: the inline run hands over before it writes a thing. */
class GrandFirst extends Workflow<{}, number> {
	static override readonly type = 'grand-first';
	async run(step: Step) {
		return step.invoke('add', Add, { payload: { a: 2, b: 2 } });
	}
}

/** Fails its first attempt with a one-second retry delay: the inline run hands over with the retry pending. */
class Flaky extends Workflow<{}, number> {
	static override readonly type = 'flaky';
	async run(step: Step) {
		return step.do(
			'flaky',
			() => {
				if (called(`flaky:${this.ctx.id}`) === 1) throw new Error('first attempt fails');
				return 5;
			},
			{ retries: { limit: 3, delay: 1000, backoff: 'constant' } },
		);
	}
}

class Many extends Workflow<{ n: number }, number> {
	static override readonly type = 'many';
	async run(step: Step, { n }: { n: number }) {
		let total = 0;
		for (let i = 0; i < n; i++) total += await step.do(`s${i}`, () => (called(`many:${i}`), 1));
		return total;
	}
}

class NeverInline extends Workflow<{}, number> {
	static override readonly type = 'never-inline';
	static override inline = false;
	async run(step: Step) {
		return step.do('x', () => 1);
	}
}

/** Invokes `n` Add children at once. */
class FanOut extends Workflow<{ n: number }, number[]> {
	static override readonly type = 'fan-out';
	async run(step: Step, { n }: { n: number }) {
		return Promise.all(Array.from({ length: n }, (_, i) => step.invoke(`add-${i}`, Add, { payload: { a: i, b: 0 } })));
	}
}

/** A quote and a backslash, JSON escapes each: 400,000 characters of them. */
const QUOTES = '"\\'.repeat(200_000);
/** A step that awaits `gate`, then another. */
class TwoSteps extends Workflow<{}, string> {
	static override readonly type = 'two-steps';
	async run(step: Step) {
		const one = await step.do('one', async () => {
			called(`one:${this.ctx.id}`);
			await tick(1);
			if (gate) await gate;
			return 'a';
		});
		const two = await step.do('two', () => (called(`two:${this.ctx.id}`), 'b'));
		return one + two;
	}
}

/** Invokes `n` Add children one after another. */
class Sequence extends Workflow<{ n: number }, number> {
	static override readonly type = 'sequence';
	async run(step: Step, { n }: { n: number }) {
		let total = 0;
		for (let i = 0; i < n; i++) total += await step.invoke(`add-${i}`, Add, { payload: { a: 1, b: 0 } });
		return total;
	}
}

/** One step whose result is QUOTES, then one that awaits I/O (and `gate`). */
class Quotes extends Workflow<{}, boolean> {
	static override readonly type = 'quotes';
	async run(step: Step) {
		const text = await step.do('text', () => (called(`text:${this.ctx.id}`), QUOTES));
		await step.do('io', async () => {
			await tick(1);
			if (gate) await gate;
		});
		return text === QUOTES;
	}
}

/** Two steps that await nothing; the second kills its parent's isolate once (`crashIn`), in the middle of its attempt. */
let crashIn: string | undefined;
class SyncPair extends Workflow<{}, string> {
	static override readonly type = 'sync-pair';
	async run(step: Step) {
		const one = await step.do('one', () => (called(`one:${this.ctx.id}`), 'a'));
		const two = await step.do('two', () => {
			called(`two:${this.ctx.id}`);
			if (crashIn) {
				const parent = crashIn;
				crashIn = undefined;
				world.evict(parent);
			}
			return 'b';
		});
		return one + two;
	}
}

class Parent extends Workflow<{ child: string; payload?: unknown; id?: string; step?: string; abandon?: boolean }, unknown> {
	static override readonly type = 'parent';
	async run(step: Step, { child, payload, id, step: name, abandon }: { child: string; payload?: unknown; id?: string; step?: string; abandon?: boolean }) {
		const Child = { add: Add, fails: Fails, sleeper: Sleeper, grand: Grand, flaky: Flaky, many: Many, 'never-inline': NeverInline, quotes: Quotes, 'grand-first': GrandFirst, 'two-steps': TwoSteps, 'sync-pair': SyncPair }[child]!;
		try {
			return await step.invoke(name ?? 'child', Child, { payload: payload ?? {}, ...(id ? { id } : {}), ...(abandon ? { onParentTerminate: 'abandon' as const } : {}) });
		} catch (error) {
			if (error instanceof ChildWorkflowError) return `${error.childStatus}: ${error.childError?.message}`;
			throw error;
		}
	}
}

const registry = registryOf(Add, Fails, Sleeper, Grand, GrandFirst, Flaky, Many, NeverInline, Quotes, FanOut, Sequence, TwoSteps, SyncPair, Parent);
let world: World;
beforeEach(() => {
	world = new World(registry, true);
	calls.clear();
	gate = undefined;
	crashIn = undefined;
});

async function parentOf(child: string, payload?: unknown, id?: string) {
	await world.engine('p').create('p', 'parent', { child, ...(payload ? { payload } : {}), ...(id ? { id } : {}) });
	await world.idle();
	return world.engine('p');
}

const historyKinds = (id: string) => world.engine(id).history().events.map((e) => ('step' in e && e.step ? `${e.kind} ${e.step}` : e.kind));

describe('an invoked short child runs inside its parent first', () => {
	it('gives the parent its output, then publishes the child to its own object with the same steps and history', async () => {
		const parent = await parentOf('add', { a: 2, b: 3 });
		expect(parent.status()).toMatchObject({ status: 'completed', output: 50 });
		expect(world.transplanted).toEqual(['p::child']);
		const child = world.engine('p::child');
		expect(child.status()).toMatchObject({ status: 'completed', output: 50, parentId: 'p' });
		expect(child.steps().items.map((s) => [s.name, s.status, s.result])).toEqual([['sum', 'completed', 5], ['io', 'completed', 50]]);
		expect(historyKinds('p::child')).toEqual(['workflow.created', 'step.started sum', 'step.completed sum', 'step.started io', 'step.completed io', 'workflow.completed']);
		expect(child.history().events.find((e) => e.kind === 'step.completed' && e.step === 'sum')).toMatchObject({ result: 5 });
		// Each step ran once; the published child ran nothing again.
		expect([calls.get('sum:p::child'), calls.get('io:p::child')]).toEqual([1, 1]);
		expect(world.hosts.get('p::child')!.indexEntries.at(-1)).toMatchObject({ id: 'p::child', status: 'completed', parentId: 'p' });
	});

	it('sends the parent no notice for a child it published finished', async () => {
		await parentOf('add', { a: 1, b: 1 });
		expect(world.noticesFrom).toEqual([]);
		expect(world.outcomeCalls).toBe(0);
	});

	it('completes the parent while the child cannot be published yet; the child appears once its object is reachable', async () => {
		world.unreachable = true;
		const parent = await parentOf('add', { a: 1, b: 2 });
		expect(parent.status()).toMatchObject({ status: 'completed', output: 30 });
		expect(() => world.engine('p::child').status()).toThrow(NotFoundError);
		world.unreachable = false;
		await world.advance(1_000);
		expect(world.engine('p::child').status()).toMatchObject({ status: 'completed', output: 30 });
		expect(world.hosts.get('p')!.durable.store.inline.size).toBe(0);
	});

	it('keeps a finished child in one row in its parent until it is published: its last step rides in the header (SHARDFLOW_INLINE_ONE_ROW)', async () => {
		world.unreachable = true;
		const parent = await parentOf('sync-pair');
		expect(parent.status()).toMatchObject({ status: 'completed', output: 'ab' });
		// The header, and the first step (kept when the second's attempt began); the second step rides in the header.
		// Without the setting, a row per step besides the header.
		const kept = world.hosts.get('p')!.durable.store.inline.get('p::child');
		expect([...kept!.keys()].sort()).toEqual(process.env.SHARDFLOW_INLINE_ONE_ROW === 'false' ? ['', 'do:one', 'do:two'] : ['', 'do:one']);
		world.unreachable = false;
		await world.advance(1_000);
		expect(world.engine('p::child').status()).toMatchObject({ status: 'completed', output: 'ab' });
		expect(world.engine('p::child').steps().items.map((s) => [s.name, s.status])).toEqual([['one', 'completed'], ['two', 'completed']]);
		expect(world.engine('p::child').history().events.map((e) => e.kind)).toContain('step.completed');
		expect(world.hosts.get('p')!.durable.store.inline.size).toBe(0);
	});

	it("keeps a child's step in its parent before the next step's attempt begins: the parent's isolate dying in that attempt does not run the step again", async () => {
		crashIn = 'p';
		await world.engine('p').create('p', 'parent', { child: 'sync-pair' });
		await world.idle();
		world.engine('p').alarm();
		await world.advance(20_000);
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: 'ab' });
		expect([calls.get('one:p::child'), calls.get('two:p::child')]).toEqual([1, 2]);
	});

	it('fails the invoke with ChildWorkflowError when the child errors inline, and publishes the errored child', async () => {
		const parent = await parentOf('fails');
		expect(parent.status()).toMatchObject({ status: 'completed', output: 'errored: no luck' });
		expect(world.engine('p::child').status()).toMatchObject({ status: 'errored', error: { message: 'no luck' } });
		expect(calls.get('one:p::child')).toBe(1);
	});

	it('publishes a finished child before its deleted parent\'s storage goes', async () => {
		world.unreachable = true;
		await parentOf('add', { a: 1, b: 2 });
		await world.engine('p').delete();
		await world.advance(10);
		expect(world.hosts.get('p')!.destroyed).toBe(0); // the child is not published yet: the storage stays
		world.unreachable = false;
		await world.advance(5_000);
		expect(world.engine('p::child').status()).toMatchObject({ status: 'completed', output: 30 });
		expect(world.hosts.get('p')!.destroyed).toBe(1);
	});

	it('publishes a finished child whose parent died before publishing it, from the alarm', async () => {
		await world.engine('p').create('p', 'parent', { child: 'add', payload: { a: 1, b: 2 } });
		for (let i = 0; i < 50 && world.engine('p').status().status !== 'completed'; i++) await tick(0);
		expect(world.engine('p').status().status).toBe('completed');
		world.evict('p');
		await world.idle();
		expect(world.transplanted).toEqual([]);
		await world.advance(10_000);
		expect(world.engine('p::child').status()).toMatchObject({ status: 'completed', output: 30 });
		expect([calls.get('sum:p::child'), calls.get('io:p::child')]).toEqual([1, 1]);
	});

	it("starts a child in its own object when its parent's invocation has less budget left than an inline run takes", async () => {
		world.host('p').invocationBudget = { steps: INLINE_BUDGET.steps - 1, ms: 60_000 };
		const parent = await parentOf('add', { a: 1, b: 1 });
		expect(parent.status()).toMatchObject({ status: 'completed', output: 20 });
		// A plain create: its step no longer says inline, so a retried start cannot run it here.
		expect(world.transplanted).not.toContain('p::child');
		world.host('q').invocationBudget = { steps: INLINE_BUDGET.steps, ms: 60_000 };
		await world.engine('q').create('q', 'parent', { child: 'add', payload: { a: 1, b: 1 } });
		await world.idle();
		expect(world.transplantedSteps.get('q::child')).toBe(2);
	});

	it('gives back what an inline run did not use of its parent\'s budget: 60 children in a row, 1 I/O step each, in a budget of 100', async () => {
		world.host('s').invocationBudget = { steps: 100, ms: 60_000 };
		await world.engine('s').create('s', 'sequence', { n: 60 });
		await world.idle();
		expect(world.engine('s').status()).toMatchObject({ status: 'completed', output: 600 });
		expect([...world.transplantedSteps.values()].every((steps) => steps === 2)).toBe(true);
		expect(world.transplantedSteps.size).toBe(60);
	});

	it(`runs at most ${MAX_INLINE_RUNS} children of a fan-out at once; the others start in their own objects`, async () => {
		await world.engine('f').create('f', 'fan-out', { n: MAX_INLINE_RUNS + 3 });
		await world.idle();
		expect(world.engine('f').status()).toMatchObject({ status: 'completed', output: Array.from({ length: MAX_INLINE_RUNS + 3 }, (_, i) => i * 10) });
		const ranInline = [...world.transplantedSteps.values()].filter((steps) => steps > 0).length;
		expect(ranInline).toBe(MAX_INLINE_RUNS);
		for (let i = 0; i < MAX_INLINE_RUNS + 3; i++) expect([calls.get(`sum:f::add-${i}`), calls.get(`io:f::add-${i}`)]).toEqual([1, 1]);
	});

	it('never runs inline a child of a fan-out that started in its own object, when its start is retried', async () => {
		// The last child starts in its own object (the others run inline); its answer is lost, so the invoke retries its start.
		world.loseAnswers = true;
		await world.engine('f').create('f', 'fan-out', { n: MAX_INLINE_RUNS + 1 });
		await world.idle();
		world.loseAnswers = false;
		await world.advance(20_000);
		expect(world.engine('f').status()).toMatchObject({ status: 'completed', output: Array.from({ length: MAX_INLINE_RUNS + 1 }, (_, i) => i * 10) });
		// The retry asked the child's object again (a create of an existing id): its steps ran once, in that object.
		for (let i = 0; i <= MAX_INLINE_RUNS; i++) expect([calls.get(`sum:f::add-${i}`), calls.get(`io:f::add-${i}`)]).toEqual([1, 1]);
		expect(world.transplanted).not.toContain(`f::add-${MAX_INLINE_RUNS}`);
	});

	it('keeps a large result with characters JSON escapes exactly, through a crash of the parent', async () => {
		let release!: () => void;
		gate = new Promise<void>((resolve) => (release = resolve));
		await world.engine('p').create('p', 'parent', { child: 'quotes' });
		for (let i = 0; i < 50 && world.hosts.get('p')!.durable.store.inline.get('p::child')?.size !== 1; i++) await tick(1);
		expect(world.hosts.get('p')!.durable.store.inline.get('p::child')?.get('do:text')?.result).toBe(JSON.stringify(QUOTES));
		world.evict('p').alarm();
		gate = undefined;
		release();
		await world.advance(20_000);
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: true });
		expect(world.engine('p::child').status()).toMatchObject({ status: 'completed', output: true });
		expect(calls.get('text:p::child')).toBe(1);
	});

	it("refuses to publish a child under an id an earlier incarnation's child holds (a parent re-created after its deletion), and says so", async () => {
		const logs: unknown[] = [];
		await parentOf('add', { a: 1, b: 1 });
		await world.engine('p').delete();
		await world.advance(10); // the storage goes once the clock passed the instance's creation
		expect(world.hosts.get('p')!.destroyed).toBe(1);
		world.evict('p');
		world.host('p').log = (record) => void logs.push(record);
		calls.clear();
		await world.engine('p').create('p', 'parent', { child: 'add', payload: { a: 1, b: 1 } });
		await world.idle();
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: 20 });
		expect(logs).toContainEqual(expect.objectContaining({ event: 'child.publish_failed', childId: 'p::child', willRetry: false, error: expect.objectContaining({ code: ErrorCode.InvalidState }) }));
		// The earlier child is left as it was; the rows of the refused one are gone.
		expect(world.engine('p::child').status()).toMatchObject({ status: 'completed', output: 20, version: 4 });
		expect(world.hosts.get('p')!.durable.store.inline.size).toBe(0);
	});

	it('publishes the same child again as a no-op when the answer to its publishing was lost', async () => {
		world.loseAnswers = true;
		await parentOf('sleeper');
		world.loseAnswers = false;
		await world.advance(2_000);
		await world.advance(2_000);
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: 'b1-a1' });
		expect(calls.get('before:p::child')).toBe(1);
	});

	it('refuses a payload the child type rejects, as a create would, and publishes nothing', async () => {
		const parent = await parentOf('add', { a: 'x', b: 1 });
		expect(parent.status()).toMatchObject({ status: 'errored', error: { code: ErrorCode.StepFailed } });
		expect(parent.history().events.find((e) => e.kind === 'child.failed')).toMatchObject({ status: 'refused', error: { code: ErrorCode.InvalidPayload } });
		expect(world.transplanted).toEqual([]);
		expect(() => world.engine('p::child').status()).toThrow(NotFoundError);
	});
});

describe('an inline child hands over to its own object', () => {
	it('at a sleep: the child goes on in its object from its finished steps, each step running once', async () => {
		const parent = await parentOf('sleeper');
		expect(parent.status().status).toBe('waiting');
		expect(world.transplanted).toEqual(['p::child']);
		expect(world.engine('p::child').status().status).toBe('sleeping');
		await world.advance(1_000);
		await world.advance(2_000);
		expect(world.engine('p::child').status()).toMatchObject({ status: 'completed', output: 'b1-a1' });
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: 'b1-a1' });
		expect(world.hosts.get('p')!.durable.store.inline.size).toBe(0);
	});

	it('before a grandchild starts: the grandchild is the child object\'s own', async () => {
		const parent = await parentOf('grand');
		await world.idle();
		await world.advance(2_000);
		expect(world.engine('p::child').status()).toMatchObject({ status: 'completed', output: 21 });
		expect(world.engine('p::child::add').status()).toMatchObject({ status: 'completed', parentId: 'p::child' });
		expect(parent.status()).toMatchObject({ status: 'completed', output: 21 });
		expect(calls.get('first:p::child')).toBe(1);
	});

	it('at once when its first step is a grandchild', async () => {
		await parentOf('grand-first');
		await world.advance(2_000);
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: 40 });
		expect(world.transplantedSteps.get('p::child')).toBe(0);
		expect(world.engine('p::child::add').status()).toMatchObject({ status: 'completed', parentId: 'p::child' });
	});

	it('with a retry pending: the retry runs in its object after its delay', async () => {
		await parentOf('flaky');
		expect(world.engine('p::child').steps().items[0]).toMatchObject({ name: 'flaky', status: 'retrying', attempts: 1 });
		await world.advance(1_000);
		await world.advance(2_000);
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: 5 });
		expect(calls.get('flaky:p::child')).toBe(2);
	});

	it(`past ${INLINE_MAX_STEPS} steps, with the steps it took`, async () => {
		const n = INLINE_MAX_STEPS + 20;
		await parentOf('many', { n });
		await world.advance(2_000);
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: n });
		expect([...calls.entries()].filter(([key]) => key.startsWith('many:')).every(([, count]) => count === 1)).toBe(true);
		expect(world.transplanted).toEqual(['p::child']);
	});

	it("after its parent's isolate died mid-run: the finished steps go with it, and the one under way runs again", async () => {
		let release!: () => void;
		gate = new Promise<void>((resolve) => (release = resolve));
		await world.engine('p').create('p', 'parent', { child: 'add', payload: { a: 1, b: 1 } });
		for (let i = 0; i < 20 && calls.get('io:p::child') !== 1; i++) await tick(1);
		expect(calls.get('io:p::child')).toBe(1);
		const next = world.evict('p');
		gate = undefined;
		release();
		next.alarm();
		await world.advance(20_000);
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: 20 });
		expect(world.transplanted).toEqual(['p::child']);
		expect(calls.get('sum:p::child')).toBe(1);
		expect(calls.get('io:p::child')).toBe(2);
		expect(world.engine('p::child').steps().items.map((s) => s.attempts)).toEqual([1, 2]);
	});
});

describe('a child that runs inline is read through its parent until it is published', () => {
	it('while it runs: its status and steps so far', async () => {
		let release!: () => void;
		gate = new Promise<void>((resolve) => (release = resolve));
		await world.engine('p').create('p', 'parent', { child: 'add', payload: { a: 1, b: 1 } });
		for (let i = 0; i < 20 && calls.get('io:p::child') !== 1; i++) await tick(1);
		const parent = world.engine('p');
		expect(parent.inlineChild('p::child', { kind: 'status' })).toMatchObject({ id: 'p::child', status: 'running', parentId: 'p' });
		expect(parent.inlineChild('p::child', { kind: 'steps' })).toMatchObject({ items: [{ name: 'sum', status: 'completed', result: 2 }, { name: 'io', status: 'running' }] });
		release();
		await world.idle();
		expect(world.engine('p::child').status()).toMatchObject({ status: 'completed', output: 20 });
	});

	it('once it finished: the same status and history its own object answers after publishing', async () => {
		world.unreachable = true;
		const parent = await parentOf('add', { a: 1, b: 2 });
		const status = parent.inlineChild('p::child', { kind: 'status' });
		const history = parent.inlineChild('p::child', { kind: 'history' });
		expect(status).toMatchObject({ status: 'completed', output: 30 });
		world.unreachable = false;
		await world.advance(1_000);
		expect(world.engine('p::child').status()).toEqual(status);
		expect(world.engine('p::child').history()).toEqual(history);
		expect(() => parent.inlineChild('p::child', { kind: 'status' })).toThrow(NotFoundError);
	});

	it('answers NOT_FOUND for a child it does not hold, and refuses a read it does not know', async () => {
		const parent = await parentOf('add', { a: 1, b: 2 });
		expect(() => parent.inlineChild('p::other', { kind: 'status' })).toThrow(NotFoundError);
		world.unreachable = true;
		await world.engine('q').create('q', 'parent', { child: 'add', payload: { a: 1, b: 2 } });
		await world.idle();
		expect(() => world.engine('q').inlineChild('q::child', { kind: 'drop' })).toThrow(expect.objectContaining({ code: ErrorCode.InvalidOptions }));
	});
});

describe('a child that runs inline is published at once when someone outside wants it (an event, a control)', () => {
	it('hands a run under way over before its next step, with the step in flight finished', async () => {
		let release!: () => void;
		gate = new Promise<void>((resolve) => (release = resolve));
		await world.engine('p').create('p', 'parent', { child: 'two-steps' });
		for (let i = 0; i < 50 && calls.get('one:p::child') !== 1; i++) await tick(1);
		const published = world.engine('p').publishInlineChild('p::child');
		gate = undefined;
		release();
		expect(await published).toBe(true);
		expect(world.transplantedSteps.get('p::child')).toBe(1);
		await world.idle();
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: 'ab' });
		expect([calls.get('one:p::child'), calls.get('two:p::child')]).toEqual([1, 1]);
	});

	it("hands over at once a child whose parent's isolate died mid-run, without waiting for the parent's alarm", async () => {
		let release!: () => void;
		gate = new Promise<void>((resolve) => (release = resolve));
		await world.engine('p').create('p', 'parent', { child: 'two-steps' });
		for (let i = 0; i < 50 && calls.get('one:p::child') !== 1; i++) await tick(1);
		const next = world.evict('p');
		gate = undefined;
		release();
		expect(await next.publishInlineChild('p::child')).toBe(true);
		expect(world.transplanted).toEqual(['p::child']);
		await world.idle();
		expect(world.engine('p::child').status()).toMatchObject({ status: 'completed', output: 'ab' });
	});

	it('publishes a finished child without waiting for its turn, and answers false for a child it never held', async () => {
		world.unreachable = true;
		await parentOf('add', { a: 1, b: 2 });
		world.unreachable = false;
		expect(await world.engine('p').publishInlineChild('p::child')).toBe(true);
		expect(world.engine('p::child').status()).toMatchObject({ status: 'completed', output: 30 });
		expect(await world.engine('p').publishInlineChild('p::other')).toBe(false);
	});
});

describe('children that do not run inline', () => {
	it('a type with static inline = false starts in its own object at once', async () => {
		await parentOf('never-inline');
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: 1 });
		expect(world.transplanted).toEqual([]);
	});

	it('a child given its own id starts in its own object at once', async () => {
		await parentOf('add', { a: 1, b: 1 }, 'my-child');
		expect(world.engine('p').status()).toMatchObject({ status: 'completed', output: 20 });
		expect(world.transplanted).toEqual([]);
	});

	it.each([
		['a step name with ::', 'p', 'x::y'],
		['a hashed id of a long parent id', `p${'x'.repeat(90)}`, 'n'.repeat(120)],
	])('a child whose id does not name its parent (%s) starts in its own object at once: a read by its id could not find it inline', async (_case, parentId, name) => {
		await world.engine(parentId).create(parentId, 'parent', { child: 'add', payload: { a: 1, b: 1 }, step: name });
		await world.idle();
		expect(world.engine(parentId).status()).toMatchObject({ status: 'completed', output: 20 });
		expect(world.transplanted).toEqual([]);
	});

	it('a child read as running inline when its parent is terminated ends terminated, published with its history', async () => {
		let release!: () => void;
		gate = new Promise<void>((resolve) => (release = resolve));
		await world.engine('p').create('p', 'parent', { child: 'add', payload: { a: 1, b: 1 } });
		for (let i = 0; i < 20 && calls.get('io:p::child') !== 1; i++) await tick(1);
		expect(world.engine('p').inlineChild('p::child', { kind: 'status' })).toMatchObject({ status: 'running' });
		world.engine('p').terminate();
		release();
		await world.idle();
		expect(world.engine('p').status().status).toBe('terminated');
		expect(world.engine('p::child').status()).toMatchObject({ status: 'terminated', parentId: 'p' });
		expect(world.engine('p::child').steps().items).toMatchObject([{ name: 'sum', status: 'completed', result: 2 }, { name: 'io', status: 'cancelled' }]);
		expect(historyKinds('p::child')).toEqual(expect.arrayContaining(['workflow.created', 'step.completed sum', 'step.started io']));
		expect(historyKinds('p::child').at(-1)).toBe('workflow.terminated');
		expect(world.hosts.get('p')!.durable.store.inline.size).toBe(0);
		// Its step ran once, and nothing of it runs again.
		expect(calls.get('io:p::child')).toBe(1);
	});

	it("a child read as running inline is published terminated from the alarm when its parent's isolate dies right after the terminate", async () => {
		let release!: () => void;
		gate = new Promise<void>((resolve) => (release = resolve));
		await world.engine('p').create('p', 'parent', { child: 'add', payload: { a: 1, b: 1 } });
		for (let i = 0; i < 20 && calls.get('io:p::child') !== 1; i++) await tick(1);
		world.engine('p').terminate();
		const parent = world.evict('p'); // before the publishing's first round
		release();
		await world.idle();
		expect(() => world.engine('p::child').status()).toThrow(NotFoundError);
		// Read by its id meanwhile, the parent answers for it: terminated, not gone.
		expect(parent.inlineChild('p::child', { kind: 'status' })).toMatchObject({ status: 'terminated' });
		// The parent's alarms: the cascade's (its terminate of the child, which is not published yet, fails and backs off), then the publishing.
		for (let i = 0; i < 3 && world.hosts.get('p')!.durable.store.inline.size > 0; i++) await world.advance(10_000);
		expect(world.engine('p::child').status()).toMatchObject({ status: 'terminated', parentId: 'p' });
		expect(world.hosts.get('p')!.durable.store.inline.size).toBe(0);
		expect(calls.get('io:p::child')).toBe(1);
	});

	it("a child read as running inline stays readable through its parent after the parent's isolate died mid-run", async () => {
		let release!: () => void;
		gate = new Promise<void>((resolve) => (release = resolve));
		await world.engine('p').create('p', 'parent', { child: 'add', payload: { a: 1, b: 1 } });
		for (let i = 0; i < 20 && calls.get('io:p::child') !== 1; i++) await tick(1);
		expect(world.engine('p').inlineChild('p::child', { kind: 'status' })).toMatchObject({ status: 'running' });
		const next = world.evict('p');
		release();
		expect(next.inlineChild('p::child', { kind: 'status' })).toMatchObject({ id: 'p::child', status: 'running', parentId: 'p' });
		expect(next.inlineChild('p::child', { kind: 'steps' })).toMatchObject({ items: [{ name: 'sum', status: 'completed', result: 2 }, { name: 'io', status: 'running' }] });
	});

	it("a child whose run its parent's isolate lost mid-way ends terminated and published when the parent is terminated before its next pass", async () => {
		let release!: () => void;
		gate = new Promise<void>((resolve) => (release = resolve));
		await world.engine('p').create('p', 'parent', { child: 'add', payload: { a: 1, b: 1 } });
		for (let i = 0; i < 20 && calls.get('io:p::child') !== 1; i++) await tick(1);
		const next = world.evict('p');
		release();
		next.terminate();
		expect(next.inlineChild('p::child', { kind: 'status' })).toMatchObject({ status: 'terminated' });
		for (let i = 0; i < 3 && world.hosts.get('p')!.durable.store.inline.size > 0; i++) await world.advance(10_000);
		expect(world.engine('p::child').status()).toMatchObject({ status: 'terminated', parentId: 'p', payload: { a: 1, b: 1 } });
		expect(world.engine('p::child').steps().items).toMatchObject([{ name: 'sum', status: 'completed', result: 2 }, { name: 'io', status: 'cancelled' }]);
		expect(historyKinds('p::child').at(-1)).toBe('workflow.terminated');
		expect(world.hosts.get('p')!.durable.store.inline.size).toBe(0);
		expect([calls.get('sum:p::child'), calls.get('io:p::child')]).toEqual([1, 1]);
	});

	it("a child its parent abandons on terminate (onParentTerminate: 'abandon') starts in its own object, and runs on when the parent is terminated", async () => {
		let release!: () => void;
		gate = new Promise<void>((resolve) => (release = resolve));
		await world.engine('p').create('p', 'parent', { child: 'add', payload: { a: 1, b: 1 }, abandon: true });
		for (let i = 0; i < 20 && calls.get('io:p::child') !== 1; i++) await tick(1);
		world.engine('p').terminate();
		release();
		await world.idle();
		expect(world.engine('p').status().status).toBe('terminated');
		expect(world.engine('p::child').status()).toMatchObject({ status: 'completed', output: 20, parentId: 'p' });
		expect(world.transplanted).toEqual([]);
	});
});

describe('a transplant sent with a create', () => {
	const good = () => ({
		row: { id: 'p::c', type: 'add', status: 'completed', payload: '{}', output: '1', errorName: null, errorMessage: null, errorStack: null, errorCode: null, createdAt: 1, updatedAt: 1, version: 2, generation: 0 },
		steps: [], wakeups: [], history: [],
	});
	it('is checked before anything is stored', () => {
		expect(checkTransplant(good(), 'p::c').row.status).toBe('completed');
		for (const bad of [null, {}, { ...good(), row: { ...good().row, id: 'other' } }, { ...good(), row: { ...good().row, status: 'queued' } }, { ...good(), history: [{ kind: 'step.completed', generation: 0, at: 1, step: 's', attempt: 1, value: null, detail: null, resultOf: 'nope' }] }, { ...good(), steps: [{ key: 1 }] }]) {
			expect(() => checkTransplant(bad, 'p::c')).toThrow(expect.objectContaining({ code: ErrorCode.InvalidOptions }));
		}
	});
});
