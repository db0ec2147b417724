import { z } from 'zod';
import { ChildWorkflowError, Workflow, type Step, type StepOf } from '../../src/authoring';
import { countExecution } from './probes';

/** A step whose first execution never finishes: for crashes mid-step. */
export class HangOnceWorkflow extends Workflow<{}, string> {
	static override readonly type = 'hang-once';
	static override defaults = { retries: { limit: 2, delay: '1s', backoff: 'constant' as const } };
	async run(step: Step) {
		const before = await step.do('before', () => countExecution(`${this.ctx.id}:before`));
		const held = await step.do('held', async () => {
			if (countExecution(`${this.ctx.id}:held`) === 1) await new Promise(() => {});
			return 'released';
		});
		await step.do('after', () => countExecution(`${this.ctx.id}:after`));
		return `${before}:${held}`;
	}
}

/**
 * Woken by its event (`go`) or by the end of its nap, then a step whose first execution never finishes: for a crash of
 * a woken pass that holds its `running` in memory (the compact layout's format 2), after it took its event or wake-up.
 */
export class HangWhenWokenWorkflow extends Workflow<{ by: 'event' | 'nap' }, string> {
	static override readonly type = 'hang-when-woken';
	static override events = { go: z.object({}) };
	static override defaults = { retries: { limit: 2, delay: '1s', backoff: 'constant' as const } };
	async run(step: Step<typeof HangWhenWokenWorkflow.events>, { by }: { by: 'event' | 'nap' }) {
		if (by === 'event') await step.waitForEvent('go');
		else await step.sleep('nap', '1 minute');
		return step.do('held', async () => {
			if (countExecution(`${this.ctx.id}:held`) === 1) await new Promise(() => {});
			return 'released';
		});
	}
}

const chaosEvents = { signal: z.object({ seq: z.number().int() }) };

/**
 * Thirty checkpoints mixing steps, sleeps and event waits; each step counts
 * its executions so a test can prove that checkpointed steps never rerun.
 */
export class ChaosWorkflow extends Workflow<{ seed: number }, { sum: number; signals: number[] }> {
	static override readonly type = 'chaos';
	static override events = chaosEvents;
	static override payload = z.object({ seed: z.number().int() });
	async run(step: Step<typeof chaosEvents>, { seed }: { seed: number }) {
		let sum = 0;
		const signals: number[] = [];
		for (let i = 0; i < 30; i++) {
			if (i % 10 === 4) await step.sleep(`sleep-${i}`, `${1 + (seed % 3)}s`);
			else if (i % 10 === 8) signals.push((await step.waitForEvent('signal', { name: `wait-${i}`, timeout: '1 hour' })).seq);
			else sum += await step.do(`step-${i}`, () => (countExecution(`${this.ctx.id}:step-${i}`), seed + i));
		}
		return { sum, signals };
	}
}

/** Many CPU-light steps: for pause storms and responsiveness. */
export class ManyStepsWorkflow extends Workflow<{ steps: number }, number> {
	static override readonly type = 'many';
	static override payload = z.object({ steps: z.number().int().min(0).max(100_000) });
	static override events = { poke: z.object({ n: z.number() }) };
	async run(step: Step<typeof ManyStepsWorkflow.events>, { steps }: { steps: number }) {
		let total = 0;
		for (let i = 0; i < steps; i++) total += await step.do(`s${i}`, () => i);
		return total;
	}
}

/** Ten counted steps, on a type whose passes start at most 4 attempts per invocation: continuations, seen from a real runner. */
export class BudgetedWorkflow extends Workflow<{}, number> {
	static override readonly type = 'budgeted';
	async run(step: Step) {
		let total = 0;
		// Each step awaits a macrotask, as one awaiting a fetch does: steps that await no I/O do not count against the step budget.
		for (let i = 0; i < 10; i++) total += await step.do(`b${i}`, async () => (countExecution(`${this.ctx.id}:b${i}`), await new Promise((r) => setTimeout(r, 0)), i));
		return total;
	}
}

/** Consumes a stream of events in order: for event storms. */
export class InboxWorkflow extends Workflow<{ expect: number }, number[]> {
	static override readonly type = 'inbox';
	static override events = { msg: z.object({ n: z.number().int() }) };
	async run(step: Step<typeof InboxWorkflow.events>, { expect }: { expect: number }) {
		const seen: number[] = [];
		for (let i = 0; i < expect; i++) seen.push((await step.waitForEvent('msg', { name: `msg-${i}` })).n);
		return seen;
	}
}

/** Fails its first attempt, then waits a 10-minute backoff: for durable retry waits. */
export class SlowRetryWorkflow extends Workflow<{}, string> {
	static override readonly type = 'slow-retry';
	async run(step: Step) {
		return step.do(
			'call',
			() => {
				if (countExecution(`${this.ctx.id}:call`) === 1) throw new Error('upstream 503');
				return 'ok';
			},
			{ retries: { limit: 1, delay: '10 minutes', backoff: 'constant' } },
		);
	}
}

/** Fails its first `failures` attempts, retried every second: a run whose status stays `sleeping`, changing every second. */
export class RetriesEverySecondWorkflow extends Workflow<{ failures: number }, number> {
	static override readonly type = 'retries-every-second';
	async run(step: Step, { failures }: { failures: number }) {
		return step.do('call', ({ attempt }) => {
			if (attempt <= failures) throw new Error(`attempt ${attempt}: upstream 503`);
			return attempt;
		}, { retries: { limit: 1000, delay: '1s', backoff: 'constant' } });
	}
}

/** Fails its first two attempts, each retry 10 minutes later: the bench's retry scenario in one step. */
export class TwiceRetryWorkflow extends Workflow<{}, string> {
	static override readonly type = 'twice-retry';
	async run(step: Step) {
		return step.do(
			'call',
			() => {
				if (countExecution(`${this.ctx.id}:call`) <= 2) throw new Error('upstream 503');
				return 'ok';
			},
			{ retries: { limit: 2, delay: '10 minutes', backoff: 'constant' } },
		);
	}
}

/**
 * The bench's retried step (bench/workflows.ts `CostedRetryWorkflow`: `before`, `flaky`, `after`), its attempts after the
 * first `failures` awaiting a timer (I/O: an attempt that runs past its turn); with `hang`, the first of them never
 * finishes in its first execution (an attempt that kills its isolate).
 */
export class RetryAwaitsWorkflow extends Workflow<{ failures: number; limit: number; hang?: boolean; bytes?: number; pad?: number }, number> {
	static override readonly type = 'retry-awaits';
	async run(step: Step, { failures, limit, hang, bytes, pad = 0 }: { failures: number; limit: number; hang?: boolean; bytes?: number; pad?: number }) {
		const a = await step.do('before', async () => 1);
		const b = await step.do(
			'flaky',
			async ({ attempt }) => {
				countExecution(`${this.ctx.id}:flaky`);
				// `pad`: a longer message, for an error that takes the record past its page.
				if (attempt <= failures) throw new Error(`attempt ${attempt} fails, as an outside API may${'!'.repeat(pad)}`);
				if (hang && countExecution(`${this.ctx.id}:flaky-awaits`) === 1) await new Promise(() => {});
				if (bytes === undefined) await new Promise((resolve) => setTimeout(resolve, 1));
				// With `bytes`, a result too large to ride in another step's value or the record (it settles at once).
				return bytes === undefined ? attempt : 'x'.repeat(bytes);
			},
			{ retries: { limit, delay: '1s', backoff: 'constant' } },
		);
		return a + (typeof b === 'number' ? b : b.length) + (await step.do('after', async () => 1));
	}
}

/**
 * Two steps in parallel: `slow` takes `slowMs`, `flaky` fails its first
 * attempt and retries after 100 ms. `combine` picks Promise.all, allSettled
 * or race; each attempt returns its own number, so a rerun would show.
 */
export class ParallelWorkflow extends Workflow<{ combine: 'all' | 'allSettled' | 'race'; slowMs: number }, string> {
	static override readonly type = 'parallel';
	static override payload = z.object({ combine: z.enum(['all', 'allSettled', 'race']), slowMs: z.number().int().min(0).max(10_000) });
	async run(step: Step, { combine, slowMs }: { combine: 'all' | 'allSettled' | 'race'; slowMs: number }) {
		const slow = step.do('slow', async () => {
			const attempt = countExecution(`${this.ctx.id}:slow`);
			await new Promise((resolve) => setTimeout(resolve, slowMs));
			return `slow#${attempt}`;
		});
		const flaky = step.do(
			'flaky',
			() => {
				if (countExecution(`${this.ctx.id}:flaky`) === 1) throw new Error('upstream 503');
				return 'flaky-ok';
			},
			{ retries: { limit: 2, delay: 100, backoff: 'constant' } },
		);
		if (combine === 'race') return Promise.race([slow, flaky]);
		if (combine === 'all') return (await Promise.all([slow, flaky])).join('+');
		const settled = await Promise.allSettled([slow, flaky]);
		if (settled.some((s) => s.status === 'rejected')) return step.do('after', () => `${countExecution(`${this.ctx.id}:after`)}`);
		return settled.map((s) => (s as PromiseFulfilledResult<string>).value).join('+');
	}
}

/** Throws from run() or from a step whatever `kind` names: values that do not store as they are. */
export class ThrowsWorkflow extends Workflow<{ kind: 'bigint' | 'cyclic' | 'huge'; inStep: boolean }, never> {
	static override readonly type = 'throws';
	static override payload = z.object({ kind: z.enum(['bigint', 'cyclic', 'huge']), inStep: z.boolean() });
	async run(step: Step, { kind, inStep }: { kind: 'bigint' | 'cyclic' | 'huge'; inStep: boolean }): Promise<never> {
		const thrown = () => {
			if (kind === 'bigint') return 10n;
			if (kind === 'huge') return new Error('x'.repeat(20 * 1024 * 1024));
			const cyclic: Record<string, unknown> = {};
			cyclic.self = cyclic;
			return cyclic;
		};
		if (inStep) {
			return step.do('bad', () => {
				throw thrown();
			}, { retries: { limit: 1, delay: 10, backoff: 'constant' } });
		}
		throw thrown();
	}
}

/** Waits for a knock (optional fields: `{}` is a valid payload), then a ring that declares no payload. */
export class DoorbellWorkflow extends Workflow<{}, string> {
	static override readonly type = 'doorbell';
	static override events = { knock: z.object({ by: z.string().optional() }), ring: z.undefined() };
	async run(step: Step<typeof DoorbellWorkflow.events>) {
		const knock = await step.waitForEvent('knock');
		await step.waitForEvent('ring');
		return knock.by ?? 'someone';
	}
}

/** Steps with large results: for status size limits. */
export class BigResultsWorkflow extends Workflow<{ steps: number; bytes: number }, number> {
	static override readonly type = 'big-results';
	static override payload = z.object({ steps: z.number().int().min(0).max(1000), bytes: z.number().int().min(1).max(1_000_000) });
	async run(step: Step, { steps, bytes }: { steps: number; bytes: number }) {
		for (let i = 0; i < steps; i++) await step.do(`s${i}`, () => `${i}:`.padEnd(bytes, 'x'));
		return steps;
	}
}

/** A step that returns a Date: JSON would turn it into a string on replay. */
export class DateStepWorkflow extends Workflow<{}, string> {
	static override readonly type = 'date-step';
	async run(step: Step) {
		// The cast hides the Date from the compile-time check; the run-time one must still refuse it.
		const when = await step.do('when', () => countExecution(`${this.ctx.id}:when`) && (new Date(0) as unknown));
		return String(when);
	}
}

/** Buffers `blob` events that it never waits for, and finishes on `done`. */
export class MailboxWorkflow extends Workflow<{}, string> {
	static override readonly type = 'mailbox';
	static override events = { blob: z.object({ data: z.string() }), done: z.object({}) };
	async run(step: Step<typeof MailboxWorkflow.events>) {
		await step.waitForEvent('done');
		return 'done';
	}
}

/**
 * Which code a "deploy" runs: tests switch it between passes to stand for a new
 * deployment of the same workflow type over the same Durable Object storage.
 */
export const deployedCode = { version: 'v1' as 'v1' | 'v2-unpatched' | 'v2-patched' };

/** Reserve, wait for approval, charge, settle; v2 adds a fraud check before the charge. */
export class RedeployedWorkflow extends Workflow<{}, string> {
	static override readonly type = 'redeployed';
	static override events = { approval: z.object({ ok: z.boolean() }) };
	async run(step: Step<typeof RedeployedWorkflow.events>) {
		const id = this.ctx.id;
		await step.do('reserve', () => countExecution(`${id}:reserve`));
		await step.waitForEvent('approval');
		const code = deployedCode.version;
		if (code === 'v2-unpatched' || (code === 'v2-patched' && (await step.patched('fraud-check')))) {
			await step.do('fraud-check', () => countExecution(`${id}:fraud-check`));
		}
		await step.do('charge', () => countExecution(`${id}:charge`));
		await step.sleep('settle', '1 hour');
		return 'done';
	}
}

/** One step, failing on request (retention and purge tests). */
async function doubleOrFail(step: Step, { n, fail }: { n: number; fail?: boolean }): Promise<number> {
	const doubled = await step.do('double', () => n * 2);
	if (fail) throw new Error(`failed on purpose with ${doubled}`);
	return doubled;
}

/** Its type keeps completed instances an hour (retention tests). */
export class ShortLivedWorkflow extends Workflow<{ n: number; fail?: boolean }, number> {
	static override readonly type = 'short-lived';
	run(step: Step, payload: { n: number; fail?: boolean }) {
		return doubleOrFail(step, payload);
	}
}

/** The same, under a type of its own (purge tests). */
export class PurgeableWorkflow extends Workflow<{ n: number; fail?: boolean }, number> {
	static override readonly type = 'purgeable';
	run(step: Step, payload: { n: number; fail?: boolean }) {
		return doubleOrFail(step, payload);
	}
}

/** Scheduled every five minutes; each run waits for `finish`, so a test decides when it is unfinished. */
export class EveryFiveMinutesWorkflow extends Workflow<{ report: string }, string> {
	static override readonly type = 'every-5m';
	static override schedule = { cron: '*/5 * * * *', payload: { report: 'usage' }, overlap: 'skip' as const };
	static override events = { finish: {} as { ok: boolean } };
	async run(step: Step<typeof EveryFiveMinutesWorkflow.events>, { report }: { report: string }) {
		await step.waitForEvent('finish', { timeout: '30 days' });
		return `${report} for ${this.ctx.id}`;
	}
}

/** Scheduled hourly with overlap allowed; completes at once. */
export class HourlyWorkflow extends Workflow<{}, string> {
	static override readonly type = 'hourly';
	static override schedule = { cron: '0 * * * *', overlap: 'allow' as const };
	async run(step: Step) {
		return step.do('tick', () => this.ctx.id);
	}
}

const limitedEvents = { finish: {} as { fail?: boolean } };

/**
 * Two instances per tenant at once (`static concurrency`); each waits for `finish`
 * so a test decides when it ends, and how (`fail: true` errors it).
 */
export class LimitedWorkflow extends Workflow<{ tenant: string; hang?: boolean }, string> {
	static override readonly type = 'limited';
	static override concurrency = { limit: 2, key: (payload: { tenant: string }) => payload.tenant };
	static override events = limitedEvents;
	async run(step: Step<typeof limitedEvents>, { hang }: { tenant: string; hang?: boolean }) {
		await step.do('started', async () => {
			// The first attempt of a hanging instance never returns: the process dies under it in a test.
			if (countExecution(`${this.ctx.id}:started`) === 1 && hang) await new Promise(() => {});
			return true;
		});
		const { fail } = await step.waitForEvent('finish', { timeout: '30 days' });
		if (fail) throw new Error('told to fail');
		return this.ctx.id;
	}
}

/** `steps` steps with a one-minute sleep after the second (so the run spans passes); its type allows 5 steps. */
export class StepLimitedWorkflow extends Workflow<{ steps: number }, number> {
	static override readonly type = 'step-limited';
	async run(step: Step, { steps }: { steps: number }) {
		for (let i = 1; i <= steps; i++) {
			await step.do(`s${i}`, () => countExecution(`${this.ctx.id}:s${i}`));
			if (i === 2) await step.sleep('nap', '1 minute');
		}
		return steps;
	}
}

/** Steps of 600 kB results; its type allows 2 MiB of history. */
export class HistoryLimitedWorkflow extends Workflow<{ steps: number }, number> {
	static override readonly type = 'history-limited';
	async run(step: Step, { steps }: { steps: number }) {
		for (let i = 1; i <= steps; i++) {
			await step.do(`s${i}`, () => `${countExecution(`${this.ctx.id}:s${i}`)}:`.padEnd(600_000, 'x'));
		}
		return steps;
	}
}

/** A child: doubles `n`; waits for "go" first when `n` is 0, fails when `n` is negative. */
export class ChildDoublerWorkflow extends Workflow<{ n: number }, number> {
	static override readonly type = 'child-double';
	static override payload = z.object({ n: z.number() });
	static override events = { go: {} as {} };
	async run(step: Step<typeof ChildDoublerWorkflow.events>, { n }: { n: number }) {
		if (n < 0) throw new Error(`cannot double ${n}`);
		if (n === 0) await step.waitForEvent('go');
		return step.do('double', () => (countExecution(`${this.ctx.id}:double`), n * 2));
	}
}

/**
 * A child that takes a while: a step, then one awaiting a timer of `ms` (it runs inline in its parent all along);
 * with `wait`, then an event "go", whose `n` it returns.
 */
export class SlowChildWorkflow extends Workflow<{ ms: number; wait?: boolean }, number> {
	static override readonly type = 'slow-child';
	static override events = { go: {} as { n: number } };
	async run(step: Step<typeof SlowChildWorkflow.events>, { ms, wait }: { ms: number; wait?: boolean }) {
		await step.do('first', () => countExecution(`${this.ctx.id}:first`));
		const waited = await step.do('wait', () => new Promise<number>((resolve) => setTimeout(() => resolve(countExecution(`${this.ctx.id}:wait`) * ms), ms)));
		return wait ? (await step.waitForEvent('go')).n : waited;
	}
}

/** A child of `n` steps, each awaiting a timer of `ms`, counted. */
export class StepsChildWorkflow extends Workflow<{ n: number; ms: number }, number> {
	static override readonly type = 'steps-child';
	async run(step: Step, { n, ms }: { n: number; ms: number }) {
		for (let i = 0; i < n; i++) await step.do(`s${i}`, () => new Promise<number>((resolve) => setTimeout(() => resolve(countExecution(`${this.ctx.id}:s${i}`)), ms)));
		return n;
	}
}

/** A parent that invokes one StepsChild. */
export class StepsParentWorkflow extends Workflow<{ n: number; ms: number }, number> {
	static override readonly type = 'steps-parent';
	async run(step: Step, payload: { n: number; ms: number }) {
		return step.invoke('steps', StepsChildWorkflow, { payload });
	}
}

/** One step whose function is async and awaits nothing (it settles within the attempt's first turns): the bench's child. */
export class AsyncStepWorkflow extends Workflow<{ n: number }, number> {
	static override readonly type = 'async-step';
	async run(step: Step, { n }: { n: number }) {
		return step.do('s0', async () => n);
	}
}

/** A parent of `n` one-step children invoked one after another (the bench's children scenario): they run inline. */
export class ManyChildrenWorkflow extends Workflow<{ n: number }, number> {
	static override readonly type = 'many-children';
	async run(step: Step, { n }: { n: number }) {
		let total = 0;
		for (let i = 0; i < n; i++) total += await step.invoke(`child-${i}`, AsyncStepWorkflow, { payload: { n: i } });
		return total;
	}
}

/** A parent that invokes one slow child. */
export class SlowParentWorkflow extends Workflow<{ ms: number; wait?: boolean }, number> {
	static override readonly type = 'slow-parent';
	async run(step: Step, { ms, wait }: { ms: number; wait?: boolean }) {
		return step.invoke('slow', SlowChildWorkflow, { payload: { ms, ...(wait ? { wait } : {}) } });
	}
}

/** A parent: starts a receipt child (fire and forget), then invokes a doubling child and reports. */
export class ChildParentWorkflow extends Workflow<{ n: number; abandon?: boolean }, string> {
	static override readonly type = 'child-parent';
	async run(step: Step, { n, abandon }: { n: number; abandon?: boolean }) {
		const receipt = await step.start('receipt', ChildDoublerWorkflow, { payload: { n: 1 } });
		try {
			const doubled: number = await step.invoke('double', ChildDoublerWorkflow, { payload: { n }, ...(abandon ? { onParentTerminate: 'abandon' as const } : {}) });
			return `${doubled} (receipt ${receipt})`;
		} catch (error) {
			if (error instanceof ChildWorkflowError) return `child ${error.childId} ${error.childStatus}`;
			throw error;
		}
	}
}

/**
 * Search attributes: given at create, then changed by the run at each stage it reaches
 * (`advance` events say where to), so a listing sees them change under it.
 */
export class SearchableWorkflow extends Workflow<{ customerId: string }, string> {
	static override readonly type = 'searchable';
	static override readonly attributes = { customerId: 'keyword', amount: 'number', vip: 'boolean', dueAt: 'datetime', stage: 'keyword' } as const;
	static override events = { advance: z.object({ stage: z.string().min(1), amount: z.number().optional(), vip: z.boolean().optional(), done: z.boolean().optional() }) };

	async run(step: StepOf<typeof SearchableWorkflow>): Promise<string> {
		await step.setAttributes('received', { stage: 'received' });
		for (let round = 0; round < 20; round++) {
			const next = await step.waitForEvent('advance', { name: `advance-${round}` });
			await step.setAttributes(`stage-${round}`, {
				stage: next.stage,
				...(next.amount !== undefined ? { amount: next.amount } : {}),
				...(next.vip !== undefined ? { vip: next.vip } : {}),
			});
			if (next.done) return next.stage;
		}
		return 'rounds-exhausted';
	}
}

/** A step, a sleep of a second, a step: the bench's sleep scenario (bench/workflows.ts `CostedSleepWorkflow`). */
export class StepNapStepWorkflow extends Workflow<{}, number> {
	static override readonly type = 'step-nap-step';
	async run(step: Step) {
		const a = await step.do('before', async () => 1);
		await step.sleep('nap', '1 second');
		return a + (await step.do('after', async () => 1));
	}
}

/** Sleeps an hour, then a step that awaits a timer of `ms`, then one more step: a pass an alarm wakes that outlasts a macrotask. */
export class SlowAfterSleepWorkflow extends Workflow<{ ms: number }, string> {
	static override readonly type = 'slow-after-sleep';
	async run(step: Step, { ms }: { ms: number }) {
		await step.sleep('nap', '1 hour');
		await step.do('slow', () => new Promise<number>((resolve) => setTimeout(() => resolve(ms), ms)));
		await step.do('after', () => 'done');
		return 'done';
	}
}
