import { Workflow, type Step } from '../src/authoring';
import { STREAM_MESSAGE_BURST, STREAM_MESSAGES_PER_SECOND } from '../src/engine/streams/stream';

/** The benchmark workload shape, shared by our engine and Cloudflare Workflows. */
export interface BenchParams {
	steps: number;
	/** Sleep 1 ms after every `sleepEvery` steps (0: never). */
	sleepEvery?: number;
	/** Wait for the event "go" after the steps. */
	wait?: boolean;
	/** Each step returns `Date.now()` as it starts, and the run returns them all (time between steps). */
	stamp?: boolean;
	/** Each step awaits a timer of this many ms before it returns (a step awaiting I/O); 0 or absent: none. */
	awaitMs?: number;
}

/** `steps` CPU-light steps, optional sleeps, an optional event wait; one class per type name. */
function benchWorkflow<T extends string>(type: T) {
	return class BenchWorkflow extends Workflow<BenchParams, number> {
		static override readonly type = type;
		static override events = { go: {} as { n: number } };
		async run(step: Step<typeof BenchWorkflow.events>, { steps, sleepEvery = 0, wait = false, stamp = false, awaitMs = 0 }: BenchParams): Promise<any> {
			if (stamp) {
				const stamps: number[] = [];
				for (let i = 0; i < steps; i++) stamps.push(await step.do(`s${i}`, async () => Date.now()));
				return stamps;
			}
			let total = 0;
			for (let i = 0; i < steps; i++) {
				total += await step.do(`s${i}`, awaitMs > 0 ? () => new Promise<number>((resolve) => setTimeout(() => resolve(i), awaitMs)) : async () => i);
				if (sleepEvery > 0 && (i + 1) % sleepEvery === 0) await step.sleep(`z${i}`, 1);
			}
			if (wait) total += (await step.waitForEvent('go')).n;
			return total;
		}
	};
}

/** Index on 1 shard. */
export const BenchWorkflow = benchWorkflow('bench');
/** The same workflow on a type with 16 index shards (create latency 1 vs 16). */
export const BenchWorkflow16 = benchWorkflow('bench16');
/** The same workflow on a type that keeps completed instances one second (storage left after retention). */
export const ExpiringWorkflow = benchWorkflow('expiring');

/** The cost figures' workflows (type names "costed*", ids "q-...": their objects and index shard count their SQL). */
export const CostedWorkflow = benchWorkflow('costed');

/** `n` steps that each await an outside API answering after `ms`: an object billed while a step awaits I/O. */
export class CostedFetchWorkflow extends Workflow<{ n: number; ms: number }, number> {
	static override readonly type = 'costed-fetch';
	async run(step: Step, { n, ms }: { n: number; ms: number }) {
		let ok = 0;
		for (let i = 0; i < n; i++) ok += await step.do(`call-${i}`, async () => ((await fetch(`http://outside.test/delay/${ms}`)).ok ? 1 : 0));
		return ok;
	}
}

/** A step, a sleep of `sleepMs`, a step: the rows and requests of a run that sleeps 7 days are these. */
export class CostedSleepWorkflow extends Workflow<{ sleepMs: number }, number> {
	static override readonly type = 'costed-sleep';
	async run(step: Step, { sleepMs }: { sleepMs: number }) {
		const a = await step.do('before', async () => 1);
		await step.sleep('nap', sleepMs);
		return a + (await step.do('after', async () => 1));
	}
}

/** A step, a wait for the event "go" (sent by the bench once the run waits), a step. */
export class CostedEventWorkflow extends Workflow<{}, number> {
	static override readonly type = 'costed-event';
	static override events = { go: {} as { n: number } };
	async run(step: Step<typeof CostedEventWorkflow.events>) {
		const a = await step.do('before', async () => 1);
		const { n } = await step.waitForEvent('go');
		return a + n + (await step.do('after', async () => 1));
	}
}

/** Three steps; the middle one fails its first two attempts and succeeds on the third (retries 1 s apart). */
export class CostedRetryWorkflow extends Workflow<{ delayMs: number }, number> {
	static override readonly type = 'costed-retry';
	async run(step: Step, { delayMs }: { delayMs: number }) {
		const a = await step.do('before', async () => 1);
		const b = await step.do(
			'flaky',
			async ({ attempt }) => {
				if (attempt <= 2) throw new Error(`attempt ${attempt} fails, as an outside API may`);
				return attempt;
			},
			{ retries: { limit: 2, delay: delayMs, backoff: 'constant' } },
		);
		return a + b + (await step.do('after', async () => 1));
	}
}

/** `n` steps that each run a one-step child workflow (`step.invoke`). */
export class CostedChildrenWorkflow extends Workflow<{ n: number }, number> {
	static override readonly type = 'costed-children';
	async run(step: Step, { n }: { n: number }) {
		let total = 0;
		for (let i = 0; i < n; i++) total += await step.invoke(`child-${i}`, CostedWorkflow, { payload: { steps: 1 } });
		return total;
	}
}

/**
 * `n` children one after another, each `steps` steps awaiting a timer of `awaitMs` (they run
 * inline in the parent: the hard-crash test kills the runtime while they do).
 */
export class InlineParentWorkflow extends Workflow<{ n: number; steps: number; awaitMs: number }, number> {
	static override readonly type = 'inline-parent';
	async run(step: Step, { n, steps, awaitMs }: { n: number; steps: number; awaitMs: number }) {
		let total = 0;
		for (let i = 0; i < n; i++) total += await step.invoke(`child-${i}`, BenchWorkflow, { payload: { steps, awaitMs } });
		return total;
	}
}

/** Index-only types: one per shard count measured. */
export class IndexOnly1 extends Workflow<{}, void> {
	static override readonly type = 'ix1';
	/** Seeded with every entry (bench/worker.ts `/index/seed`): list latency by attribute at 100,000 entries in one shard. */
	static override readonly attributes = { customerId: 'keyword', amount: 'number', vip: 'boolean' } as const;
	async run() {}
}
export class IndexOnly4 extends Workflow<{}, void> {
	static override readonly type = 'ix4';
	async run() {}
}
export class IndexOnly16 extends Workflow<{}, void> {
	static override readonly type = 'ix16';
	async run() {}
}

/** One step that takes `holdMs` (longer than the watchdog interval): the hard-crash test kills the runtime mid-step. */
export class HoldWorkflow extends Workflow<{ holdMs: number; napMs?: number; failFirst?: boolean }, string> {
	static override readonly type = 'hold';
	async run(step: Step, { holdMs, napMs, failFirst }: { holdMs: number; napMs?: number; failFirst?: boolean }) {
		// A nap first: the step then runs in a pass its alarm woke (test/tooling/hard-crash.test.ts).
		if (napMs !== undefined) await step.sleep('nap', napMs);
		// `failFirst`: the first attempt fails at once and the step is retried 0.5 s later, its later attempts held.
		const hold = async (ctx: { attempt: number }) => {
			if (failFirst && ctx.attempt === 1) throw new Error('the first attempt fails');
			await new Promise((resolve) => setTimeout(resolve, holdMs));
			return `held ${holdMs} ms`;
		};
		const held = failFirst ? await step.do('hold', hold, { retries: { limit: 5, delay: 500, backoff: 'constant' } }) : await step.do('hold', hold);
		return step.do('after', () => held);
	}
}

/** One step that fetches `url` with its signal: the cancellation test terminates it mid-request. */
export class FetchHoldWorkflow extends Workflow<{ url: string }, string> {
	static override readonly type = 'fetch-hold';
	async run(step: Step, { url }: { url: string }) {
		return step.do('call', async ({ signal }) => (await fetch(url, { signal })).text(), { retries: { limit: 0, delay: 0 } });
	}
}

/**
 * What a round-trip parent returns: the child's result, and its round trip as the parent saw it:
 * `startedAt` is stamped by a step just before the step that starts the child, `heldAt` once
 * `run()` holds the child's result (workerd's clock advances at every I/O, so the stamps bracket
 * the create, the child's run and the answer back, and none of the parent's own create).
 */
export interface RoundTrip {
	n: number;
	startedAt: number;
	heldAt: number;
}

/** Child round trip, the built-in way: `step.invoke` of a one-step bench child. */
export class InvokeParentWorkflow extends Workflow<{}, RoundTrip> {
	static override readonly type = 'invoke-parent';
	async run(step: Step) {
		const startedAt = await step.do('stamp', async () => Date.now());
		const n = await step.invoke('child', BenchWorkflow, { payload: { steps: 1 } });
		return { n, startedAt, heldAt: Date.now() };
	}
}

/** The child of the hand-built round trip: one step, then an event back to its parent. */
export class NotifyingChildWorkflow extends Workflow<{ parent: string }, number> {
	static override readonly type = 'notifying-child';
	async run(step: Step, { parent }: { parent: string }) {
		const n = await step.do('s0', async () => 1);
		await step.do('notify-parent', () => sendEventTo(this.ctx.env, parent, n).then(() => null));
		return n;
	}
}

/** Child round trip by hand, as Cloudflare Workflows users build it: create the child in a step, wait for its event. */
export class ManualParentWorkflow extends Workflow<{}, RoundTrip> {
	static override readonly type = 'manual-parent';
	static override events = { 'child-done': {} as { n: number } };
	async run(step: Step<typeof ManualParentWorkflow.events>) {
		const startedAt = await step.do('stamp', async () => Date.now());
		await step.do('start-child', () => createChildOf(this.ctx.env, this.ctx.id).then(() => null));
		const { n } = await step.waitForEvent('child-done');
		return { n, startedAt, heldAt: Date.now() };
	}
}

/** Set by the bench Worker (the workflow file imports no client). */
export const manualChildren: {
	create(env: unknown, type: string, id: string, payload: unknown): Promise<unknown>;
	sendEvent(env: unknown, id: string, event: string, payload: unknown): Promise<unknown>;
} = { create: async () => undefined, sendEvent: async () => undefined };
const createChildOf = (env: unknown, parent: string) => manualChildren.create(env, 'notifying-child', `${parent}:child`, { parent });
const sendEventTo = (env: unknown, parent: string, n: number) => manualChildren.sendEvent(env, parent, 'child-done', { n });

/**
 * A large history: `results` steps that each return `bytes` characters (kept by
 * nobody), then a sleep of `sleepMs`, so the wake-up's pass replays every one
 * of them. The production-limits test and bench measure that replay's memory.
 */
export class BigHistoryWorkflow extends Workflow<{ results: number; bytes: number; sleepMs: number }, number> {
	static override readonly type = 'big-history';
	async run(step: Step, { results, bytes, sleepMs }: { results: number; bytes: number; sleepMs: number }) {
		let total = 0;
		for (let i = 0; i < results; i++) total += (await step.do(`r${i}`, async () => `${i}:`.padEnd(bytes, 'x'))).length;
		await step.sleep('nap', sleepMs);
		return total;
	}
}

/** `n` steps that each call an outside API once (`http://outside.test/`, answered inside the Worker): subrequests per invocation. */
export class FetcherWorkflow extends Workflow<{ n: number }, number> {
	static override readonly type = 'fetcher';
	async run(step: Step, { n }: { n: number }) {
		let ok = 0;
		for (let i = 0; i < n; i++) ok += await step.do(`call-${i}`, async () => ((await fetch(`http://outside.test/${i}`)).ok ? 1 : 0));
		return ok;
	}
}

/**
 * `n` steps started at once (`Promise.all`), each calling an outside API once (`http://outside.test/`, answered in the
 * Worker on the next turn of its event loop): the burst-of-starts responsiveness row.
 */
export class BurstWorkflow extends Workflow<{ n: number }, number> {
	static override readonly type = 'burst';
	async run(step: Step, { n }: { n: number }) {
		const oks = await Promise.all(Array.from({ length: n }, (_, i) => step.do(`f${i}`, async () => ((await fetch(`http://outside.test/${i}`)).ok ? 1 : 0))));
		return oks.reduce<number>((a, b) => a + b, 0);
	}
}

/**
 * A large stream (test/tooling/stream-backpressure.test.ts): `messages` messages of about `bytes`
 * each, at the most an instance may publish (a burst, then 50 a second, paced by a one-second
 * step after each 50, so no emit is refused).
 */
export class BigStreamWorkflow extends Workflow<{ messages: number; bytes: number }, number> {
	static override readonly type = 'big-stream';
	static override streams = { chunk: {} as { i: number; fill: string } };
	async run(step: Step<{}, typeof BigStreamWorkflow.streams>, { messages, bytes }: { messages: number; bytes: number }) {
		const fill = 'x'.repeat(bytes);
		for (let i = 1; i <= messages; i++) {
			if (i > STREAM_MESSAGE_BURST && (i - STREAM_MESSAGE_BURST) % STREAM_MESSAGES_PER_SECOND === 1) {
				await step.do(`pace-${i}`, () => new Promise<number>((resolve) => setTimeout(() => resolve(i), 1_000)));
			}
			await step.emit('chunk', { i, fill });
		}
		return messages;
	}
}

/**
 * Live streams (docs/streams.md): waits for "go" (so every subscriber is connected first),
 * then publishes `messages` ticks `gapMs` apart, each stamped with the time it was emitted.
 */
export class StreamerWorkflow extends Workflow<{ messages: number; gapMs: number }, number> {
	static override readonly type = 'streamer';
	static override events = { go: {} as { n: number } };
	static override streams = { tick: {} as { i: number; at: number } };
	async run(step: Step<typeof StreamerWorkflow.events, typeof StreamerWorkflow.streams>, { messages, gapMs }: { messages: number; gapMs: number }) {
		await step.waitForEvent('go');
		for (let i = 1; i <= messages; i++) {
			await step.do(`gap-${i}`, () => new Promise<number>((resolve) => setTimeout(() => resolve(i), gapMs)));
			await step.emit('tick', { i, at: Date.now() });
		}
		return messages;
	}
}

// ---- Capacity (bench/capacity.mjs, docs/capacity.md) ----

/** A short run (one trivial step) of a type on one index shard: the overloaded-shard row creates thousands at once. */
export class CapacityRun extends Workflow<{}, number> {
	static override readonly type = 'cap1';
	async run(step: Step) {
		return step.do('one', async () => 1);
	}
}
/** The same short run behind one hot concurrency key: its limiter's grants per second. */
export class CapacityHotKey extends Workflow<{}, number> {
	static override readonly type = 'cap-hot';
	static override concurrency = { limit: 10, key: () => 'hot' };
	async run(step: Step) {
		return step.do('one', async () => 1);
	}
}
/** A per-second schedule (overlap allowed): how late its ticks start, idle and under load. */
export class CapacityTick extends Workflow<{}, number> {
	static override readonly type = 'cap-tick';
	static override schedule = { cron: '* * * * * *', payload: {}, overlap: 'allow' as const };
	async run(step: Step) {
		return step.do('one', async () => 1);
	}
}
/** A type whose index is all the bench uses: its entries are written or seeded straight into its shards. */
function indexOnlyWorkflow<T extends string>(type: T) {
	return class IndexOnly extends Workflow<{}, void> {
		static override readonly type = type;
		async run() {}
	};
}
/** Seeded by direct SQL (the listing rows): one shard of 1,000,000 entries, and 64 and 256 shards. */
export const CapacityList1 = indexOnlyWorkflow('cap-list1');
export const CapacityList64 = indexOnlyWorkflow('cap-list64');
export const CapacityList256 = indexOnlyWorkflow('cap-list256');
/** Its shard meters its SQL (bench/sql-meter.ts): what one index write costs. */
export const CapacityWrites = indexOnlyWorkflow('cap-writes');
