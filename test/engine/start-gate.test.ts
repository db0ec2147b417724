import { describe, expect, it } from 'vitest';
import type { Step } from '../../src/engine/definition/types';
import { MAX_STEPS_PER_YIELD } from '../../src/engine/steps/yield-pacer';
import type { InstanceEngine } from '../../src/engine/instance/instance-engine';
import { Workflow } from '../../src/workflow';
import { registryOf } from './start-instance';
import { VirtualHost } from '../../src/testing/virtual-host';

const BURST = 3000;
/** Attempts begun so far (each step's function counts its call), by step name. */
let calls = new Map<string, number>();
const started = () => [...calls.values()].reduce((a, b) => a + b, 0);
/** What a step awaits: an answer on a later turn of the event loop (a fetch), or, with `hold`, only once the test lets it (the first `QUICK` steps answer anyway). */
let hold: Promise<void> | undefined;
const QUICK = 8;
const io = (i: number) => (hold && i >= QUICK ? hold : new Promise<void>((resolve) => setTimeout(resolve, 0)));
/** Set by the first attempt of a run: how many attempts had begun when a macrotask queued by it ran (another request). */
let startedWhenOthersRan: number | undefined;

/** `n` steps started at once, each awaiting I/O, as `Promise.all(Array.from({ length: n }, ... step.do(...)))` does. */
class Burst extends Workflow<{ n: number }, number> {
	static override readonly type = 'burst';
	async run(step: Step, { n }: { n: number }) {
		const values = await Promise.all(
			Array.from({ length: n }, (_, i) =>
				step.do(`f${i}`, async () => {
					calls.set(`f${i}`, (calls.get(`f${i}`) ?? 0) + 1);
					if (i === 0 && startedWhenOthersRan === undefined) setTimeout(() => (startedWhenOthersRan = started()), 0);
					await io(i);
					return i;
				}),
			),
		);
		return values.reduce((a, b) => a + b, 0);
	}
}

/** A host on which nobody else is waiting (yields report so): slices grow to their longest, the most a burst could start at once. */
function calmHost(): { host: VirtualHost; slices: number[] } {
	calls = new Map();
	hold = undefined;
	startedWhenOthersRan = undefined;
	const host = new VirtualHost({ registry: registryOf(Burst) });
	host.invocationBudget = { steps: Number.MAX_SAFE_INTEGER, ms: Number.MAX_SAFE_INTEGER };
	const slices: number[] = [];
	calm(host, slices);
	return { host, slices };
}

/** Makes `host`'s yields report that nobody else ran, noting the attempts begun between two yields in `slices`. */
function calm(host: VirtualHost, slices: number[] = []): VirtualHost {
	const yieldToEventLoop = host.yieldToEventLoop.bind(host);
	let before = started();
	host.yieldToEventLoop = async () => {
		slices.push(started() - before);
		before = started();
		await yieldToEventLoop();
		return false;
	};
	return host;
}

const waitUntil = async (done: () => boolean) => {
	for (let i = 0; i < 1000 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 1));
	expect(done()).toBe(true);
};

describe('a burst of parallel step starts', () => {
	it('lets other work of the isolate run before the burst has begun all its attempts, and begins no more than a slice between two yields', async () => {
		const { host, slices } = calmHost();
		const engine = host.engine();
		await engine.create('wf-1', 'burst', { n: BURST });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: (BURST * (BURST - 1)) / 2 });
		expect(startedWhenOthersRan).toBeLessThan(BURST);
		expect(Math.max(...slices)).toBeLessThanOrEqual(MAX_STEPS_PER_YIELD);
	});

	it('keeps the rows, records and result of a burst: each step begun once, seqs and step.started records in the order of the calls', async () => {
		const { host } = calmHost();
		const engine = host.engine();
		await engine.create('wf-1', 'burst', { n: BURST });
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'completed', output: (BURST * (BURST - 1)) / 2 });
		expect([...calls.values()].every((n) => n === 1)).toBe(true);
		const rows = [...host.store.steps.values()].filter((row) => row.kind === 'do').sort((a, b) => a.seq - b.seq);
		expect(rows.map((row) => row.name)).toEqual(Array.from({ length: BURST }, (_, i) => `f${i}`));
		expect(rows.every((row) => row.status === 'completed' && row.attempts === 1 && JSON.parse(row.result!) === Number(row.name.slice(1)))).toBe(true);
		const events = allHistory(engine);
		const startedOrder = events.filter((e) => e.kind === 'step.started').map((e) => e.step);
		expect(startedOrder).toEqual(rows.map((row) => row.name));
		expect(events.filter((e) => e.kind === 'step.completed')).toHaveLength(BURST);
	});

	it('after a crash between slices re-runs only the attempts that were in flight: none completed runs again, none waiting ran before', async () => {
		let { host } = calmHost();
		let release!: () => void;
		hold = new Promise<void>((resolve) => (release = resolve));
		await host.engine().create('wf-1', 'burst', { n: BURST });
		await waitUntil(() => [...host.store.steps.values()].filter((row) => row.status === 'completed').length === QUICK);
		const begunBeforeCrash = new Set(calls.keys());
		expect(begunBeforeCrash.size).toBeLessThan(BURST);
		host.crash();
		host = calm(host.nextIsolate());
		hold = undefined;
		release();
		const revived = host.engine();
		revived.alarm();
		await waitUntil(() => revived.status().status === 'completed');
		expect(revived.status()).toMatchObject({ output: (BURST * (BURST - 1)) / 2 });
		// A completed step does not run again, an attempt in flight at the crash does, and one that had not begun runs once.
		for (const [name, count] of calls) expect([name, count]).toEqual([name, begunBeforeCrash.has(name) && Number(name.slice(1)) >= QUICK ? 2 : 1]);
		expect(calls.size).toBe(BURST);
	});

	it.for(['terminate', 'pause'] as const)('begins none of the steps still waiting for their turn after a %s mid-burst', async (control) => {
		const { host } = calmHost();
		let release!: () => void;
		hold = new Promise<void>((resolve) => (release = resolve));
		const engine = host.engine();
		await engine.create('wf-1', 'burst', { n: BURST });
		await waitUntil(() => started() > 0);
		engine[control]();
		const begunAtControl = started();
		release();
		await host.idle();
		expect(engine.status().status).toBe(control === 'pause' ? 'paused' : 'terminated');
		expect(begunAtControl).toBeLessThan(BURST);
		expect(started()).toBe(begunAtControl);
		if (control === 'terminate') return;
		// After the resume, each step of the burst has begun once: those in flight at the pause completed meanwhile.
		hold = undefined;
		engine.resume();
		await waitUntil(() => engine.status().status === 'completed');
		expect(calls.size).toBe(BURST);
		expect([...calls.values()].every((n) => n === 1)).toBe(true);
	});
});

/** Every history record of the current run, all pages. */
function allHistory(engine: InstanceEngine) {
	const events: { kind: string; step?: string }[] = [];
	for (let after: string | null | undefined = undefined; ; ) {
		const page = engine.history({ after, limit: 1000 });
		events.push(...(page.events as { kind: string; step?: string }[]));
		if (!page.nextCursor || page.events.length === 0) return events;
		after = page.nextCursor;
	}
}
