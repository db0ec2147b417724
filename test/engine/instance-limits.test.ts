import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/engine/support/errors';
import { DEFAULT_MAX_HISTORY_BYTES, DEFAULT_MAX_STEPS } from '../../src/engine/definition/instance-limits';
import { defineRegistry } from '../../src/engine/definition/registry';
import type { Step } from '../../src/engine/definition/types';
import { Workflow } from '../../src/workflow';
import { VirtualHost } from '../../src/testing/virtual-host';

let ran: string[] = [];
/** A step that never returns (the isolate that ran it is gone): `big<n>` hangs while this is n. */
let hangAt = 0;

/** `n` steps, with a sleep after the second so the run spans several passes. */
class Steps extends Workflow<{ n: number; swallow?: boolean }, string> {
	static override readonly type = 'steps';
	async run(step: Step, { n, swallow }: { n: number; swallow?: boolean }) {
		for (let i = 1; i <= n; i++) {
			try {
				await step.do(`s${i}`, () => (ran.push(`s${i}`), i));
			} catch (error) {
				if (!swallow) throw error;
				return 'swallowed the limit error';
			}
			if (i === 2) await step.sleep('nap', '1 minute');
		}
		return 'done';
	}
}

/** Steps that each return half a MiB: the history grows by ~512 KiB a step. */
class BigResults extends Workflow<{ n: number }, string> {
	static override readonly type = 'big';
	async run(step: Step, { n }: { n: number }) {
		for (let i = 1; i <= n; i++) {
			await step.do(`big${i}`, () => (i === hangAt ? new Promise<string>(() => {}) : (ran.push(`big${i}`), 'x'.repeat(512 * 1024))));
		}
		return 'done';
	}
}

/** `n` steps at once, each returning half a MiB: every one begins before any result lands. */
class ParallelBig extends Workflow<{ n: number }, string> {
	static override readonly type = 'parallel-big';
	async run(step: Step, { n }: { n: number }) {
		await Promise.all(Array.from({ length: n }, (_, i) => step.do(`p${i}`, async () => 'x'.repeat(512 * 1024))));
		return 'done';
	}
}

/** Echoes its payload's padding as its output, `extra` characters longer. */
class Echo extends Workflow<{ pad: string; extra: number }, string> {
	static override readonly type = 'echo';
	async run(_step: Step, { pad, extra }: { pad: string; extra: number }) {
		return pad + 'y'.repeat(extra);
	}
}

const MiB = 1024 * 1024;
const registry = defineRegistry({
	echo: { workflow: Echo },
	// 4 steps: s1, s2, the sleep, s3.
	steps: { workflow: Steps, limits: { steps: 4 } },
	big: { workflow: BigResults, limits: { historyBytes: 2 * MiB } },
	'parallel-big': { workflow: ParallelBig, limits: { historyBytes: 2 * MiB } },
});

async function run(type: string, payload: unknown, host = new VirtualHost({ registry })) {
	ran = [];
	const engine = host.engine();
	await engine.create('wf-1', type, payload);
	await host.idle();
	// Fires alarms while the run goes on (a finished instance's next alarm is its retention).
	while (['running', 'sleeping', 'created'].includes(engine.status().status) && (await host.fireAlarm(engine)));
	return { host, engine };
}

describe('registry limits', () => {
	it('default to 10,000 steps and 100 MiB of history per instance', () => {
		const entry = defineRegistry({ steps: { workflow: Steps } }).get('steps');
		expect(entry.limits).toEqual({ steps: DEFAULT_MAX_STEPS, historyBytes: DEFAULT_MAX_HISTORY_BYTES });
		expect(entry.limits).toEqual({ steps: 10_000, historyBytes: 100 * MiB });
	});

	it('accept up to 25,000 steps per type', () => {
		expect(defineRegistry({ steps: { workflow: Steps, limits: { steps: 25_000 } } }).get('steps').limits.steps).toBe(25_000);
	});

	it.for([
		[{ steps: 25_001 }, /steps\.limits\.steps must be a whole number from 1 to 25000 \(Cloudflare Workflows' maximum of steps per instance\), got 25001/],
		[{ steps: 0 }, /limits\.steps must be a whole number from 1 to 25000/],
		[{ steps: 1.5 }, /limits\.steps must be a whole number/],
		[{ historyBytes: 2 * 1024 ** 3 }, /steps\.limits\.historyBytes must be a whole number from 2097152 to 1073741824 \(2 MiB to 1 GiB\), got 2147483648/],
		[{ historyBytes: 1000 }, /limits\.historyBytes must be a whole number from 2097152/],
	] as const)('refuse %j at start-up with a message naming the limit', ([limits, message]) => {
		expect(defineRegistry({ steps: { workflow: Steps, limits: limits as never } }).problem?.message).toMatch(message);
	});
});

describe('the step limit', () => {
	it('lets a run take exactly as many steps as its limit', async () => {
		const { engine } = await run('steps', { n: 3 });
		expect(engine.status()).toMatchObject({ status: 'completed', output: 'done' });
	});

	it('fails the run errored with STEP_LIMIT_EXCEEDED before the step past the limit runs, and records it in the history', async () => {
		const { engine } = await run('steps', { n: 6 });
		expect(engine.status()).toMatchObject({ status: 'errored', error: { name: 'StepLimitExceededError', code: ErrorCode.StepLimitExceeded } });
		expect(engine.status().error?.message).toMatch(/step "s4" would be step 5 of this run, past the type's limit of 4 steps/);
		expect(ran).not.toContain('s4');
		const events = engine.history({ limit: 1000 }).events;
		expect(events.at(-1)).toMatchObject({ kind: 'workflow.errored', error: { code: 'STEP_LIMIT_EXCEEDED' } });
		expect(events.some((e) => e.kind === 'step.started' && e.step === 's4')).toBe(false);
	});

	it('fails the run even when run() catches the limit error and returns', async () => {
		const { engine } = await run('steps', { n: 6, swallow: true });
		expect(engine.status()).toMatchObject({ status: 'errored', error: { code: ErrorCode.StepLimitExceeded } });
	});

	it('counts the steps recorded before an eviction: a fresh engine does not start from zero', async () => {
		let host = new VirtualHost({ registry });
		ran = [];
		await host.engine().create('wf-1', 'steps', { n: 6 });
		await host.idle();
		expect(host.store.instance?.status).toBe('sleeping');
		// The isolate goes away while the instance sleeps; a new engine takes over at the alarm.
		host.crash();
		host = host.nextIsolate();
		const revived = host.engine();
		await host.fireAlarm(revived);
		expect(revived.status()).toMatchObject({ status: 'errored', error: { code: ErrorCode.StepLimitExceeded } });
		expect(ran).toEqual(['s1', 's2', 's3']);
	});

	it('starts again from zero for the new run of a restart', async () => {
		const { host, engine } = await run('steps', { n: 3 });
		engine.restart();
		await host.idle();
		while (engine.status().status === 'sleeping') await host.fireAlarm(engine);
		expect(engine.status()).toMatchObject({ status: 'completed', generation: 1 });
	});
});

describe('the history size limit', () => {
	it('fails the run with HISTORY_LIMIT_EXCEEDED at the step whose result would take the history past the limit, without storing it', async () => {
		const { engine, host } = await run('big', { n: 10 });
		expect(engine.status()).toMatchObject({ status: 'errored', error: { name: 'HistoryLimitExceededError', code: ErrorCode.HistoryLimitExceeded } });
		// Three results of 512 KiB and the other records fit in 2 MiB; the fourth result would not.
		expect(ran).toEqual(['big1', 'big2', 'big3', 'big4']);
		expect(engine.status().error?.message).toMatch(/result of step "big4" \(524290 bytes\) would take the history .* past the type's limit of 2097152/);
		expect(host.store.history.filter((r) => r.kind === 'step.completed')).toHaveLength(3);
		expect(host.store.history.at(-1)).toMatchObject({ kind: 'workflow.errored' });
	});

	it('holds for parallel steps too: results that would pass the limit are not stored and the run errors', async () => {
		const { engine, host } = await run('parallel-big', { n: 8 });
		expect(engine.status()).toMatchObject({ status: 'errored', error: { code: ErrorCode.HistoryLimitExceeded } });
		const stored = host.store.history.reduce((sum, r) => sum + (r.value?.length ?? 0) + (r.detail?.length ?? 0), 0);
		expect(stored).toBeLessThanOrEqual(2 * MiB);
		expect(host.store.history.filter((r) => r.kind === 'step.completed')).toHaveLength(3);
	});

	it('keeps a running total in the instance row equal to the bytes of every record', async () => {
		const { host } = await run('big', { n: 3 });
		expect(host.store.instance?.status).toBe('completed');
		const total = host.store.history.reduce((sum, r) => sum + Buffer.byteLength(r.value ?? '') + Buffer.byteLength(r.detail ?? ''), 0);
		expect(total).toBeGreaterThan(3 * 512 * 1024);
		expect(host.store.instance).toMatchObject({ historyBytes: total, historySeq: host.store.history.at(-1)!.seq });
	});

	it('counts the records of a pass a crash cut short, written after the last status change', async () => {
		let host = new VirtualHost({ registry });
		ran = [];
		hangAt = 4;
		const engine = host.engine();
		await engine.create('wf-1', 'big', { n: 10 });
		// The first pass completes three steps (1.5 MiB) and hangs in the fourth: the isolate dies there.
		for (let i = 0; i < 100 && host.store.steps.get('do:big4') === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 0));
		expect(ran).toEqual(['big1', 'big2', 'big3']);
		// Stored as created, or running if the index delivery wrote it meanwhile (kernel.ts `startRunning`): either way the
		// row's running total has none of the pass's records.
		expect(['created', 'running']).toContain(host.store.instance!.status);
		expect(host.store.instance).toMatchObject({ historyBytes: expect.any(Number) });
		expect(host.store.instance!.historyBytes!).toBeLessThan(1024);
		host.crash();
		host = host.nextIsolate();
		hangAt = 0;
		ran = [];
		const revived = host.engine();
		await host.fireAlarm(revived);
		expect(revived.status()).toMatchObject({ status: 'errored', error: { code: ErrorCode.HistoryLimitExceeded } });
		// The three results from before the crash count: one more step reaches 2 MiB, not four more.
		expect(ran).toEqual(['big4']);
	});

	it('is not reset by a restart: the history keeps every generation', async () => {
		const { host, engine } = await run('big', { n: 10 });
		engine.restart();
		ran = [];
		await host.idle();
		expect(engine.status()).toMatchObject({ status: 'errored', generation: 1, error: { code: ErrorCode.HistoryLimitExceeded } });
		// The first result of the new run does not fit next to the old generation's records.
		expect(engine.history({ generation: 1, limit: 100 }).events.filter((e) => e.kind === 'step.completed')).toEqual([]);
	});
});

describe('the instance row', () => {
	it('ends errored with TOO_LARGE when the output does not fit beside the payload in one 2 MB row, and stores nothing that could not be written', async () => {
		const pad = 'p'.repeat(1000 * 1000);
		const { host, engine } = await run('echo', { pad, extra: 40_000 });
		expect(engine.status()).toMatchObject({ status: 'errored', error: { code: ErrorCode.TooLarge, message: expect.stringContaining('does not fit beside its payload') } });
		expect(host.store.readInstance()?.output).toBeNull();
	});

	it('completes when payload and output together fit', async () => {
		const { engine } = await run('echo', { pad: 'p'.repeat(900 * 1000), extra: 1000 });
		expect(engine.status().status).toBe('completed');
	});
});
