import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startDevServer } from '../../bench/lib/dev-server.mjs';
import { until } from './until.js';

const persistTo = mkdtempSync(join(tmpdir(), 'shardflow-crash-'));
type Server = Awaited<ReturnType<typeof startDevServer>>;
let server: Server | undefined;
afterAll(async () => {
	await server?.stop();
	rmSync(persistTo, { recursive: true, force: true });
});

describe('a hard crash of the local runtime', () => {
	it('loses no workflow in flight: after kill -9 and a restart, sleeping ones finish, waiting ones take their event, and the index catches up', async () => {
		server = await startDevServer({ persistTo });
		const post = (url: string, path: string, body: unknown) =>
			fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
		const sleepers = Array.from({ length: 10 }, (_, i) => `crash-test-${i}`);
		const payers = Array.from({ length: 5 }, (_, i) => `crash-pay-${i}`);
		for (const id of sleepers) expect((await post(server.url, '/workflows', { type: 'test', id, payload: { name: id } })).status).toBe(201);
		for (const id of payers) expect((await post(server.url, '/workflows', { type: 'payment', id, payload: { amount: 1, currency: 'EUR' } })).status).toBe(201);

		await server.crash(); // while the test workflows sleep and the payments wait
		server = await startDevServer({ persistTo });
		const { url } = server;

		for (const id of payers) expect((await post(url, `/workflows/${id}/events/approval`, { approved: true, reviewer: 'after-crash' })).status).toBe(202);
		for (const id of [...sleepers, ...payers]) {
			const status = await until(`${id} completes`, async () => {
				const body = (await (await fetch(`${url}/workflows/${id}`)).json()) as { status: string; output: unknown };
				return body.status === 'completed' ? body : undefined;
			});
			expect(status.output).toMatchObject(id.startsWith('crash-test') ? { greeting: `Hello, ${id}!` } : { status: 'charged', reviewer: 'after-crash' });
		}
		await until('the index shows every instance completed', async () => {
			const body = (await (await fetch(`${url}/workflows?status=completed&limit=100`)).json()) as { items: { id: string }[] };
			const ids = new Set(body.items.map((i) => i.id));
			return [...sleepers, ...payers].every((id) => ids.has(id)) ? true : undefined;
		});
	}, 180_000);
});

describe('a hard crash in the middle of a long run', () => {
	it('resumes from the last checkpoint after kill -9 and a restart, without re-running checkpointed steps', async () => {
		const dir = mkdtempSync(join(tmpdir(), 'shardflow-crash-run-'));
		let bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], persistTo: dir, vars: {} });
		try {
			// Within the bench type's step limit (25,000, Cloudflare's ceiling; docs/deploying.md "Limits").
			const steps = 20_000;
			const res = await fetch(`${bench.url}/ours/create`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify({ params: { steps } }),
			});
			const { id } = (await res.json()) as { id: string };
			// Crash once the run is a thousand steps in: at ~0.02 ms a step, 20,000 take ~0.4 s, so a fixed
			// wait could find it finished (it did once); a status read every 10 ms catches it in flight.
			let before: { status: string; stepCounts: { total: number } };
			for (;;) {
				before = (await (await fetch(`${bench.url}/ours/status/${id}`)).json()) as typeof before;
				if (before.stepCounts.total >= 1000 || !['created', 'running'].includes(before.status)) break;
				await new Promise((r) => setTimeout(r, 10));
			}
			await bench.crash();
			expect(before.status).toBe('running'); // the crash hit a run in flight
			expect(before.stepCounts.total).toBeLessThan(steps);
			bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], persistTo: dir, vars: {} });
			const url = bench.url;
			const status = await until(
				'the interrupted run completes',
				async () => {
					const body = (await (await fetch(`${url}/ours/status/${id}`)).json()) as {
						status: string;
						output: number;
						stepCounts: { total: number };
					};
					return body.status === 'completed' ? body : undefined;
				},
				60_000,
			);
			expect(status.output).toBe((steps * (steps - 1)) / 2);
			expect(status.stepCounts).toEqual({ total: steps, completed: steps });
			// Only a step in flight at the moment of the crash may have run twice.
			const history = (await (await fetch(`${url}/ours/steps-summary/${id}`)).json()) as { total: number; retried: number };
			expect(history.total).toBe(steps);
			expect(history.retried).toBeLessThanOrEqual(1);
		} finally {
			await bench.stop();
			rmSync(dir, { recursive: true, force: true });
		}
	}, 180_000);
});

describe('a hard crash while children run inside their parents', () => {
	// The bench Worker's defaults (tables, a step of a child in a row of its own), and what a new project runs (compact, a
	// finished child in one row: its settled steps held until the next attempt begins, docs/decisions.md).
	it.for([
		{ name: 'table layout', vars: {} as Record<string, string> },
		{ name: 'compact layout, SHARDFLOW_INLINE_ONE_ROW', vars: { SHARDFLOW_STORAGE_LAYOUT: 'compact', SHARDFLOW_INLINE_ONE_ROW: 'true' } },
	])('loses and repeats no finished child step: after kill -9 every parent completes, every child appears once with the outcome its parent got ($name)', { timeout: 180_000 }, async ({ vars }) => {
		const dir = mkdtempSync(join(tmpdir(), 'shardflow-crash-inline-'));
		let bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], persistTo: dir, vars });
		const json = async (url: string, init?: RequestInit) => (await fetch(url, init)).json() as Promise<any>;
		try {
			// 12 parents, each 4 children one after another, each child 3 steps awaiting 40 ms: ~0.5 s a parent.
			const params = { n: 4, steps: 3, awaitMs: 40 };
			const parents: string[] = [];
			for (let i = 0; i < 12; i++) {
				const { id } = await json(`${bench.url}/ours/create`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'inline-parent', params }) });
				parents.push(id);
			}
			await new Promise((r) => setTimeout(r, 250)); // children run inline in every parent
			const before = await Promise.all(parents.map(async (id) => (await json(`${bench.url}/ours/status/${id}`)).status as string));
			await bench.crash();
			expect(before.filter((status) => status === 'running').length).toBeGreaterThan(0); // the crash hit children in flight
			bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], persistTo: dir, vars });
			const url = bench.url;
			for (const id of parents) {
				const status = await until(`${id} completes`, async () => {
					const body = await json(`${url}/ours/status/${id}`);
					return body.status === 'completed' ? body : undefined;
				}, 60_000);
				expect(status.output).toBe(params.n * 3); // each child: 0 + 1 + 2
			}
			let retried = 0;
			for (const id of parents) {
				for (let i = 0; i < params.n; i++) {
					const child = `${id}::child-${i}`;
					const status = await until(`${child} is published`, async () => {
						const body = await json(`${url}/ours/status/${child}`);
						return body.status === 'completed' ? body : undefined;
					});
					expect(status).toMatchObject({ output: 3, parentId: id, stepCounts: { total: 3, completed: 3 } });
					const summary = (await json(`${url}/ours/steps-summary/${child}`)) as { total: number; retried: number };
					expect(summary.total).toBe(3);
					retried += summary.retried;
				}
			}
			// Only a step in flight at the moment of the crash ran twice: at most one per parent.
			expect(retried).toBeLessThanOrEqual(parents.length);
		} finally {
			await bench.stop();
			rmSync(dir, { recursive: true, force: true });
		}
	});
});

describe('a hard crash during a step longer than the watchdog interval', () => {
	it('resumes the instance after kill -9 at 12-14 s of a 20 s step: the watchdog stays armed for the whole step', async () => {
		const dir = mkdtempSync(join(tmpdir(), 'shardflow-crash-hold-'));
		let bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], persistTo: dir, vars: {} });
		try {
			const holdMs = 20_000;
			const res = await fetch(`${bench.url}/ours/create`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify({ type: 'hold', params: { holdMs } }),
			});
			const { id } = (await res.json()) as { id: string };
			// Past the first watchdog alarm (10 s), before the step ends.
			await new Promise((r) => setTimeout(r, 12_500));
			const before = (await (await fetch(`${bench.url}/ours/status/${id}`)).json()) as { status: string; steps: { status: string }[] };
			await bench.crash();
			expect(before.status).toBe('running');
			expect(before.steps[0]?.status).toBe('running');
			bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], persistTo: dir, vars: {} });
			const url = bench.url;
			const status = await until(
				'the step interrupted by the crash runs again and the instance completes',
				async () => {
					const body = (await (await fetch(`${url}/ours/status/${id}`)).json()) as {
						status: string;
						output: string;
						steps: { name: string; attempts: number }[];
					};
					return body.status === 'completed' ? body : undefined;
				},
				60_000,
			);
			expect(status.output).toBe(`held ${holdMs} ms`);
			expect(status.steps.find((s) => s.name === 'hold')?.attempts).toBe(2);
		} finally {
			await bench.stop();
			rmSync(dir, { recursive: true, force: true });
		}
	}, 180_000);
});

describe('a hard crash during a pass its alarm woke (the compact layout\'s format 2: no watchdog of its own on the alarm\'s first try)', () => {
	it('resumes the instance after kill -9 mid-step of the woken pass: the runtime runs the alarm again', async () => {
		const dir = mkdtempSync(join(tmpdir(), 'shardflow-crash-woken-'));
		const vars = { SHARDFLOW_STORAGE_LAYOUT: 'compact', SHARDFLOW_COMPACT_FORMAT: '2' };
		let bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], persistTo: dir, vars });
		try {
			const holdMs = 20_000;
			const res = await fetch(`${bench.url}/ours/create`, {
				method: 'POST',
				headers: { 'content-type': 'application/json' },
				body: JSON.stringify({ type: 'hold', params: { holdMs, napMs: 1_000 } }),
			});
			const { id } = (await res.json()) as { id: string };
			// The nap ends at 1 s; its alarm's pass holds the step. Killed in the pass's first second, before a delivery of its
			// `running` would arm an alarm of its own: only the runtime's retry of the alarm brings it back.
			const woken = await until('the woken pass to start the held step', async () => {
				const body = (await (await fetch(`${bench.url}/ours/status/${id}`)).json()) as { status: string; steps: { name: string; status: string; startedAt: number }[] };
				return body.steps.find((s) => s.name === 'hold')?.status === 'running' ? body : undefined;
			}, 10_000, 20);
			await bench.crash();
			const killedAfterMs = Date.now() - woken.steps.find((s) => s.name === 'hold')!.startedAt;
			expect(woken.status).not.toBe('completed');
			bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], persistTo: dir, vars });
			const url = bench.url;
			const status = await until(
				'the step interrupted by the crash runs again and the instance completes',
				async () => {
					const body = (await (await fetch(`${url}/ours/status/${id}`)).json()) as { status: string; output: string; steps: { name: string; attempts: number }[] };
					return body.status === 'completed' ? body : undefined;
				},
				90_000,
			);
			expect(status.output).toBe(`held ${holdMs} ms`);
			expect(status.steps.find((s) => s.name === 'hold')?.attempts).toBe(2);
			console.log(`killed ${killedAfterMs} ms into the woken pass's step`);
		} finally {
			await bench.stop();
			rmSync(dir, { recursive: true, force: true });
		}
	}, 180_000);
});

/** The bench's `hold` run as its status shows it (bench/workflows.ts HoldWorkflow), read from the bench Worker at `url`. */
type HeldStatus = { status: string; output: string; steps: { name: string; status: string; attempts: number }[] };
const status = async (url: string, id: string) => (await (await fetch(`${url}/ours/status/${id}`)).json()) as HeldStatus;
/** Resolves once attempt `attempt` of the `hold` step is running (its start stored), polled every 20 ms. */
const attemptRunning = (url: string, id: string, attempt: number) =>
	until(`attempt ${attempt} of the held step to start`, async () => {
		const hold = (await status(url, id)).steps.find((s) => s.name === 'hold');
		return hold?.status === 'running' && hold.attempts === attempt ? true : undefined;
	}, 30_000, 20);

describe('two hard crashes in a row during a retried step\'s attempts (storage format 5, a new project\'s)', () => {
	// Killed 1.5 s into each attempt: past RUNNING_SHOWN_WITHIN_MS (1 s), the woken pass's `running` is stored. Killed
	// 0.2 s in: storage still holds `sleeping` and the retry's wake-up, due; the attempt's start alone tells the cut.
	it.each([
		{ killAfterMs: 1_500, when: 'once the woken pass\'s `running` is stored' },
		{ killAfterMs: 200, when: 'within the woken pass\'s first moments, its `running` held in memory' },
	])('finishes the run after kill -9 during attempt 2 and again during attempt 3, $when: the next attempt starts when the cut-pass backoff ends', async ({ killAfterMs }) => {
		const dir = mkdtempSync(join(tmpdir(), 'shardflow-crash-retry-'));
		const vars = { SHARDFLOW_STORAGE_FORMAT: '5' };
		let bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], persistTo: dir, vars });
		try {
			// Attempt 1 fails at once (a retry 0.5 s on, run by the alarm); every later attempt holds 5 s.
			const holdMs = 5_000;
			const res = await fetch(`${bench.url}/ours/create`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'hold', params: { holdMs, failFirst: true } }) });
			const { id } = (await res.json()) as { id: string };
			const intoTheAttempt = () => new Promise((r) => setTimeout(r, killAfterMs));
			await attemptRunning(bench.url, id, 2);
			await intoTheAttempt();
			await bench.crash();
			bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], persistTo: dir, vars });
			// The runtime runs the alarm again: attempt 3 starts at once (one cut pass), and is killed too.
			await attemptRunning(bench.url, id, 3);
			const third = Date.now();
			await intoTheAttempt();
			await bench.crash();
			bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], persistTo: dir, vars });
			const url = bench.url;
			// Two cut passes in a row: the next attempt waits out the backoff (10 s from the first cut, which started attempt 3),
			// then holds 5 s. Before the fixes the alarm was left at the retry's wake-up, already past (the run stayed
			// `running` for good), or, killed early, attempt 4 started as soon as the runtime was back.
			await attemptRunning(url, id, 4);
			expect(Date.now() - third).toBeGreaterThanOrEqual(9_000);
			const done = await until('the run completes after the backoff', async () => {
				const body = await status(url, id);
				return body.status === 'completed' ? body : undefined;
			}, 60_000);
			expect(done.output).toBe(`held ${holdMs} ms`);
			expect(done.steps.find((s) => s.name === 'hold')?.attempts).toBe(4);
		} finally {
			await bench.stop();
			rmSync(dir, { recursive: true, force: true });
		}
	}, 180_000);
});

describe('two hard crashes in a row in the first moments of the step after a sleep (storage format 5, a new project\'s)', () => {
	it('keeps the run\'s alarm through the cut-pass backoff although nothing else is due, and finishes the run', async () => {
		const dir = mkdtempSync(join(tmpdir(), 'shardflow-crash-nap-'));
		const vars = { SHARDFLOW_STORAGE_FORMAT: '5' };
		let bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], persistTo: dir, vars });
		try {
			// A 12 s nap (past the index delivery's deadline: its `sleeping` entry is delivered, nothing of it stays due),
			// then a step holding 5 s, killed 0.2 s into each attempt: storage still holds `sleeping`, its wake-up taken.
			const holdMs = 5_000;
			const res = await fetch(`${bench.url}/ours/create`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'hold', params: { holdMs, napMs: 12_000 } }) });
			const { id } = (await res.json()) as { id: string };
			const intoTheAttempt = () => new Promise((r) => setTimeout(r, 200));
			await attemptRunning(bench.url, id, 1);
			await intoTheAttempt();
			await bench.crash();
			bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], persistTo: dir, vars });
			await attemptRunning(bench.url, id, 2); // one cut: straight back to work
			const second = Date.now();
			await intoTheAttempt();
			await bench.crash();
			bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], persistTo: dir, vars });
			const url = bench.url;
			// Two cuts in a row: the alarm the backoff set is all that is left to run the step again. Before the fix the
			// alarm handler's re-arm deleted it (nothing else due) and the run stayed `sleeping` for good.
			await attemptRunning(url, id, 3);
			expect(Date.now() - second).toBeGreaterThanOrEqual(9_000);
			const done = await until('the run completes after the backoff', async () => {
				const body = await status(url, id);
				return body.status === 'completed' ? body : undefined;
			}, 60_000);
			expect(done.output).toBe(`held ${holdMs} ms`);
		} finally {
			await bench.stop();
			rmSync(dir, { recursive: true, force: true });
		}
	}, 180_000);
});

describe('a hard crash in the middle of deletions', () => {
	it('loses nothing: after kill -9 during DELETE ?archive=true, every instance is live or archived, the index lists none of the deleted, and every id can be created again', async () => {
		const dir = mkdtempSync(join(tmpdir(), 'shardflow-crash-delete-'));
		let dev = await startDevServer({ configs: ['wrangler.archive.jsonc'], persistTo: dir });
		try {
			const post = (path: string, body: unknown) =>
				fetch(`${dev.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
			const ids = Array.from({ length: 24 }, (_, i) => `crash-del-${i}`);
			for (const id of ids) expect((await post('/workflows', { type: 'test', id, payload: { name: id } })).status).toBe(201);
			for (const id of ids) {
				await until(`${id} completes`, async () => {
					const body = (await (await fetch(`${dev.url}/workflows/${id}`)).json()) as { status: string };
					return body.status === 'completed' ? true : undefined;
				});
			}
			// Deletions in flight; the process dies as soon as the first one has answered.
			const inFlight = ids.map((id) => fetch(`${dev.url}/workflows/${id}?archive=true`, { method: 'DELETE' }).then((r) => r.status, () => 0));
			await Promise.race(inFlight);
			await dev.crash();
			const answered = await Promise.all(inFlight);
			dev = await startDevServer({ configs: ['wrangler.archive.jsonc'], persistTo: dir });
			const { url } = dev;

			// Every instance is either still live (its delete never became durable) or deleted with its archive.
			const live: string[] = [];
			for (const id of ids) {
				const body = (await (await fetch(`${url}/workflows/${id}`)).json()) as { status?: string; archived?: boolean; output?: unknown };
				if (body.archived) expect(body).toMatchObject({ status: 'completed', output: { greeting: `Hello, ${id}!` } });
				else if (body.status === 'completed') live.push(id);
				else {
					// Deleted but not archived yet: the alarm finishes the archive and the deletion.
					const archived = await until(`${id} is archived`, async () => {
						const again = (await (await fetch(`${url}/workflows/${id}`)).json()) as { archived?: boolean };
						return again.archived ? again : undefined;
					});
					expect(archived).toMatchObject({ status: 'completed', output: { greeting: `Hello, ${id}!` } });
				}
			}
			for (const [i, id] of ids.entries()) if (answered[i] === 200) expect(live).not.toContain(id); // an answered delete is durable
			if (process.env.SHARDFLOW_CRASH_REPORT) console.log({ answered: answered.filter((s) => s === 200).length, live: live.length, of: ids.length });
			for (const id of live) expect((await fetch(`${url}/workflows/${id}?archive=true`, { method: 'DELETE' })).status).toBe(200);

			await until('the index lists none of the deleted instances', async () => {
				const body = (await (await fetch(`${url}/workflows?type=test&limit=1000`)).json()) as { items: { id: string }[] };
				return body.items.some((i) => ids.includes(i.id)) ? undefined : true;
			});
			// The storage of each is freed (a create is refused while a deletion is unfinished).
			for (const id of ids) {
				await until(`${id} can be created again`, async () => {
					const res = await fetch(`${url}/workflows`, {
						method: 'POST',
						headers: { 'content-type': 'application/json' },
						body: JSON.stringify({ type: 'test', id, payload: { name: 'again' } }),
					});
					return res.status === 201 ? true : undefined;
				});
			}
		} finally {
			await dev.stop();
			rmSync(dir, { recursive: true, force: true });
		}
	}, 180_000);
});

describe('a hard crash under schedules and concurrency keys', () => {
	it('keeps the queue and the schedule: after kill -9 and a restart the waiter starts when the holder ends, and the schedule runs the latest missed tick once', async () => {
		const dir = mkdtempSync(join(tmpdir(), 'shardflow-crash-flow-'));
		const configs = ['test/fixtures/flow-control/wrangler.jsonc'];
		let dev = await startDevServer({ configs, persistTo: dir });
		const post = (path: string, body?: unknown) =>
			fetch(`${dev.url}${path}`, { method: 'POST', ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) });
		const get = async (path: string) => (await fetch(`${dev.url}${path}`)).json() as Promise<any>;
		try {
			expect((await post('/workflows', { type: 'one-at-a-time', id: 'holder', payload: {} })).status).toBe(201);
			await until('the holder to run', async () => ((await get('/workflows/holder')).status === 'waiting' ? true : undefined));
			expect((await post('/workflows', { type: 'one-at-a-time', id: 'waiter', payload: {} })).status).toBe(201);
			await until('the schedule to start instances', async () => ((await get('/schedules')).schedules[0].lastRuns.length >= 2 ? true : undefined));
			expect((await get('/workflows/waiter')).status).toBe('queued');

			await dev.crash();
			await new Promise((r) => setTimeout(r, 3000)); // ticks pass while nothing runs
			dev = await startDevServer({ configs, persistTo: dir });

			expect((await get('/workflows/waiter')).status).toBe('queued');
			expect((await post('/workflows/holder/events/finish', {})).status).toBe(202);
			await until('the waiter to start once the holder completed', async () => ((await get('/workflows/waiter')).status === 'waiting' ? true : undefined));
			expect((await get('/workflows/holder')).status).toBe('completed');

			const runs = await until('a run that stood in for the ticks missed while down', async () => {
				const { lastRuns } = (await get('/schedules')).schedules[0];
				return lastRuns.some((r: { missed: number }) => r.missed >= 1) ? (lastRuns as { tick: number; instanceId: string }[]) : undefined;
			});
			const ticks = runs.map((r) => r.tick);
			expect(new Set(ticks).size).toBe(ticks.length);
			expect((await get(`/workflows/${runs[0]!.instanceId}`)).status).toMatch(/running|completed|created/);
		} finally {
			await dev.stop();
			rmSync(dir, { recursive: true, force: true });
		}
	}, 180_000);
});
