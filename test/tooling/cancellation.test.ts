import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startDevServer } from '../../bench/lib/dev-server.mjs';
import { until } from './until.js';

type Server = Awaited<ReturnType<typeof startDevServer>>;
let bench: Server | undefined;
const upstream = createServer();
afterAll(async () => {
	await bench?.stop();
	upstream.close();
});

describe('terminate reaches a step in flight', () => {
	it('aborts a real fetch the step is waiting on: the upstream sees the request closed', async () => {
		// An upstream that never answers, and records when its caller goes away.
		const requests: { closed: boolean }[] = [];
		upstream.on('request', (req: IncomingMessage, res: ServerResponse) => {
			const seen = { closed: false };
			requests.push(seen);
			res.on('close', () => (seen.closed = true));
			req.resume();
		});
		await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
		const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/slow`;

		bench = await startDevServer({ configs: ['bench/wrangler.jsonc'], vars: {} });
		const res = await fetch(`${bench.url}/ours/create`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ type: 'fetch-hold', params: { url } }),
		});
		const { id } = (await res.json()) as { id: string };
		await until('the step is waiting on the upstream', async () => (requests.length > 0 ? true : undefined));
		expect(requests[0]!.closed).toBe(false);

		const terminated = await fetch(`${bench.url}/ours/terminate/${id}`, { method: 'POST' });
		expect(await terminated.json()).toEqual({ status: 'terminated' });
		await until('the upstream sees the fetch aborted', async () => (requests[0]!.closed ? true : undefined), 10_000);
		const status = (await (await fetch(`${bench.url}/ours/status/${id}`)).json()) as { status: string; steps: { name: string; status: string }[] };
		expect(status.status).toBe('terminated');
		expect(requests).toHaveLength(1); // no retry of the aborted attempt
	}, 120_000);
});
