#!/usr/bin/env node
// `npm run bench:ab -- --base <rev>`: this tree against another commit of it, in the same run.
// Both are served by their own `wrangler dev` of bench/wrangler.jsonc side by side, and every
// figure alternates head, base, head, base, ... so machine drift hits both alike; only one
// server is busy at a time. What each change bought (issue #27's "A/B against the starting
// commit") is the ratio in the last column.
//
//   npm run bench:ab -- --base <rev> [--reps 3] [--collector off|on] [--var KEY=VALUE ...] [--settle SECONDS] [--only PHASE ...] [--out FILE.md]
//
// `--var` sets a Worker variable on both sides (e.g. `--var SHARDFLOW_STORAGE_FORMAT=4 --var
// SHARDFLOW_STORAGE_LAYOUT=compact`: the storage a new project runs, on a base that knows only the
// older switch); without it both run the bench Worker's defaults (the table layout).
//
// `--only` runs only the phases named (create, marginal, throughput, child, event, burst, counted; repeatable): a
// question about one figure, the marginal step say, is answered with more repetitions in the same time.
//
// The base is checked out with `git archive` under bench/.ab/<rev> and the head copied to bench/.ab/head (both ignored
// by git), inside the repository so that their imports resolve to this tree's node_modules: a base whose dependencies
// differ from this tree's is not comparable this way (it fails at bundling, loudly).
import { jsonClient } from './lib/json-client.mjs';
import { baseSide, headCopy, reportTable, stopSides } from './lib/sides.mjs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startDevServer } from './lib/dev-server.mjs';
import { inTurn } from './lib/turns.mjs';
import { median, quantile, timed } from './lib/stats.mjs';

const root = resolve(import.meta.dirname, '..');
/** The phases of the A/B, in the order they run (`--only`). */
const PHASES = ['create', 'marginal', 'throughput', 'child', 'event', 'burst', 'counted'];
/** @type {{ base?: string, reps: string, collector: string, out?: string, var: string[], settle: string, only: string[] }} */
let options;
try {
	options = /** @type {any} */ (
		parseArgs({ options: { base: { type: 'string' }, reps: { type: 'string', default: '3' }, collector: { type: 'string', default: 'off' }, out: { type: 'string' }, var: { type: 'string', multiple: true, default: [] }, settle: { type: 'string', default: '0' }, only: { type: 'string', multiple: true, default: [] } }, strict: true, allowPositionals: false }).values
	);
	if (!options.base) throw new Error('--base <rev> is required');
	if (options.collector !== 'on' && options.collector !== 'off') throw new Error(`--collector takes "on" or "off", not ${JSON.stringify(options.collector)}`);
	for (const v of options.var) if (!/^[A-Z][A-Z0-9_]*=.*$/.test(v)) throw new Error(`--var takes KEY=VALUE, not ${JSON.stringify(v)}`);
	if (!/^\d+$/.test(options.settle) || Number(options.settle) > 120) throw new Error(`--settle takes whole seconds 0-120, not ${JSON.stringify(options.settle)}`);
	for (const phase of options.only) if (!PHASES.includes(phase)) throw new Error(`--only takes one of ${PHASES.join(', ')}, not ${JSON.stringify(phase)}`);
	if (!/^[1-9]\d*$/.test(options.reps)) throw new Error(`--reps takes a positive whole number, not ${JSON.stringify(options.reps)}`);
} catch (error) {
	console.error(`npm run bench:ab: ${error instanceof Error ? error.message : error}\nusage: npm run bench:ab -- --base <rev> [--reps N] [--collector off|on] [--var KEY=VALUE ...] [--settle SECONDS] [--only PHASE ...] [--out FILE.md]`);
	process.exit(2);
}
const reps = Number(options.reps);
/** @param {string} phase */
const runs = (phase) => options.only.length === 0 || options.only.includes(phase);
/**
 * Seconds to wait before each side's turn of a figure: a finished compact instance's backstop alarm fires
 * 10 s after its run (docs/cost.md "What the cuts cost in time"), so without a pause one phase's
 * leftover handlers land in the next one's window. 11 or more removes that noise.
 */
const settleMs = Number(options.settle) * 1000;
/** Worker variables both sides run with (`--var KEY=VALUE`). */
const vars = Object.fromEntries(options.var.map((v) => [v.slice(0, v.indexOf('=')), v.slice(v.indexOf('=') + 1)]));
process.env.X_LOCAL_OBSERVABILITY = options.collector === 'on' ? 'true' : 'false';

const { baseRev, headRev, baseDir, remove: removeBase } = baseSide(root, options.base);
const head = headCopy(root, 'head');

const servers = {
	head: await startDevServer({ configs: ['bench/wrangler.jsonc'], vars, cwd: head.dir }),
	base: await startDevServer({ configs: ['bench/wrangler.jsonc'], vars, cwd: baseDir }),
};
const clients = Object.fromEntries(Object.entries(servers).map(([side, server]) => [side, jsonClient(server.url)]));
/** @param {'head' | 'base'} side */
const post = (side, path, body = {}) => clients[side].post(path, body);
const run = (steps) => ({ params: { steps } });

/** @type {{ name: string, unit: string, better: 'lower' | 'higher', head: number[], base: number[] }[]} */
const rows = [];
/** One figure, `reps` times per side, which side goes first alternating every repetition (bench/lib/turns.mjs). */
async function measure(name, unit, better, fn) {
	const row = { name, unit, better, head: /** @type {number[]} */ ([]), base: /** @type {number[]} */ ([]) };
	for (let rep = 0; rep < reps; rep++) {
		for (const side of inTurn(/** @type {const} */ (['head', 'base']), rep)) {
			if (settleMs > 0) await new Promise((done) => setTimeout(done, settleMs));
			row[side].push(await fn(side));
		}
	}
	rows.push(row);
	console.error(`  ${name}: head ${median(row.head).toFixed(3)} base ${median(row.base).toFixed(3)}`);
}

try {
	console.error(`bench:ab: head ${headRev} vs base ${baseRev}, collector ${options.collector}, ${reps} repetitions`);
	for (const side of /** @type {const} */ (['head', 'base'])) {
		await post(side, '/ours/run', run(2));
		await post(side, '/ours/child-round-trip', { how: 'invoke' });
	}
	if (runs('create')) {
		/** @type {Record<'head' | 'base', number[]>} */
		const creates = { head: [], base: [] };
		await measure('create latency p50 (200 sequential creates)', 'ms', 'lower', async (side) => {
			const times = [];
			for (let i = 0; i < 200; i++) times.push((await timed(() => post(side, '/ours/create', run(0)))).ms);
			creates[side].push(...times);
			return median(times);
		});
		rows.push({ name: 'create latency p95 (all repetitions)', unit: 'ms', better: 'lower', head: [quantile(creates.head, 0.95)], base: [quantile(creates.base, 0.95)] });
	}
	if (runs('marginal')) {
		/** @param {'head' | 'base'} side @param {string} path @param {number} steps */
		const marginal = async (side, path, steps) => {
			const diffs = [];
			for (let i = 0; i < 5; i++) {
				const empty = await timed(() => post(side, path, run(0)));
				const full = await timed(() => post(side, path, run(steps)));
				diffs.push((full.ms - empty.ms) / steps);
			}
			return Math.max(0, median(diffs));
		};
		for (const steps of [200, 2000]) {
			// The floor (one INSERT OR REPLACE per step) on each side's server, alternated with the engine's: each side's ratio to it.
			const floor = { head: /** @type {number[]} */ ([]), base: /** @type {number[]} */ ([]) };
			await measure(`marginal ms per sequential step (${steps} steps)`, 'ms/step', 'lower', async (side) => {
				const ours = await marginal(side, '/ours/run', steps);
				floor[side].push(await marginal(side, '/floor/run', steps));
				return ours;
			});
			rows.push({ name: `marginal ms per step of the floor, one INSERT OR REPLACE (${steps} steps, the same runs)`, unit: 'ms/step', better: 'lower', ...floor });
			const times = /** @type {(typeof rows)[number]} */ (rows.at(-2));
			rows.push({ name: `marginal step cost as a multiple of the floor (${steps} steps; medians)`, unit: 'x floor', better: 'lower', head: [median(times.head) / median(floor.head)], base: [median(times.base) / median(floor.base)] });
		}
	}
	if (runs('throughput')) {
		await measure('throughput, 100 instances x 10 steps', 'steps/s', 'higher', async (side) => {
			const { ms } = await timed(() => Promise.all(Array.from({ length: 100 }, () => post(side, '/ours/run', run(10)))));
			return 1000 / (ms / 1000);
		});
	}
	if (runs('child')) {
		// One set of trips gives both: in the parent (child started -> result held; NaN on a base older than that figure) and end to end.
		const inParent = { head: /** @type {number[]} */ ([]), base: /** @type {number[]} */ ([]) };
		await measure('child round trip p50 through step.invoke, end to end (20 trips)', 'ms', 'lower', async (side) => {
			const times = [];
			const held = [];
			for (let i = 0; i < 20; i++) {
				const { ms, value } = await timed(() => post(side, '/ours/child-round-trip', { how: 'invoke' }));
				times.push(ms);
				held.push(typeof value.inParentMs === 'number' ? value.inParentMs : NaN);
			}
			inParent[side].push(median(held));
			return median(times);
		});
		rows.push({ name: 'child round trip p50 through step.invoke, in the parent (child started -> result held; the same trips)', unit: 'ms', better: 'lower', ...inParent });
	}
	if (runs('event')) {
		await measure('event round trip p50 (20 events)', 'ms', 'lower', async (side) => {
			const times = [];
			for (let i = 0; i < 20; i++) {
				const { id } = await post(side, '/ours/prepare-wait');
				times.push((await timed(() => post(side, '/ours/event', { id }))).ms);
			}
			return median(times);
		});
	}
	if (runs('burst')) {
		// A burst (bench/run.mjs g3): the slowest of unrelated status reads, one every 25 ms, while a run starts 5,000 parallel fetch
		// steps, from its create to its end. A base without the "burst" type answers NaN.
		await measure('max latency of an unrelated GET /workflows/:id while a run starts 5000 parallel fetch steps', 'ms', 'lower', async (side) => {
			const { id: probeId } = await post(side, '/ours/run', run(1));
			const started = performance.now();
			let finished = false;
			const done = post(side, '/ours/create', { type: 'burst', params: { n: 5000 } })
				.then(({ id }) => post(side, `/ours/done/${id}`))
				.finally(() => (finished = true));
			done.catch(() => {}); // awaited below, after the probes
			const times = [];
			for (let i = 0; !finished; i++) {
				const due = started + i * 25 - performance.now();
				if (due > 0) await new Promise((r) => setTimeout(r, due));
				times.push((await timed(() => fetch(`${servers[side].url}/ours/status/${probeId}`).then((res) => res.text()))).ms);
			}
			const { status } = await done.catch(() => ({ status: 'unknown type' }));
			return status === 'completed' ? Math.max(...times) : NaN;
		});
	}
	if (runs('counted')) {
		// What a step writes (cursor rowsWritten, bench/sql-meter.ts) and its statements: deterministic, so once per side;
		// a trivial step and one awaiting a 1 ms timer (as a fetch). A base whose bench has no `awaitMs` answers without it: '-'.
		/** @param {'head' | 'base'} side @param {number} awaitMs */
		const sqlPerStep = async (side, awaitMs) => {
			const [empty, full] = [await post(side, '/ours/sql-cost', { steps: 0, awaitMs }), await post(side, '/ours/sql-cost', { steps: 200, awaitMs })];
			const per = (key) => (awaitMs > 0 && full.awaitMs !== awaitMs ? NaN : (full[key] - empty[key]) / 200);
			return { rowsWritten: per('rowsWritten'), statements: per('statements'), historyRows: per('historyRows') };
		};
		/** @type {Record<'head' | 'base', Record<string, { rowsWritten: number, statements: number, historyRows: number }>>} */
		const sql = { head: {}, base: {} };
		for (const side of /** @type {const} */ (['head', 'base'])) {
			sql[side].trivial = await sqlPerStep(side, 0).catch(() => ({ rowsWritten: NaN, statements: NaN, historyRows: NaN }));
			sql[side].awaiting = await sqlPerStep(side, 1).catch(() => ({ rowsWritten: NaN, statements: NaN, historyRows: NaN }));
		}
		for (const [shape, label] of /** @type {const} */ ([['trivial', 'trivial step'], ['awaiting', 'step awaiting a 1 ms timer']])) {
			rows.push({ name: `SQLite rows written per ${label} (cursor rowsWritten)`, unit: 'rows/step', better: 'lower', head: [sql.head[shape].rowsWritten], base: [sql.base[shape].rowsWritten] });
			rows.push({ name: `history table rows per ${label}`, unit: 'rows/step', better: 'lower', head: [sql.head[shape].historyRows], base: [sql.base[shape].historyRows] });
			rows.push({ name: `SQL statements per ${label}`, unit: 'statements/step', better: 'lower', head: [sql.head[shape].statements], base: [sql.base[shape].statements] });
		}
		/** @param {'head' | 'base'} side */
		const bytesPerStep = async (side) => {
			const { emptyBytes, fullBytes } = await post(side, '/size/ours', { steps: 1000 });
			return (fullBytes - emptyBytes) / 1000;
		};
		// Two of docs/cost.md's scenarios, whole runs (instance and index shard): rows written and the bytes an instance keeps.
		for (const scenario of /** @type {const} */ (['trivial', 'fetch'])) {
			const label = scenario === 'trivial' ? '10 trivial steps' : '10 steps each awaiting a 200 ms fetch';
			const [head, base] = [await post('head', '/cost/run', { scenario }), await post('base', '/cost/run', { scenario }).catch(() => ({}))];
			rows.push({ name: `cost scenario "${label}": rows written per run`, unit: 'rows/run', better: 'lower', head: [head.rowsWritten], base: [base.rowsWritten ?? NaN] });
			// Each setAlarm() is billed as a row written (bench/sql-meter.ts AlarmMeter); a base older than the alarm meter shows "-".
			const withAlarms = (r) => (typeof r.alarmsSet === 'number' ? r.rowsWritten + r.alarmsSet + r.alarmsDeleted : NaN);
			rows.push({ name: `cost scenario "${label}": rows written per run, alarm writes included`, unit: 'rows/run', better: 'lower', head: [withAlarms(head)], base: [withAlarms(base)] });
			rows.push({ name: `cost scenario "${label}": bytes the instance keeps (databaseSize)`, unit: 'B', better: 'lower', head: [head.bytes], base: [base.bytes ?? NaN] });
		}
		rows.push({ name: 'storage bytes per trivial step (databaseSize, 1000 steps minus 0)', unit: 'B/step', better: 'lower', head: [await bytesPerStep('head')], base: [await bytesPerStep('base').catch(() => NaN)] });
	}

	const fmt = (v) => (Number.isNaN(v) ? '-' : v >= 100 ? v.toFixed(0) : v.toFixed(3));
	const spread = (values) => (values.length > 1 ? ` (${fmt(Math.min(...values))}-${fmt(Math.max(...values))})` : '');
	const table = [
		`# A/B: head against ${options.base} (${new Date().toISOString()})`,
		'',
		`head ${headRev}, base ${baseRev}; wrangler's local trace collector ${options.collector}; Worker variables on both sides: ${options.var.length ? options.var.join(', ') : 'none (the table layout)'}; ${reps} repetitions, which side goes first alternating (bench/lib/turns.mjs)${options.settle !== '0' ? `, ${options.settle} s settling before each turn` : ''}${options.only.length ? `; only ${options.only.join(', ')}` : ''}; medians (min-max).`,
		'',
		'| measurement | unit | head | base | head vs base (above 1: head better) |',
		'|---|---|---|---|---|',
		...rows.map((r) => {
			const [h, b] = [median(r.head), median(r.base)];
			const gain = r.better === 'lower' ? b / h : h / b;
			return `| ${r.name} | ${r.unit} | ${fmt(h)}${spread(r.head)} | ${fmt(b)}${spread(r.base)} | ${Number.isFinite(gain) ? `${gain.toFixed(2)}x` : '-'} |`;
		}),
		'',
	].join('\n');
	reportTable(table, options.out);
} finally {
	await stopSides(servers, removeBase, head.remove);
}
