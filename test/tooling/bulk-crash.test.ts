import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startDevServer } from '../../bench/lib/dev-server.mjs';
import { until } from './until.js';

const persistTo = mkdtempSync(join(tmpdir(), 'shardflow-bulk-crash-'));
type Server = Awaited<ReturnType<typeof startDevServer>>;
let server: Server | undefined;
afterAll(async () => {
	await server?.stop();
	rmSync(persistTo, { recursive: true, force: true });
});

const json = async (res: Response) => {
	const text = await res.text();
	if (!res.ok) throw new Error(`${res.status}: ${text.slice(0, 300)}`);
	return JSON.parse(text);
};
const post = (url: string, path: string, body?: unknown) =>
	fetch(`${url}${path}`, { method: 'POST', headers: body === undefined ? {} : { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

describe('a bulk operation and hard crashes of the local runtime', () => {
	it('terminates each of 2,000 matching instances over 4 shards exactly once through two kill -9, and reports every one done', async () => {
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
		await until('the index lists all 2,000 waiting', async () => {
			const { groups } = await json(await fetch(`${server!.url}/types/payment/counts?by=attr.customerId&status=waiting&attr.customerId=${customer}`));
			return groups[0]?.count === 2000 ? true : undefined;
		}, 120_000, 500);

		const job = await json(await post(server.url, '/workflows/bulk', { query: { type: 'payment', status: ['waiting'], attributes: { customerId: customer } }, action: { kind: 'terminate' }, ratePerSecond: 200 }));
		const progressOf = async () => json(await fetch(`${server!.url}/bulk/${job.id}`));
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

		// Exactly once: every matching instance has one workflow.terminated record; the bystanders none.
		const terminations = async (id: string) => {
			const { events } = await json(await fetch(`${server!.url}/workflows/${id}/history?limit=100`));
			return events.filter((e: { kind: string }) => e.kind === 'workflow.terminated').length;
		};
		const counts: number[] = [];
		for (let i = 0; i < ids.length; i += 25) counts.push(...(await Promise.all(ids.slice(i, i + 25).map(terminations))));
		expect(counts.filter((n) => n !== 1)).toEqual([]);
		for (const id of bystanders.slice(0, 10)) expect(await terminations(id)).toBe(0);
	}, 600_000);
});
