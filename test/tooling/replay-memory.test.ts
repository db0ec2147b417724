import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startDevServer } from '../../bench/lib/dev-server.mjs';
import { until } from './until.js';

// An isolate has 128 MB in production, shared by every object in it; workerd
// has no such limit, so the cost is measured from outside as the growth of the
// Worker's peak resident memory (VmHWM) while an instance with ~90 MiB of
// history replays after a restart (docs/deploying.md "Production limits").
const persistTo = mkdtempSync(join(tmpdir(), 'shardflow-replay-memory-'));
type Server = Awaited<ReturnType<typeof startDevServer>>;
let server: Server | undefined;
afterAll(async () => {
	await server?.stop();
	rmSync(persistTo, { recursive: true, force: true });
});

// SHARDFLOW_STORAGE_LAYOUT=compact npx vitest ...: the same replay of a compact instance (the bench Worker's default is the table layout).
const start = () => startDevServer({ configs: ['bench/wrangler.jsonc'], vars: process.env.SHARDFLOW_STORAGE_LAYOUT ? { SHARDFLOW_STORAGE_LAYOUT: process.env.SHARDFLOW_STORAGE_LAYOUT } : {}, persistTo });

/** The instance's status from the index (a status read itself carries up to 4 MiB of step results). */
async function listedStatus(s: Server, id: string): Promise<string | undefined> {
	const page = (await (await fetch(`${s.url}/ours/list/big-history`)).json()) as { items: { id: string; status: string }[] };
	return page.items.find((item) => item.id === id)?.status;
}


describe('replay memory', () => {
	it('replays 900 step results of 100 KiB (~90 MiB of history) after a restart growing the Worker by less than 64 MiB', async () => {
		server = await start();
		const created = await fetch(`${server.url}/ours/create`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			// The sleep outlasts the index's delivery deadline (10 s, docs/operations.md "Consistency bound"):
			// a sleep that ends before it is never listed as sleeping, and the first run's end is read from the index.
			body: JSON.stringify({ type: 'big-history', params: { results: 900, bytes: 100 * 1024, sleepMs: 20_000 } }),
		});
		const { id } = (await created.json()) as { id: string };
		await until('the first run to sleep', async () => ((await listedStatus(server!, id)) === 'sleeping' ? true : undefined), 60_000, 150);
		await server.stop();

		server = await start();
		server.peakMemory.reset();
		const before = server.peakMemory.mib();
		await until('the replay to complete', async () => ((await listedStatus(server!, id)) === 'completed' ? true : undefined), 60_000, 150);
		const grew = server.peakMemory.mib() - before;
		const status = (await (await fetch(`${server.url}/ours/status/${id}`)).json()) as { status: string; output: number };
		expect(status).toMatchObject({ status: 'completed', output: 900 * 100 * 1024 });
		expect(grew, `the Worker grew by ${grew.toFixed(1)} MiB`).toBeLessThan(64);
	}, 180_000);
});
