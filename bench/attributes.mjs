#!/usr/bin/env node
// `node bench/attributes.mjs [--entries N] [--collector on|off]`: only the search-attribute figures of
// `npm run bench` (list latency per query shape on one shard holding N entries, default 100,000, each
// with three attributes), against the status listing measured in the same run, without the rest of the bench.
import { parseArgs } from 'node:util';
import { startDevServer } from './lib/dev-server.mjs';
import { jsonClient } from './lib/json-client.mjs';

const { values } = parseArgs({ options: { entries: { type: 'string', default: '100000' }, collector: { type: 'string', default: 'off' } } });
process.env.X_LOCAL_OBSERVABILITY = values.collector === 'on' ? 'true' : 'false';
const total = Number(values.entries);
const server = await startDevServer({ configs: ['bench/wrangler.jsonc'], vars: {} });
const { call } = jsonClient(server.url);
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
try {
	const t0 = performance.now();
	for (let offset = 0; offset < total; offset += 10_000) await call('POST', '/index/seed', { type: 'ix1', count: Math.min(10_000, total - offset), offset });
	console.log(`seeded ${total} entries with attributes into one shard in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
	const time = async (path) => {
		const times = [];
		await call('GET', path);
		for (let i = 0; i < 15; i++) {
			const s = performance.now();
			await call('GET', path);
			times.push(performance.now() - s);
		}
		return median(times);
	};
	const rows = [];
	for (let rep = 0; rep < 3; rep++) {
		for (const shape of ['status', 'customer', 'customer+status', 'vip+status', 'in-list', 'range-by-amount', 'range-by-created', 'order-by-amount']) {
			rows.push({ shape, ms: await time(`/index/list-attr/${shape}`) });
		}
		rows.push({ shape: 'count-by-vip', ms: await time('/index/count-attr') });
	}
	const byShape = new Map();
	for (const { shape, ms } of rows) byShape.set(shape, [...(byShape.get(shape) ?? []), ms]);
	const baseline = median(byShape.get('status'));
	console.log(`| shape (limit 50, ${total} entries in 1 shard, collector ${values.collector}) | p50 ms (median of 3 runs) | vs status=waiting |`);
	console.log('|---|---|---|');
	for (const [shape, v] of byShape) console.log(`| ${shape} | ${median(v).toFixed(2)} | ${(median(v) / baseline).toFixed(2)}x |`);
} finally {
	await server.stop();
}
