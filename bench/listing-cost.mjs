#!/usr/bin/env node
// What the index shard's reads by updated_at cost with no index on it (drizzle/0023; docs/decisions.md "One listing
// index per shard"): one shard seeded with N entries by direct SQL (bench/worker.ts capacitySeed: statuses cycle
// completed x3, waiting, running, errored; created an hour ago, one a millisecond, so nothing is due for retention),
// then each read: the median wall time of 5 calls from here (after one not counted) less that of a call that reads
// nothing (the clock inside an object does not move while it computes), and the rows one read, from the shard's meter.
//
//   node_modules/.bin/node bench/listing-cost.mjs [--entries 100000] [--port 8931]
import { parseArgs } from 'node:util';
import { startDevServer } from './lib/dev-server.mjs';
import { jsonClient } from './lib/json-client.mjs';

const { values } = parseArgs({ options: { entries: { type: 'string', default: '100000' }, port: { type: 'string' } }, strict: true });
const entries = Number(values.entries);
process.env.X_LOCAL_OBSERVABILITY = 'false';
const server = await startDevServer({ configs: ['bench/wrangler.jsonc'], vars: {}, ...(values.port ? { port: Number(values.port) } : {}) });
const { post } = jsonClient(server.url);
const BASE = Date.now() - 3_600_000 - entries;
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
/** The median ms of 5 calls (after one not counted), and the last answer. */
const timed = async (request) => {
	await post('/capacity/read-cost', request);
	const times = [];
	let last;
	for (let i = 0; i < 5; i++) {
		const t0 = performance.now();
		last = await post('/capacity/read-cost', request);
		times.push(performance.now() - t0);
	}
	return { ms: median(times), ...last };
};
try {
	for (let from = 0; from < entries; from += 50_000) await post('/capacity/seed', { type: 'cap-writes', shard: 0, prefix: 'LC-', from, count: Math.min(50_000, entries - from), base: BASE });
	// One delivery through the write path: the shard's first metrics mark, so it has a rollup watermark (a restarted
	// object's first metrics read scans for the marks left before it started).
	await post('/capacity/writes', { count: 1, path: 'current', tag: 'lc' });
	const rows = [];
	// The first metrics read of the object's life scans for marks (its clock frozen too: timed from here, once).
	const t0 = performance.now();
	const scan = await post('/capacity/read-cost', { op: 'metrics' });
	const scanMs = performance.now() - t0;
	const noop = (await timed({ op: 'noop' })).ms;
	rows.push(`| metrics read, first after the object starts (the rollup's scan for marks) | ${(scanMs - noop).toFixed(1)} (once) | ${scan.rowsRead.toLocaleString('en')} | ${scan.answer} |`);
	const once = async (label, request) => {
		const t1 = performance.now();
		const r = await post('/capacity/read-cost', request);
		rows.push(`| ${label} | ${(performance.now() - t1 - noop).toFixed(1)} (once) | ${r.rowsRead.toLocaleString('en')} | ${r.answer} |`);
	};
	await once("list updatedAt, status=completed, limit 50: the first of the object's life (one scan learns each status's longest age)", { op: 'list', query: { order: 'updatedAt', limit: 50, status: ['completed'] } });
	const measure = async (label, request) => {
		console.error(`measuring: ${label}`);
		const r = await timed(request);
		rows.push(`| ${label} | ${Math.max(0, r.ms - noop).toFixed(1)} | ${r.rowsRead.toLocaleString('en')} | ${r.answer} |`);
	};
	await measure('metrics read, steady (the marked entries by id)', { op: 'metrics' });
	await measure('list createdAt (default), every live status, limit 50', { op: 'list', query: { order: 'createdAt', limit: 50 } });
	await measure('list createdAt, status=completed, limit 50', { op: 'list', query: { order: 'createdAt', limit: 50, status: ['completed'] } });
	await measure('list updatedAt, every live status, limit 50, first page', { op: 'list', query: { order: 'updatedAt', limit: 50 } });
	await measure('list updatedAt, status=completed, limit 50, first page', { op: 'list', query: { order: 'updatedAt', limit: 50, status: ['completed'] } });
	await measure('list updatedAt, status=completed, limit 50, a page in the middle', { op: 'list', query: { order: 'updatedAt', limit: 50, status: ['completed'], after: { at: BASE + entries / 2, id: 'LC-' } } });
	await measure('list updatedAt, status=completed, limit 50, a page near the end', { op: 'list', query: { order: 'updatedAt', limit: 50, status: ['completed'], after: { at: BASE + entries / 100, id: 'LC-' } } });
	await measure('stuck check: status=running, updatedBefore the oldest 10%, limit 1000', { op: 'list', query: { order: 'updatedAt', limit: 1000, status: ['running'], updatedBefore: BASE + entries / 10 } });
	await measure('retention: oldest updated_at of completed', { op: 'oldestUpdated' });
	await measure('retention: completed due by the oldest 1% (limit 100)', { op: 'updatedBy', query: { order: 'createdAt', limit: 100, updatedBefore: BASE + entries / 100 } });
	// One run that stood a week: a page in updatedAt order can no longer stop early (docs/decisions.md "One listing index per shard").
	await post('/capacity/read-cost', { op: 'writeLong' });
	await measure('with one completed run that stood 7 days: list updatedAt, status=completed, limit 50, first page', { op: 'list', query: { order: 'updatedAt', limit: 50, status: ['completed'] } });
	await measure('with it: list updatedAt, every live status, limit 50, first page', { op: 'list', query: { order: 'updatedAt', limit: 50 } });
	await measure('with it: list updatedAt, status=completed, limit 50, a page in the middle', { op: 'list', query: { order: 'updatedAt', limit: 50, status: ['completed'], after: { at: BASE + entries / 2, id: 'LC-' } } });
	console.log(`\n${entries.toLocaleString('en')} entries on one shard (${new Date().toISOString()}):\n`);
	console.log(`| read | ms (median of 5, less a call reading nothing: ${noop.toFixed(1)} ms) | rows read | answer |\n|---|---|---|---|`);
	for (const row of rows) console.log(row);
} catch (error) {
	console.error(server.output().slice(-3000));
	throw error;
} finally {
	await server.stop();
}
