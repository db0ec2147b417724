#!/usr/bin/env node
// `npm run bench:capacity`: the inputs of the capacity model (docs/capacity.md), each measured in one
// wrangler dev (collector off by default, as production runs):
//   - what one index write costs a shard, in process: the shard's write path (point read, upsert, metric
//     counters) against the same without the counters and against one plain upsert; and deliveries per
//     second over RPC, as instances send them;
//   - listing at 1,000,000 entries on one shard (limit 50, a status filter, a keyset page deep in the list)
//     and fan-out over 64 and 256 shards (entries inserted by direct SQL through a bench-only hook);
//   - an overloaded shard: thousands of short runs of a one-shard type created at once, alone and with the
//     shard flooded by other writes: index lag (an entry's final status to the shard showing it), run
//     durations, and every entry counted at the end;
//   - a hot concurrency key's limiter (runs through one key of limit 10 per second), and a per-second
//     schedule (how late its ticks start, idle and under that load).
//
//   npm run bench:capacity                      full sizes (about 10 minutes on two shared cores)
//   npm run bench:capacity -- --smoke           tiny sizes
//   npm run bench:capacity -- --out DIR         write capacity[-smoke].{json,md} there (bench/results/ by default)
//   npm run bench:capacity -- --collector on
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { startDevServer } from './lib/dev-server.mjs';
import { jsonClient } from './lib/json-client.mjs';

/** @type {{ smoke: boolean, out?: string, collector: string }} */
let options;
try {
	options = /** @type {any} */ (parseArgs({ options: { smoke: { type: 'boolean', default: false }, out: { type: 'string' }, collector: { type: 'string', default: 'off' } }, strict: true, allowPositionals: false }).values);
	if (options.collector !== 'on' && options.collector !== 'off') throw new Error(`--collector takes "on" or "off", not ${JSON.stringify(options.collector)}`);
} catch (error) {
	console.error(`npm run bench:capacity: ${error instanceof Error ? error.message : error}\nusage: npm run bench:capacity [-- --smoke] [--out DIR] [--collector on|off]`);
	process.exit(2);
}
process.env.X_LOCAL_OBSERVABILITY = options.collector === 'on' ? 'true' : 'false';
const size = options.smoke
	? { reps: 1, writes: 200, deliveries: 200, entries: 20_000, seedChunk: 10_000, perShard: 100, light: 10, burst: 100, flood: 1000, hot: 30, idleTickS: 3 }
	: { reps: 3, writes: 5000, deliveries: 2000, entries: 1_000_000, seedChunk: 100_000, perShard: 1000, light: 50, burst: 1500, flood: 10_000, hot: 300, idleTickS: 15 };

const server = await startDevServer({ configs: ['bench/wrangler.jsonc'], vars: {} });
const { post, get } = jsonClient(server.url);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const quantile = (values, q) => {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN;
};
const median = (values) => quantile(values, 0.5);
const timed = async (fn) => {
	const t0 = performance.now();
	const value = await fn();
	return { ms: performance.now() - t0, value };
};
/** The median of 10 timings of `fn` (after one not counted). */
const latency = async (fn) => {
	await fn();
	const times = [];
	for (let i = 0; i < 10; i++) times.push((await timed(fn)).ms);
	return median(times);
};
const fmt = (v) => (typeof v !== 'number' || Number.isNaN(v) ? '-' : Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toFixed(3));

/** @type {{ section: string, name: string, value: string, how: string }[]} */
const rows = [];
/** The overload phases' figures, as numbers (the smoke test reads `lost`). */
const overloads = {};
const row = (section, name, value, how = '') => {
	rows.push({ section, name, value: typeof value === 'number' ? fmt(value) : value, how });
	console.error(`  ${section}: ${name} = ${typeof value === 'number' ? fmt(value) : value}`);
};

try {
	console.error(`bench:capacity: ${options.smoke ? 'smoke' : 'full'} run against ${server.url}, wrangler's local trace collector ${options.collector}`);
	await post('/ours/run', { params: { steps: 2 } }); // warm the isolate

	// ---- 1. What one index write costs a shard ----
	{
		const paths = /** @type {const} */ (['plain', 'uncounted', 'current']);
		/** @type {Record<string, number[]>} */
		const perWrite = { plain: [], uncounted: [], current: [] };
		/** @type {Record<string, any>} */
		const sql = {};
		for (let rep = 0; rep < size.reps; rep++) {
			for (const path of paths) {
				const empty = await timed(() => post('/capacity/writes', { count: 0, path, tag: `e${rep}` }));
				const full = await timed(() => post('/capacity/writes', { count: size.writes, path, tag: `f${rep}` }));
				perWrite[path].push((full.ms - empty.ms) / size.writes);
				sql[path] = full.value;
			}
		}
		for (const path of paths) {
			const ms = median(perWrite[path]);
			const s = sql[path];
			row('index write, in process', `${path}: ms per write / writes per second of SQL`, `${fmt(ms)} ms / ${fmt(1000 / ms)}`, `${size.writes} writes of one new finished entry, each its own transaction, minus 0; median of ${size.reps}`);
			row('index write, in process', `${path}: statements / rows read / rows written per write`, `${fmt(s.statements / size.writes)} / ${fmt(s.rowsRead / size.writes)} / ${fmt(s.rowsWritten / size.writes)}`, 'bench/sql-meter.ts on the shard');
		}
		row('index write, in process', 'current path vs plain upsert (time)', `${fmt(median(perWrite.current) / median(perWrite.plain))}x`, 'same run');
		const deliveries = [];
		for (let rep = 0; rep < size.reps; rep++) {
			const { ms } = await post('/index/write-throughput', { type: 'ix1', count: size.deliveries });
			deliveries.push(size.deliveries / (Math.max(ms, 1) / 1000));
		}
		row('index write, over RPC', `deliveries per second one shard takes (${size.deliveries} sent at once, one entry each)`, median(deliveries), `min ${fmt(Math.min(...deliveries))}, max ${fmt(Math.max(...deliveries))}`);
	}

	// ---- 2. Listing at scale ----
	{
		const pad = (i) => String(i).padStart(8, '0');
		/** Entries `prefix + [start, count)` into one shard. */
		const seed = async (type, shard, prefix, count, start = 0) => {
			for (let from = start; from < count; from += size.seedChunk) await post('/capacity/seed', { type, shard, prefix, from, count: Math.min(size.seedChunk, count - from) });
		};
		// Fan-out: 1, 64 and 256 shards of `perShard` entries each (locally every shard is in one isolate on two cores).
		await seed('cap-list1', 0, 'L1-', size.perShard);
		for (const shards of [64, 256]) {
			for (let n = 0; n < shards; n++) await seed(`cap-list${shards}`, n, `L${shards}-${n}-`, size.perShard);
		}
		for (const [type, label] of [['cap-list1', '1 shard'], ['cap-list64', '64 shards'], ['cap-list256', '256 shards']]) {
			const waiting = [];
			const all = [];
			for (let rep = 0; rep < size.reps; rep++) {
				waiting.push(await latency(() => post('/capacity/list', { type, status: 'waiting' })));
				all.push(await latency(() => post('/capacity/list', { type })));
			}
			row('listing, fan-out', `${label}, ${size.perShard} entries each: list limit 50 status=waiting / no filter (ms p50)`, `${fmt(median(waiting))} / ${fmt(median(all))}`, 'IndexClient.list through the bench Worker; median of 10, median of reps');
		}
		// One shard of 100,000 then `entries`: page 1, a keyset page near the oldest end, the per-status counts.
		let seeded = size.perShard;
		for (const total of [...new Set([Math.min(100_000, size.entries), size.entries])]) {
			const { ms: seedMs } = await timed(() => seed('cap-list1', 0, 'L1-', total, seeded));
			row('listing, one shard', `seeding ${(total - seeded).toLocaleString('en')} entries by direct SQL (${total.toLocaleString('en')} in the shard)`, `${fmt(seedMs / 1000)} s`, `chunks of ${size.seedChunk}`);
			seeded = total;
			// Newest first: the page after the entry 10% from the oldest end (90% of the entries are before it).
			const oldest = Math.floor(total * 0.1);
			const after = { at: 1_700_000_000_000 + oldest, id: `L1-${pad(oldest)}` };
			/** @type {Record<'waiting' | 'all' | 'deepWaiting' | 'deepAll' | 'counts', number[]>} */
			const m = { waiting: [], all: [], deepWaiting: [], deepAll: [], counts: [] };
			for (let rep = 0; rep < size.reps; rep++) {
				m.waiting.push(await latency(() => post('/capacity/list', { type: 'cap-list1', status: 'waiting' })));
				m.all.push(await latency(() => post('/capacity/list', { type: 'cap-list1' })));
				m.deepWaiting.push(await latency(() => post('/capacity/shard-page', { type: 'cap-list1', after, status: 'waiting' })));
				m.deepAll.push(await latency(() => post('/capacity/shard-page', { type: 'cap-list1', after })));
				m.counts.push(await latency(() => get('/capacity/counts/cap-list1')));
			}
			const n = total.toLocaleString('en');
			row('listing, one shard', `${n} entries: list limit 50 status=waiting / no filter (ms p50)`, `${fmt(median(m.waiting))} / ${fmt(median(m.all))}`, 'IndexClient.list');
			row('listing, one shard', `${n} entries: keyset page ${(total - oldest).toLocaleString('en')} entries deep, status=waiting / no filter (ms p50)`, `${fmt(median(m.deepWaiting))} / ${fmt(median(m.deepAll))}`, "the shard's indexList after a position, as a cursor asks it");
			row('listing, one shard', `${n} entries: per-status counts, count(*) grouped (ms p50)`, median(m.counts), 'indexCounts, what the overview refreshes every 30 s');
		}
	}

	// ---- 3. An overloaded shard, a hot key, a schedule ----
	{
		const tickFrom = 'cap-tick:sched:';
		const tickTo = 'cap-tick:sched;';
		await post('/capacity/schedule/wake');
		/** Ticks seen so far: id -> lateness (instance created - tick). */
		const ticks = new Map();
		const readTicks = async (phase) => {
			const { rows: finished } = await post('/capacity/finished', { type: 'cap-tick', from: tickFrom, to: tickTo });
			for (const [id, createdAt] of finished) {
				if (!ticks.has(id)) ticks.set(id, { phase, late: createdAt - Date.parse(id.slice(tickFrom.length)) });
			}
		};
		await sleep(size.idleTickS * 1000);
		await readTicks('idle');

		/**
		 * Creates `n` one-step runs of cap1 at once (and, with `flood`, as many other entries written to its one
		 * shard at the same moment), then watches the shard until every run's final status is there.
		 */
		const overload = async (label, n, flood = 0) => {
			const prefix = `${label}-`;
			const seen = new Map(); // id -> { lag, duration, finishedAt }
			const started = Date.now();
			// Awaited after the watch below; a failure meanwhile is kept for then, not left unhandled.
			const settle = (promise) => promise.then((value) => ({ value }), (error) => ({ error }));
			const creating = settle(post('/capacity/create-many', { type: 'cap1', prefix, n }));
			const flooding = settle(flood ? post('/index/write-throughput', { type: 'cap1', count: flood }) : Promise.resolve(null));
			const deadline = Date.now() + 600_000;
			while (seen.size < n && Date.now() < deadline) {
				await sleep(250);
				const { now, rows: finished } = await post('/capacity/finished', { type: 'cap1', from: prefix, to: `${label}.` });
				for (const [id, createdAt, updatedAt] of finished) {
					if (!seen.has(id)) seen.set(id, { lag: now - updatedAt, duration: updatedAt - createdAt, finishedAt: updatedAt });
				}
			}
			await readTicks(phaseNames[label] ?? label);
			const [creates, floods] = await Promise.all([creating, flooding]);
			if ('error' in creates) throw creates.error;
			if ('error' in floods) throw floods.error;
			const [create, floodResult] = [creates.value, floods.value];
			const all = [...seen.values()].sort((a, b) => a.finishedAt - b.finishedAt);
			const lags = all.map((s) => s.lag);
			const tenth = Math.max(1, Math.floor(all.length / 10));
			const firstTenth = all.slice(0, tenth).map((s) => s.lag);
			const lastTenth = all.slice(-tenth).map((s) => s.lag);
			return {
				n,
				created: create.created,
				createMs: create.ms,
				createsPerSecond: create.created / (create.ms / 1000),
				floodPerSecond: floodResult ? flood / (Math.max(floodResult.ms, 1) / 1000) : NaN,
				inIndex: seen.size,
				allVisibleAfterMs: Date.now() - started,
				lagP50: median(lags),
				lagP95: quantile(lags, 0.95),
				lagMax: Math.max(...lags),
				lagFirstTenthP50: median(firstTenth),
				lagLastTenthP50: median(lastTenth),
				durationP50: median(all.map((s) => s.duration)),
				durationP95: quantile(all.map((s) => s.duration), 0.95),
			};
		};
		const phaseNames = { ovl: `${size.light} runs at once`, ovb: `${size.burst} runs at once`, ovf: `${size.burst} runs + ${size.flood} other writes`, ovc: `${size.hot} runs at once (no key)` };
		const light = await overload('ovl', size.light);
		const burst = await overload('ovb', size.burst);
		const flooded = await overload('ovf', size.burst, size.flood);
		Object.assign(overloads, { light, burst, flooded });
		for (const [label, r] of /** @type {[string, typeof light][]} */ ([[`${size.light} runs at once (light)`, light], [`${size.burst} runs at once`, burst], [`${size.burst} runs at once + ${size.flood} other writes to the shard`, flooded]])) {
			row('overloaded shard (type on 1 shard)', `${label}: created / creates per s`, `${r.created} / ${fmt(r.createsPerSecond)}`, r.floodPerSecond ? `other writes taken ${fmt(r.floodPerSecond)}/s` : '');
			row('overloaded shard (type on 1 shard)', `${label}: index lag p50 / p95 / max (ms)`, `${fmt(r.lagP50)} / ${fmt(r.lagP95)} / ${fmt(r.lagMax)}`, 'final status (entry updatedAt) to the shard showing it; polled every 250 ms');
			row('overloaded shard (type on 1 shard)', `${label}: lag p50 of the first / last tenth to finish (ms)`, `${fmt(r.lagFirstTenthP50)} / ${fmt(r.lagLastTenthP50)}`, 'growing: the shard falls behind');
			row('overloaded shard (type on 1 shard)', `${label}: run duration p50 / p95 (ms)`, `${fmt(r.durationP50)} / ${fmt(r.durationP95)}`, 'entry createdAt to its final status');
			row('overloaded shard (type on 1 shard)', `${label}: final statuses in the index / runs (lost)`, `${r.inIndex} / ${r.n} (${r.n - r.inIndex})`, `all there ${fmt(r.allVisibleAfterMs / 1000)} s after the first create`);
		}

		// A hot key: `hot` runs of one key with limit 10, created at once; done when its limiter holds and queues nobody.
		// Locally the creates take the isolate too, so the key's own rate is the drain after they are all in:
		// the holders and waiters left at that moment over the time until the limiter is empty.
		const hotStart = Date.now();
		const hotCreate = await post('/capacity/create-many', { type: 'cap-hot', prefix: 'hot-', n: size.hot });
		const createdAt = Date.now();
		let info = await get('/capacity/limiter');
		const left = info.holders.length + info.waiting.length;
		while ((info.holders.length > 0 || info.waiting.length > 0) && Date.now() - hotStart < 600_000) {
			await sleep(100);
			info = await get('/capacity/limiter');
		}
		const hotMs = Date.now() - hotStart;
		const drainMs = Date.now() - createdAt;
		await readTicks('hot key');
		row('hot concurrency key (limit 10)', `${size.hot} runs of one key created at once: all through in (s) / runs per second`, `${fmt(hotMs / 1000)} / ${fmt(hotCreate.created / (hotMs / 1000))}`, `created in ${fmt(hotCreate.ms / 1000)} s; done when the limiter is empty again`);
		row(
			'hot concurrency key (limit 10)',
			'grants per second once every create is in (holders and waiters left / time to empty)',
			left > 0 ? fmt(left / (drainMs / 1000)) : 'none left: the key kept up with the creates',
			`${left} left, ${fmt(drainMs / 1000)} s`,
		);
		const cold = await overload('ovc', size.hot);
		row('hot concurrency key (limit 10)', `the same ${size.hot} runs without a key: all in the index after (s)`, fmt(cold.allVisibleAfterMs / 1000), 'reference, same run');

		await post('/capacity/schedule/pause');
		const byPhase = new Map();
		for (const { phase, late } of ticks.values()) byPhase.set(phase, [...(byPhase.get(phase) ?? []), late]);
		for (const [phase, late] of byPhase) {
			row('per-second schedule', `${phase}: ticks started / lateness p50 / max (ms)`, `${late.length} / ${fmt(median(late))} / ${fmt(Math.max(...late))}`, 'instance createdAt minus its tick');
		}
		const all = [...ticks.keys()].map((id) => Date.parse(id.slice(tickFrom.length))).sort((a, b) => a - b);
		row('per-second schedule', 'seconds covered / ticks started (missed ticks collapse into the latest)', `${((all.at(-1) ?? 0) - (all[0] ?? 0)) / 1000 + 1} / ${all.length}`, '');
	}

	const table = [
		`| section | measurement | value | how |`,
		`|---|---|---|---|`,
		...rows.map((r) => `| ${r.section} | ${r.name} | ${r.value} | ${r.how} |`),
	].join('\n');
	const footer = `${availableParallelism()} CPUs, wrangler's local trace collector ${options.collector}; every object in one workerd isolate (locally shards add no CPU)`;
	console.log(`\n${table}\n\n${footer}`);
	const outDir = resolve(options.out ?? join(import.meta.dirname, 'results'));
	const name = `capacity${options.smoke ? '-smoke' : ''}${options.collector === 'on' ? '-collector-on' : ''}`;
	const stamp = new Date().toISOString();
	mkdirSync(outDir, { recursive: true });
	writeFileSync(join(outDir, `${name}.json`), JSON.stringify({ stamp, smoke: options.smoke, size, collector: options.collector, rows, overloads: Object.fromEntries(Object.entries(overloads).map(([k, r]) => [k, { ...r, lost: r.n - r.inIndex }])) }, null, 2));
	writeFileSync(join(outDir, `${name}.md`), `# Capacity bench (${stamp}${options.smoke ? ', smoke' : ''}; \`npm run bench:capacity\`)\n\n${table}\n\n${footer}\n`);
} catch (error) {
	console.error(`bench:capacity: failed; wrangler dev's last output:\n${server.output().slice(-4000)}`);
	throw error;
} finally {
	await server.stop();
}
