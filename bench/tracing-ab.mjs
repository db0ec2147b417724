#!/usr/bin/env node
// `npm run bench:tracing`: what shardflow's tracing costs a run that is not traced, in workerd.
// Two `wrangler dev` of bench/wrangler.jsonc from this tree side by side, wrangler's local trace
// collector off (so no invocation is sampled, as in production for the runs head sampling leaves
// out): "tracer" lends the engine the Workers tracer (every pass, attempt and call asks whether
// its invocation is sampled, and starts nothing), "none" sets SHARDFLOW_TRACING=off (no tracer:
// the code paths without tracing). Every figure alternates the two sides (bench/lib/turns.mjs).
//
//   npm run bench:tracing [-- --reps 5] [--out FILE.md]
import { jsonClient } from './lib/json-client.mjs';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startDevServer } from './lib/dev-server.mjs';
import { inTurn } from './lib/turns.mjs';
import { median, timed } from './lib/stats.mjs';

const { values: options } = parseArgs({ options: { reps: { type: 'string', default: '5' }, out: { type: 'string' } }, strict: true });
const reps = Number(options.reps);
process.env.X_LOCAL_OBSERVABILITY = 'false';

const servers = {
	tracer: await startDevServer({ configs: ['bench/wrangler.jsonc'], vars: {} }),
	none: await startDevServer({ configs: ['bench/wrangler.jsonc'], vars: { SHARDFLOW_TRACING: 'off' } }),
};
const clients = Object.fromEntries(Object.entries(servers).map(([side, server]) => [side, jsonClient(server.url)]));
/** @param {'tracer' | 'none'} side */
const post = (side, path, body = {}) => clients[side].post(path, body);
const run = (steps) => ({ params: { steps } });

/** @type {{ name: string, unit: string, tracer: number[], none: number[] }[]} */
const rows = [];
async function measure(name, unit, fn) {
	const row = { name, unit, tracer: /** @type {number[]} */ ([]), none: /** @type {number[]} */ ([]) };
	for (let rep = 0; rep < reps; rep++) for (const side of inTurn(/** @type {const} */ (['tracer', 'none']), rep)) row[side].push(await fn(side));
	rows.push(row);
	console.error(`  ${name}: tracer ${median(row.tracer).toFixed(3)} none ${median(row.none).toFixed(3)}`);
}

try {
	const state = {};
	for (const side of /** @type {const} */ (['tracer', 'none'])) {
		state[side] = await (await fetch(`${servers[side].url}/tracing`)).json();
		await post(side, '/ours/run', run(2)); // warm
	}
	if (!state.tracer.tracer || state.none.tracer || state.tracer.sampled || state.none.sampled) throw new Error(`not the comparison meant: ${JSON.stringify(state)}`);
	console.error(`bench:tracing: ${JSON.stringify(state)}, ${reps} repetitions`);
	/** Milliseconds per step of a run of `steps` sequential steps, less a run of none (the create and its poll). */
	const marginal = async (side, steps) => {
		const diffs = [];
		for (let i = 0; i < 3; i++) {
			const empty = await timed(() => post(side, '/ours/run', run(0)));
			const full = await timed(() => post(side, '/ours/run', run(steps)));
			diffs.push((full.ms - empty.ms) / steps);
		}
		return Math.max(0, median(diffs));
	};
	for (const steps of [200, 2000]) await measure(`marginal ms per sequential step (${steps} steps)`, 'ms/step', (side) => marginal(side, steps));
	await measure('create latency p50 (100 sequential creates)', 'ms', async (side) => {
		const times = [];
		for (let i = 0; i < 100; i++) times.push((await timed(() => post(side, '/ours/create', run(0)))).ms);
		return median(times);
	});
	await measure('throughput, 100 instances x 10 steps', 'steps/s', async (side) => {
		const { ms } = await timed(() => Promise.all(Array.from({ length: 100 }, () => post(side, '/ours/run', run(10)))));
		return 1000 / (ms / 1000);
	});
	const fmt = (v) => (v >= 100 ? v.toFixed(0) : v.toFixed(3));
	const table = [
		`# Tracing A/B: an unsampled tracer against none (${new Date().toISOString()})`,
		'',
		`wrangler's local trace collector off (no invocation sampled); ${reps} repetitions, sides alternating; medians (min-max). Ratio: tracer / none.`,
		'',
		'| measurement | unit | tracer | none | tracer / none |',
		'|---|---|---|---|---|',
		...rows.map((r) => {
			const [t, n] = [median(r.tracer), median(r.none)];
			const spread = (v) => ` (${fmt(Math.min(...v))}-${fmt(Math.max(...v))})`;
			return `| ${r.name} | ${r.unit} | ${fmt(t)}${spread(r.tracer)} | ${fmt(n)}${spread(r.none)} | ${(t / n).toFixed(3)} |`;
		}),
		'',
	].join('\n');
	console.log(table);
	if (options.out) writeFileSync(options.out, table);
} finally {
	await servers.tracer.stop();
	await servers.none.stop();
}
