import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startDevServer } from '../../bench/lib/dev-server.mjs';
import { until } from './until.js';

const persistTo = mkdtempSync(join(tmpdir(), 'shardflow-bulk-crash-'));
type Server = Awaited<ReturnType<typeof startDevServer>>;
let server: Server | undefined;
// Stopping wrangler on a loaded machine can take more than the default 10 s.
afterAll(async () => {
	await server?.stop();
	rmSync(persistTo, { recursive: true, force: true });
}, 60_000);

const json = async (res: Response) => {
	const text = await res.text();
	if (!res.ok) throw new Error(`${res.status}: ${text.slice(0, 300)}`);
	return JSON.parse(text);
};
const post = (url: string, path: string, body?: unknown) =>
	fetch(`${url}${path}`, { method: 'POST', headers: body === undefined ? {} : { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

describe('a bulk operation and hard crashes of the local runtime', () => {
	it('terminates each of 2,000 waiting instances over 4 shards and 120 that sleep in a loop exactly once through two kill -9, and reports every one done', async () => {
		server = await startDevServer({ persistTo });
		const customer = `kill9-${Date.now().toString(36)}`;
		const ids = Array.from({ length: 2000 }, (_, i) => `${customer}-${String(i).padStart(4, '0')}`);
		// 2,000 payments of one customer (waiting for approval), and 50 of another the job must leave alone.
		const bystanders = Array.from({ length: 50 }, (_, i) => `${customer}-other-${i}`);
		const items = [
			...ids.map((id) => ({ type: 'payment', id, payload: { amount: 10, currency: 'EUR' }, attributes: { customerId: customer } })),
			...bystanders.map((id) => ({ type: 'payment', id, payload: { amount: 10, currency: 'EUR' }, attributes: { customerId: `${customer}-x` } })),
		];
		for (let i = 0; i < items.length; i += 100) {
			const { items: outcomes } = await json(await post(server.url, '/workflows/batch', { items: items.slice(i, i + 100) }));
			expect(outcomes.every((o: { result: string }) => o.result === 'created')).toBe(true);
		}
		// 120 monitors that sleep in a loop (a beat every 2 s): their status and version move by themselves, all the
		// time, so a job resumed after a crash cannot tell its action's effect from their own (issue 45 item 1).
		const sleepers = Array.from({ length: 120 }, (_, i) => `${customer}-beat-${String(i).padStart(3, '0')}`);
		for (let i = 0; i < sleepers.length; i += 100) {
			const batch = sleepers.slice(i, i + 100).map((id) => ({ type: 'heartbeat', id, payload: { everySeconds: 2 }, attributes: { customerId: customer } }));
			const { items: outcomes } = await json(await post(server.url, '/workflows/batch', { items: batch }));
			expect(outcomes.every((o: { result: string }) => o.result === 'created')).toBe(true);
		}
		await until('the index lists all 2,000 waiting', async () => {
			const { groups } = await json(await fetch(`${server!.url}/types/payment/counts?by=attr.customerId&status=waiting&attr.customerId=${customer}`));
			return groups[0]?.count === 2000 ? true : undefined;
		}, 120_000, 500);
		await until('the index lists the 120 monitors', async () => {
			const { groups } = await json(await fetch(`${server!.url}/types/heartbeat/counts?by=attr.customerId&attr.customerId=${customer}`));
			return groups[0]?.count === 120 ? true : undefined;
		}, 120_000, 500);

		const job = await json(await post(server.url, '/workflows/bulk', { query: { type: 'payment', status: ['waiting'], attributes: { customerId: customer } }, action: { kind: 'terminate' }, ratePerSecond: 200 }));
		// At 40 a second: its walk takes some seconds, and the first kill comes in the middle of it.
		const beats = await json(await post(server.url, '/workflows/bulk', { query: { type: 'heartbeat', status: ['running', 'sleeping'], attributes: { customerId: customer } }, action: { kind: 'terminate' }, ratePerSecond: 40 }));
		const progressOf = async (id = job.id) => json(await fetch(`${server!.url}/bulk/${id}`));
		for (let kill = 0; kill < 2; kill++) {
			// Let it get some hundreds in, then kill wrangler and workerd at once and start again on the same storage.
			await until(`the job is past ${400 * (kill + 1)} instances`, async () => ((await progressOf()).done >= 400 * (kill + 1) ? true : undefined), 120_000, 200);
			await server.crash();
			server = await startDevServer({ persistTo });
		}
		const progress = await until('the job completes', async () => {
			const p = await progressOf();
			return p.state === 'completed' ? p : undefined;
		}, 240_000, 500);
		expect(progress).toMatchObject({ matched: 2000, done: 2000, failed: 0, skipped: {} });
		const beatProgress = await until('the monitors\' job completes', async () => {
			const p = await progressOf(beats.id);
			return p.state === 'completed' ? p : undefined;
		}, 240_000, 500);
		expect(beatProgress).toMatchObject({ matched: 120, done: 120, failed: 0, skipped: {} });

		// Exactly once: every matching instance has one workflow.terminated record; the bystanders none.
		const terminations = async (id: string) => {
			const { events } = await json(await fetch(`${server!.url}/workflows/${id}/history?limit=100`));
			return events.filter((e: { kind: string }) => e.kind === 'workflow.terminated').length;
		};
		const counts: number[] = [];
		for (let i = 0; i < ids.length; i += 25) counts.push(...(await Promise.all(ids.slice(i, i + 25).map(terminations))));
		expect(counts.filter((n) => n !== 1)).toEqual([]);
		for (const id of bystanders.slice(0, 10)) expect(await terminations(id)).toBe(0);
		// Every monitor the job counted done is terminated (none still sleeping), by exactly one action.
		const statuses: string[] = [];
		for (let i = 0; i < sleepers.length; i += 25) statuses.push(...(await Promise.all(sleepers.slice(i, i + 25).map(async (id) => (await json(await fetch(`${server!.url}/workflows/${id}`))).status))));
		expect(sleepers.filter((_, i) => statuses[i] !== 'terminated')).toEqual([]);
		// A monitor's history is long (a beat every 2 s): read all of it, page by page.
		const allTerminations = async (id: string) => {
			let n = 0;
			for (let after: string | null = null; ; ) {
				const page: { events: { kind: string }[]; nextCursor: string | null } = await json(await fetch(`${server!.url}/workflows/${id}/history?limit=1000${after ? `&after=${after}` : ''}`));
				n += page.events.filter((e) => e.kind === 'workflow.terminated').length;
				if (!page.nextCursor) return n;
				after = page.nextCursor;
			}
		};
		const beatCounts: number[] = [];
		for (let i = 0; i < sleepers.length; i += 25) beatCounts.push(...(await Promise.all(sleepers.slice(i, i + 25).map(allTerminations))));
		expect(sleepers.filter((_, i) => beatCounts[i] !== 1)).toEqual([]);
	}, 600_000);
});
