#!/usr/bin/env node
// `npm run bench`: our engine, Cloudflare Workflows' local engine and the
// storage floor, side by side in one wrangler dev, alternated A B C, B C A, C A B so
// machine drift hits all of them. Prints one table of medians (min-max) and
// ratios measured in the same run, and writes JSON and Markdown results.
//
//   npm run bench                 full run, results in bench/results/
//   npm run bench -- --smoke      tiny sizes (used by the test suite)
//   npm run bench -- --out DIR    write results elsewhere
//   npm run bench -- --collector off
//                                 without wrangler's local trace collector, as `npm run dev` runs
//                                 (results in latest-collector-off.{json,md}); on by default, as
//                                 wrangler runs it and as every figure since the first round was measured
//   npm run bench -- --only streams
//                                 only the live-stream rows (fan-out latency, delivery rate, memory;
//                                 results in latest[-collector-off]-only-streams.{json,md}), no cost or storage
//   npm run bench -- --only cost  only the Cost section's scenarios (results in latest[-collector-off]-only-cost.{json,md})
//   npm run bench -- --only targets
//                                 only the rows of issue 27's targets: create latency, marginal step, rows per step, time
//                                 between steps, throughput, event and child round trips (a few minutes; results in
//                                 latest[-collector-off]-only-targets.{json,md})
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startDevServer } from './lib/dev-server.mjs';
import { inTurn } from './lib/turns.mjs';
import { jsonClient } from './lib/json-client.mjs';
import { runListingHarness, runReplayHarness } from './lib/harness.mjs';
import { fanOut } from './lib/stream-bench.mjs';
import { costModel, layoutComparison, SCENARIOS } from './lib/cost-model.mjs';

const root = resolve(import.meta.dirname, '..');
/** @type {{ smoke: boolean, out?: string, collector: string, only?: string }} */
let options;
/** The Cost section (docs/cost.md); `--only cost` runs just these. */
async function costRows() {
	// Both storage layouts (runtime/storage-layout.ts): the compact one, which a new project ships with, is the headline;
	// the table one (instances created before it, or SHARDFLOW_STORAGE_LAYOUT=table) is shown beside it.
	const compact = costModel(await costInputsOf('compact'));
	const table = costModel(await costInputsOf('table'));
	// The rollup the shards owe for the last minute of runs: asked for once that minute closed past the rollup's margin
	// (10 s), so every run's metrics are in the figures; the bench waits up to 70 s for it.
	const dueAt = (metricsRollup.lastMinute + 1) * 60_000 + 11_000;
	if (Date.now() < dueAt) await new Promise((r) => setTimeout(r, dueAt - Date.now()));
	metricsRollup.closing = await post('/cost/metrics-rollup', {});
	console.error(`  cost: the shards' closing metrics rollup: ${JSON.stringify(metricsRollup.closing)}`);
	return { ...compact, table, metricsRollup: metricsRollup.summary(), markdown: `${compact.markdown}\n\n${metricsRollup.markdown()}\n\n${layoutComparison(compact.figures, table.figures)}` };
}

/**
 * The index shards' run metrics, apart from the runs (docs/cost.md): a run's delivery writes none; a shard rolls the
 * marks of a closed minute up once (a row per minute they count in, which carries the watermark), at its next delivery
 * or alarm, which falls in a later run's window or in none. So the cost is per active minute per type per shard: a
 * lone run pays its minute's row; at the bench's rate, the rows measured over the runs.
 */
const metricsRollup = {
	runs: 0,
	/** Metrics rows that fell in the runs' windows: rollups a later run's delivery made, and each shard's first watermark. */
	inRuns: { rows: 0, firstWatermarks: 0 },
	/** What the closing rollup wrote (the bench asks for it after the runs). */
	closing: { rows: 0, firstWatermarks: 0 },
	lastMinute: 0,
	/** `type:shard:minute` of each run: the minutes in which a shard had runs to roll up. */
	shardMinutes: new Set(),
	add(/** @type {any} */ run) {
		this.runs++;
		this.inRuns.rows += run.metricsRows ?? 0;
		this.inRuns.firstWatermarks += run.metricsFirstWatermarks ?? 0;
		if (run.shardMinute) {
			this.shardMinutes.add(run.shardMinute);
			this.lastMinute = Math.max(this.lastMinute, Number(run.shardMinute.split(':').at(-1)));
		}
	},
	summary() {
		const firstWatermarks = this.inRuns.firstWatermarks + this.closing.firstWatermarks;
		// The rollups' rows: every metrics row but the shards' first watermarks (once in their life, apart).
		const rollupRows = this.inRuns.rows + this.closing.rows - firstWatermarks;
		const activeShardMinutes = this.shardMinutes.size;
		return {
			runs: this.runs, rollupRows, firstWatermarks, activeShardMinutes, inRuns: this.inRuns, closing: this.closing,
			perShardMinute: rollupRows / Math.max(1, activeShardMinutes), perRun: rollupRows / Math.max(1, this.runs),
		};
	},
	markdown() {
		const { runs, rollupRows, firstWatermarks, activeShardMinutes, inRuns, perShardMinute, perRun } = this.summary();
		return [
			"The index shards' run metrics, apart from the runs: a delivery that starts or finishes a run writes no metrics row (the run is a mark on its entry); each shard rolls a closed minute's marks up once, at its next delivery or alarm: a minute row per minute the marks count in, which carries the rollup's watermark.",
			`Over these ${runs} cost runs (${activeShardMinutes} minutes in which a type's shard had runs), the rollups wrote ${rollupRows} rows, ${inRuns.rows - inRuns.firstWatermarks} of them in a later run's window (in its figures above) and the rest in the rollup the bench asked for after the runs; and each of ${firstWatermarks} shards its first watermark (with its first mark, once in its life).`,
			`So ${perShardMinute.toFixed(2)} rows per active minute per type per shard (1, or 2 where a run started in one minute and finished in the next); a lone run on its shard pays its minute's row (as its own metrics row before); at the bench's rate (${(runs / Math.max(1, activeShardMinutes)).toFixed(1)} runs per shard-minute) ${perRun.toFixed(2)} rows per run.`,
		].join(' ');
	},
};

async function costInputsOf(/** @type {'compact' | 'table'} */ layout) {
	// Cost (docs/cost.md): each scenario run `costReps` times on the metered types; medians of what one run cost.
	/** @type {Record<string, import('./lib/cost-model.mjs').Measured>} */
	const costInputs = {};
	for (const { key: scenario } of SCENARIOS) {
		const runs = [];
		for (let i = 0; i < size.costReps; i++) runs.push(await post('/cost/run', { scenario, layout, ...(benchGroup ? { group: benchGroup } : {}) }));
		for (const run of runs) metricsRollup.add(run);
		const m = (key) => median(runs.map((r) => r[key]).filter((v) => typeof v === 'number'));
		costInputs[scenario] = {
			wallMs: m('wallMs'),
			idleMs: m('idleMs'),
			statements: m('statements'),
			rowsRead: m('rowsRead'),
			sqlRowsWritten: m('rowsWritten'),
			alarmsSet: m('alarmsSet'),
			alarmsDeleted: m('alarmsDeleted'),
			indexAlarmsSet: m('indexAlarmsSet'),
			indexAlarmsDeleted: m('indexAlarmsDeleted'),
			metricsRows: m('metricsRows'),
			requests: m('requests'),
			bytes: m('bytes'),
			...(scenario === 'sleep' ? { bytesWhileSleeping: m('bytesWhileSleeping') } : {}),
		};
		console.error(`  cost ${scenario} (${layout} layout): ${JSON.stringify(costInputs[scenario])}`);
		// Where one run's key-value rows went, by operation and key (the compact layout's parts): the first run's.
		if (layout === 'compact') console.error(`  cost ${scenario} key-value rows written (first run): ${JSON.stringify(runs[0].kvWrites)}`);
	}
	return costInputs;
}

/** The live-stream rows (docs/streams.md); `--only streams` runs just these. */
async function streamRows() {
	// Live streams: emit-to-receive latency with one subscriber (floor col) and at the last of
	// many subscribers of one instance (ours), the fan-out's delivery rate and memory.
	/** @type {{ rate: number[], memory: number[] }} */
	const fan = { rate: [], memory: [] };
	const streamShape = { messages: size.streamMessages, gapMs: 50 };
	await measure(`streams: emit-to-receive latency p50 at the last of ${size.streamSubscribers} subscribers of one instance (ours) vs 1 subscriber (floor col)`, 'ms', {
		ours: async () => {
			const run = await fanOut(base, { ...streamShape, subscribers: size.streamSubscribers, memory: server.peakMemory });
			fan.rate.push(run.deliveriesPerSecond);
			fan.memory.push(run.peakMiBOverIdle);
			return median(run.lastArrival);
		},
		floor: async () => median((await fanOut(base, { ...streamShape, subscribers: 1 })).lastArrival),
	});
	const summary = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values), samples: values });
	results.push({ name: `streams: messages delivered per second to ${size.streamSubscribers} subscribers (${size.streamMessages} messages ${streamShape.gapMs} ms apart)`, unit: 'msg/s', better: 'higher', ours: summary(fan.rate) });
	results.push({ name: `streams: workerd peak memory over idle with ${size.streamSubscribers} subscribers of one instance`, unit: 'MiB', better: 'lower', ours: summary(fan.memory) });
}

try {
	options = /** @type {any} */ (
		parseArgs({ options: { smoke: { type: 'boolean', default: false }, out: { type: 'string' }, collector: { type: 'string', default: 'on' }, only: { type: 'string' } }, strict: true, allowPositionals: false }).values
	);
	if (options.collector !== 'on' && options.collector !== 'off') throw new Error(`--collector takes "on" or "off", not ${JSON.stringify(options.collector)}`);
	if (options.only !== undefined && !['streams', 'cost', 'targets'].includes(options.only)) throw new Error(`--only takes "streams", "cost" or "targets", not ${JSON.stringify(options.only)}`);
} catch (error) {
	console.error(`npm run bench: ${error instanceof Error ? error.message : error}\nusage: npm run bench [-- --smoke] [--out DIR] [--collector on|off] [--only streams|cost|targets]`);
	process.exit(2);
}
const { smoke, collector, only } = options;
const outDir = options.out !== undefined ? resolve(options.out) : join(root, 'bench/results');
// wrangler's local trace collector (X_LOCAL_OBSERVABILITY): a span per storage statement, stored on the workflows' thread.
process.env.X_LOCAL_OBSERVABILITY = collector === 'on' ? 'true' : 'false';
// SHARDFLOW_BENCH_GROUP=eu npm run bench -- --only cost: the cost runs in the eu group (docs/residency.md "Cost"); workerd
// implements no jurisdiction, so they run with SHARDFLOW_ENV=development, where shardflow reaches the group's objects by name.
const benchGroup = process.env.SHARDFLOW_BENCH_GROUP;
const resultName = `${smoke ? 'smoke' : 'latest'}${collector === 'off' ? '-collector-off' : ''}${only ? `-only-${only}` : ''}${benchGroup ? `-group-${benchGroup}` : ''}`;

const size = smoke
	? { reps: 1, creates: 5, steps: 20, fanout: 5, fanoutSteps: 3, events: 3, replaySteps: 20, replayEvery: 10, responsiveSteps: 100, probes: 3, probeGapMs: 25, loneDelays: [0, 50], statusSteps: 1000, index: [200, 400], writes: 50, metricsRuns: 500, storageSteps: 50, replayHistoryMiB: [1, 2], listingPerShard: 20, fetchSteps: 30, burstSteps: 200, streamSubscribers: 5, streamMessages: 5, sqlSteps: 20, stampSteps: 50, costReps: 1 }
	: { reps: 3, creates: 200, steps: 200, fanout: 100, fanoutSteps: 10, events: 20, replaySteps: 500, replayEvery: 10, responsiveSteps: 1000, probes: 20, probeGapMs: 25, loneDelays: [0, 100, 200, 300, 400], statusSteps: 10_000, index: [10_000, 100_000], writes: 1000, metricsRuns: 10_000, storageSteps: 1000, replayHistoryMiB: [10, 100, 1000], listingPerShard: 1000, fetchSteps: 2500, burstSteps: 5000, streamSubscribers: 1000, streamMessages: 20, sqlSteps: 1000, stampSteps: 1020, costReps: 3 };

// SHARDFLOW_OUTBOX_IN_ROW=true npm run bench ...: measures the outbox in the instance row (docs/decisions.md "The outbox in the instance row").
const server = await startDevServer({
	configs: ['bench/wrangler.jsonc'],
	vars: { ...(process.env.SHARDFLOW_OUTBOX_IN_ROW ? { SHARDFLOW_OUTBOX_IN_ROW: process.env.SHARDFLOW_OUTBOX_IN_ROW } : {}), ...(benchGroup ? { SHARDFLOW_ENV: 'development' } : {}) },
});
const base = server.url;

const { post, get } = jsonClient(base);

async function timed(fn) {
	const t0 = performance.now();
	const value = await fn();
	return { ms: performance.now() - t0, value };
}
const quantile = (values, q) => {
	const sorted = [...values].sort((a, b) => a - b);
	return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const median = (values) => quantile(values, 0.5);

/** One figure measured `reps` times per engine, the engines' order rotated every repetition (bench/lib/turns.mjs). */
const results = [];
async function measure(name, unit, engines, better = 'lower') {
	/** @type {Record<string, number[]>} */
	const samples = Object.fromEntries(Object.keys(engines).map((k) => [k, []]));
	for (let rep = 0; rep < size.reps; rep++) {
		for (const [engine, fn] of inTurn(Object.entries(engines), rep)) samples[engine].push(await fn());
	}
	const row = { name, unit, better };
	for (const [engine, values] of Object.entries(samples)) {
		row[engine] = { median: median(values), min: Math.min(...values), max: Math.max(...values), samples: values };
	}
	results.push(row);
	console.error(`  ${name}: ${Object.entries(samples).map(([k, v]) => `${k}=${median(v).toFixed(3)}`).join(' ')}`);
	return row;
}

const PARAMS = (steps, extra = {}) => ({ params: { steps, ...extra } });

/** Waits until an instance of ours has completed, reading its status over HTTP. */
async function oursDoneOverHttp(id) {
	for (let i = 0; i < 3000; i++) {
		const { status } = await get(`/ours/status/${id}`);
		if (status === 'completed') return;
		if (status === 'errored' || status === 'terminated') throw new Error(`${id} ended ${status}`);
		await new Promise((r) => setTimeout(r, 50));
	}
	throw new Error(`${id} did not complete`);
}

try {
	console.error(`bench: ${smoke ? 'smoke' : 'full'} run against ${base}, wrangler's local trace collector ${collector}`);
	// Warm every path once so no figure pays for module loading or first-object creation.
	await post('/ours/run', PARAMS(2));
	await post('/cf/run', PARAMS(2));
	await post('/floor/run', PARAMS(2));
	await post('/ours/child-round-trip', { how: 'invoke' });
	await post('/ours/child-round-trip', { how: 'manual' });

	if (only === 'streams') {
		await streamRows();
		report(undefined, undefined);
	} else if (only === 'cost') {
		report(undefined, await costRows());
	} else allRows: {
		// (a) create latency, sequential
		const createLatency = async (path) => {
			/** @type {number[]} */
			const times = [];
			for (let i = 0; i < size.creates; i++) times.push((await timed(() => post(path, PARAMS(0)))).ms);
			return times;
		};
		/** @type {Record<'ours' | 'cf' | 'floor', number[]>} */
		const createTimes = { ours: [], cf: [], floor: [] };
		await measure('create latency p50', 'ms', {
			ours: async () => {
				const t = await createLatency('/ours/create');
				createTimes.ours.push(...t);
				return median(t);
			},
			cf: async () => {
				const t = await createLatency('/cf/create');
				createTimes.cf.push(...t);
				return median(t);
			},
			// The floor of a create: a brand-new Durable Object's first durable write.
			floor: async () => {
				const t = await createLatency('/floor/run');
				createTimes.floor.push(...t);
				return median(t);
			},
		});
		results.push({
			name: 'create latency p95',
			unit: 'ms',
			better: 'lower',
			ours: { median: quantile(createTimes.ours, 0.95), min: NaN, max: NaN },
			cf: { median: quantile(createTimes.cf, 0.95), min: NaN, max: NaN },
			floor: { median: quantile(createTimes.floor, 0.95), min: NaN, max: NaN },
		});

		// (b) marginal cost of a sequential step: (run N steps - run 0 steps) / N, median of 5 pairs
		// per repetition (one pair is within the noise of a ~30 ms create), at N = 200 and N = 2000.
		const marginal = (path, steps) => async () => {
			/** @type {number[]} */
			const diffs = [];
			for (let i = 0; i < 5; i++) {
				const empty = await timed(() => post(path, PARAMS(0)));
				const full = await timed(() => post(path, PARAMS(steps)));
				diffs.push((full.ms - empty.ms) / steps);
			}
			return Math.max(0, median(diffs));
		};
		await measure(`marginal ms per sequential step (${size.steps} steps)`, 'ms/step', {
			ours: marginal('/ours/run', size.steps),
			cf: marginal('/cf/run', size.steps),
			floor: marginal('/floor/run', size.steps),
		});
		await measure(`marginal ms per sequential step (${size.steps * 10} steps; cf at ${size.steps})`, 'ms/step', {
			ours: marginal('/ours/run', size.steps * 10),
			cf: marginal('/cf/run', size.steps),
			floor: marginal('/floor/run', size.steps * 10),
		});

		// (b2) what a step writes, as Cloudflare bills it: the cursors' rowsWritten / rowsRead and statements of a run of N
		// steps minus those of a run of none, per step (bench/sql-meter.ts), for a trivial step (it settles at once) and a
		// step that awaits a 1 ms timer (as one awaiting a fetch: still pending after its first microtask turns). rowsWritten
		// counts every b-tree entry a statement writes (index entries included); the "history table rows" rows say how many
		// of them are `history` rows (a step's records kept in its own row are not: drizzle/0013). Floor: one INSERT OR
		// REPLACE per step.
		{
			const perStep = async (awaitMs) => {
				const empty = await post('/ours/sql-cost', { steps: 0, awaitMs });
				const full = await post('/ours/sql-cost', { steps: size.sqlSteps, awaitMs });
				const per = (key) => (full[key] - empty[key]) / size.sqlSteps;
				return { rowsWritten: per('rowsWritten'), rowsRead: per('rowsRead'), statements: per('statements'), historyRows: per('historyRows'), empty };
			};
			const { empty, ...trivial } = await perStep(0);
			const { empty: _awaitingEmpty, ...awaiting } = await perStep(1);
			const floorRows = (await post('/floor/run', PARAMS(size.sqlSteps))).rowsWritten / size.sqlSteps;
			const one = (v) => ({ median: v, min: NaN, max: NaN });
			results.push({ name: `SQLite rows written per trivial step (cursor rowsWritten, history included; ${size.sqlSteps} steps minus 0)`, unit: 'rows/step', better: 'lower', ours: one(trivial.rowsWritten), floor: one(floorRows) });
			results.push({ name: 'SQLite rows written per trivial step that are history table rows', unit: 'rows/step', better: 'lower', ours: one(trivial.historyRows) });
			results.push({ name: `SQLite rows written per step awaiting a 1 ms timer (as a fetch; history included; ${size.sqlSteps} steps minus 0)`, unit: 'rows/step', better: 'lower', ours: one(awaiting.rowsWritten), floor: one(floorRows) });
			results.push({ name: 'SQLite rows written per step awaiting a timer that are history table rows', unit: 'rows/step', better: 'lower', ours: one(awaiting.historyRows) });
			results.push({ name: 'SQLite rows read per trivial step (cursor rowsRead)', unit: 'rows/step', better: 'lower', ours: one(trivial.rowsRead) });
			results.push({ name: 'SQL statements per trivial step (sql.exec calls)', unit: 'statements/step', better: 'lower', ours: one(trivial.statements), floor: one(1) });
			results.push({ name: 'SQL statements per step awaiting a timer (sql.exec calls)', unit: 'statements/step', better: 'lower', ours: one(awaiting.statements), floor: one(1) });
			results.push({ name: 'SQLite rows written by a run of 0 steps (create, status changes, index outbox)', unit: 'rows/run', better: 'lower', ours: one(empty.rowsWritten) });
			console.error(`  sql per trivial step: ${JSON.stringify(trivial)}, per step awaiting a timer: ${JSON.stringify(awaiting)}, floor rows ${floorRows}, 0-step run ${empty.rowsWritten} rows written`);
		}

		// (b3) after Vercel Workflow's public CI benchmark: ${size.stampSteps} trivial sequential steps; each step returns Date.now()
		// as it starts. Time to first step: from the create sent (the bench Worker's clock) to the first stamp; time between
		// steps: consecutive stamps. workerd's clock has millisecond steps and stands still while code runs, so a gap is 0 ms
		// unless I/O (a commit, a yield) came between; the mean (last - first) / (n - 1) is given beside the quantiles.
		/** @type {Record<'ours' | 'cf', { first: number[], p50: number[], p99: number[], mean: number[] }>} */
		const stampFigures = { ours: { first: [], p50: [], p99: [], mean: [] }, cf: { first: [], p50: [], p99: [], mean: [] } };
		for (let rep = 0; rep < size.reps; rep++) {
			for (const engine of inTurn(/** @type {const} */ (['ours', 'cf']), rep)) {
				const { sentAt, stamps } = await post(`/${engine}/stamps`, { steps: size.stampSteps });
				if (!Array.isArray(stamps) || stamps.length !== size.stampSteps) throw new Error(`${engine} stamps run answered ${JSON.stringify(stamps).slice(0, 200)}`);
				const gaps = stamps.slice(1).map((t, i) => t - stamps[i]);
				const f = stampFigures[engine];
				f.first.push(stamps[0] - sentAt);
				f.p50.push(quantile(gaps, 0.5));
				f.p99.push(quantile(gaps, 0.99));
				f.mean.push((stamps.at(-1) - stamps[0]) / (stamps.length - 1));
			}
		}
		const spread = (values) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values), samples: values });
		for (const [key, label] of /** @type {const} */ ([['first', 'time to first step (create sent -> first step starts)'], ['p50', 'time between steps p50'], ['p99', 'time between steps p99'], ['mean', 'time between steps, mean ((last - first) / (n - 1))']])) {
			results.push({ name: `${size.stampSteps} sequential steps (after Vercel Workflow's CI benchmark): ${label}`, unit: 'ms', better: 'lower', ours: spread(stampFigures.ours[key]), cf: spread(stampFigures.cf[key]) });
		}
		console.error(`  stamps: ${JSON.stringify(Object.fromEntries(Object.entries(stampFigures).map(([k, v]) => [k, Object.fromEntries(Object.entries(v).map(([q, xs]) => [q, median(xs)]))])))}`);

		// (c) many instances at once
		const fanout = (path) => async () => {
			const { ms } = await timed(() => Promise.all(Array.from({ length: size.fanout }, () => post(path, PARAMS(size.fanoutSteps)))));
			return (size.fanout * size.fanoutSteps) / (ms / 1000);
		};
		await measure(`throughput, ${size.fanout} instances x ${size.fanoutSteps} steps`, 'steps/s', { ours: fanout('/ours/run'), cf: fanout('/cf/run') }, 'higher');

		// (d) waitForEvent round trip: event sent -> instance complete
		const roundTrip = (engine) => async () => {
			const times = [];
			for (let i = 0; i < size.events; i++) {
				const { id } = await post(`/${engine}/prepare-wait`);
				times.push((await timed(() => post(`/${engine}/event`, { id }))).ms);
			}
			return median(times);
		};
		await measure('event round trip p50', 'ms', { ours: roundTrip('ours'), cf: roundTrip('cf') });

		// (d2) child round trip: step.invoke of a one-step child vs the same by hand (create in a step + an event back), both on
		// our engine. In the parent: from a stamp step just before the child's start to the moment run() holds the child's result
		// (bench/workflows.ts RoundTrip), the figure the engine's child path decides. End to end: the parent's create over HTTP to
		// its completion (polled), which adds the parent's own create and the polling to both sides. One set of trips gives both.
		/** @type {Record<'invoke' | 'manual', { inParent: number[], endToEnd: number[] }>} */
		const trips = { invoke: { inParent: [], endToEnd: [] }, manual: { inParent: [], endToEnd: [] } };
		for (let rep = 0; rep < size.reps; rep++) {
			for (const how of inTurn(/** @type {const} */ (['invoke', 'manual']), rep)) {
				const inParent = [];
				const endToEnd = [];
				for (let i = 0; i < size.events; i++) {
					const { ms, value } = await timed(() => post('/ours/child-round-trip', { how }));
					if (value.status !== 'completed') throw new Error(`child round trip (${how}) ended ${value.status}`);
					inParent.push(value.inParentMs);
					endToEnd.push(ms);
				}
				trips[how].inParent.push(median(inParent));
				trips[how].endToEnd.push(median(endToEnd));
			}
		}
		results.push({ name: 'child round trip p50 in the parent (child started -> result held): step.invoke (ours) vs create + event by hand (cf col)', unit: 'ms', better: 'lower', ours: spread(trips.invoke.inParent), cf: spread(trips.manual.inParent) });
		results.push({ name: "child round trip p50 end to end (parent's create over HTTP -> its completion, polled): step.invoke (ours) vs by hand (cf col)", unit: 'ms', better: 'lower', ours: spread(trips.invoke.endToEnd), cf: spread(trips.manual.endToEnd) });
		console.error(`  child round trip: ${JSON.stringify(Object.fromEntries(Object.entries(trips).map(([k, v]) => [k, { inParent: median(v.inParent), endToEnd: median(v.endToEnd) }])))}`);

		// `--only targets`: the rows above are issue 27's targets (create, marginal step, rows per step, time between steps,
		// throughput, event and child round trips); the rest of the run is skipped.
		if (only === 'targets') {
			report(undefined, undefined);
			break allRows;
		}

		// (e) replay-heavy: sleeps force a replay from the top every few steps
		const replay = (path) => async () => (await timed(() => post(path, PARAMS(size.replaySteps, { sleepEvery: size.replayEvery })))).ms;
		await measure(`replay-heavy run, ${size.replaySteps} steps, sleep every ${size.replayEvery}`, 'ms', { ours: replay('/ours/run'), cf: replay('/cf/run') });
		const replays = size.replaySteps / size.replayEvery;
		const perReplay = {};
		for (const steps of [size.replaySteps / 5, size.replaySteps]) {
			const { ms } = await timed(() => post('/ours/run', PARAMS(steps, { sleepEvery: size.replayEvery })));
			perReplay[steps] = ms / (steps / size.replayEvery);
		}
		const [fewer, more] = [size.replaySteps / 5, size.replaySteps].map((steps) => perReplay[steps].toFixed(1));
		results.push({
			name: `ours: ms per replay with ${size.replaySteps / 5} vs ${size.replaySteps} steps of history: ${fewer} vs ${more} (flat or linear, never quadratic)`,
			unit: 'ms/replay',
			better: 'lower',
			ours: { median: perReplay[size.replaySteps], min: NaN, max: NaN },
			replays,
		});

		// (g) responsiveness: unrelated reads (an instance's status, an index listing) sent while one instance runs many
		// CPU-light steps. The probes start when its create is sent, not when the create answers: Cloudflare's local engine
		// answers a create only once the whole run is over, so probes sent after its answer would measure an idle isolate.
		// A probe every `probeGapMs` (a client polling); the floor column sends the same probes with nothing running.
		const { id: probeId } = await post('/ours/run', PARAMS(1));
		/** Sends the create of a long run (none for 'idle'); the returned function waits until that run has finished. */
		const startLongRun = (engine) => {
			const created = engine === 'idle' ? Promise.resolve(null) : post(`/${engine}/create`, PARAMS(size.responsiveSteps));
			return async () => {
				const instance = await created;
				if (instance) await post(`/${engine}/done/${instance.id}`);
			};
		};
		const responsiveness = (engine, probe) => async () => {
			const started = performance.now();
			const finished = startLongRun(engine);
			/** @type {number[]} */
			const times = [];
			for (let i = 0; i < size.probes; i++) {
				const due = started + i * size.probeGapMs - performance.now();
				if (due > 0) await new Promise((r) => setTimeout(r, due));
				times.push((await timed(() => get(probe))).ms);
			}
			await finished();
			return Math.max(...times);
		};
		const during = `max latency of an unrelated GET sent during a ${size.responsiveSteps}-step run (one every ${size.probeGapMs} ms from its create on; floor col: nothing running)`;
		await measure(during.replace('GET', 'GET /workflows/:id'), 'ms', {
			ours: responsiveness('ours', `/ours/status/${probeId}`),
			cf: responsiveness('cf', `/ours/status/${probeId}`),
			floor: responsiveness('idle', `/ours/status/${probeId}`),
		});
		await measure(during.replace('GET', 'GET /workflows?type='), 'ms', {
			ours: responsiveness('ours', '/ours/list/bench'),
			cf: responsiveness('cf', '/ours/list/bench'),
			floor: responsiveness('idle', '/ours/list/bench'),
		});
		// (g2) the same read sent once per run, at a moment of it: nobody polls, so the pass runs the long slices of a
		// calm isolate (one run per delay; the row is the slowest of them).
		const lone = (engine, probe) => async () => {
			/** @type {number[]} */
			const times = [];
			for (const delay of size.loneDelays) {
				const finished = startLongRun(engine);
				await new Promise((r) => setTimeout(r, delay));
				times.push((await timed(() => get(probe))).ms);
				await finished();
			}
			return Math.max(...times);
		};
		await measure(`max latency of a lone GET /workflows/:id sent ${size.loneDelays.join('/')} ms into a ${size.responsiveSteps}-step run (floor col: nothing running)`, 'ms', {
			ours: lone('ours', `/ours/status/${probeId}`),
			cf: lone('cf', `/ours/status/${probeId}`),
			floor: lone('idle', `/ours/status/${probeId}`),
		});
		// (g3) a burst: one run starts `burstSteps` parallel steps at once (Promise.all), each a fetch answered in the Worker
		// (bench/workflows.ts BurstWorkflow), under the default invocation budget (1,000 attempts awaiting I/O per invocation,
		// so each invocation starts a burst of 1,000). A probe every `probeGapMs` from its create until the run has finished;
		// the floor column sends `probes` of them with nothing running.
		const burst = (engine) => async () => {
			const started = performance.now();
			const created = engine === 'idle' ? undefined : post('/ours/create', { type: 'burst', params: { n: size.burstSteps } });
			let finished = engine === 'idle';
			const done = created
				?.then(async ({ id }) => {
					const { status } = await post(`/ours/done/${id}`);
					if (status !== 'completed') throw new Error(`burst run ${id} ended ${status}`);
				})
				.finally(() => (finished = true));
			done?.catch(() => {}); // awaited below, after the probes
			/** @type {number[]} */
			const times = [];
			for (let i = 0; engine === 'idle' ? i < size.probes : !finished; i++) {
				const due = started + i * size.probeGapMs - performance.now();
				if (due > 0) await new Promise((r) => setTimeout(r, due));
				times.push((await timed(() => get(`/ours/status/${probeId}`))).ms);
			}
			await done;
			return Math.max(...times);
		};
		await measure(`max latency of an unrelated GET /workflows/:id sent while a run starts ${size.burstSteps} parallel fetch steps (Promise.all; one every ${size.probeGapMs} ms from its create to its end; floor col: nothing running)`, 'ms', {
			ours: burst('ours'),
			floor: burst('idle'),
		});
		// (h) a status stays bounded: GET /workflows/:id of a long instance vs a 10-step one (step counts + the latest 100 steps)
		const { id: longId } = await post('/ours/run', PARAMS(size.statusSteps));
		const { id: shortId } = await post('/ours/run', PARAMS(10));
		const statusLatency = (id) => async () => {
			const times = [];
			for (let i = 0; i < 10; i++) times.push((await timed(() => get(`/ours/status/${id}`))).ms);
			return median(times);
		};
		await measure(`status latency (GET /workflows/:id): ${size.statusSteps}-step instance (ours) vs 10-step instance (floor col)`, 'ms', {
			ours: statusLatency(longId),
			floor: statusLatency(shortId),
		});

		await new Promise((r) => setTimeout(r, smoke ? 500 : 8000)); // let the CF run drain before the index figures

		// (f) index: create latency 1 vs 16 shards, list latency by shard count and size, write throughput
		const createOn = (type) => async () => {
			const times = [];
			for (let i = 0; i < size.creates / 2; i++) times.push((await timed(() => post('/ours/create', { type, params: { steps: 0 } }))).ms);
			return median(times);
		};
		await measure('index: create latency p50, type on 1 shard (ours) vs 16 shards (as "peer")', 'ms', { ours: createOn('bench'), cf: createOn('bench16') });
		let seeded = 0;
		for (const total of size.index) {
			for (const type of ['ix1', 'ix4', 'ix16']) await post('/index/seed', { type, count: total - seeded, offset: seeded });
			seeded = total;
			const list = (type) => async () => {
				const times = [];
				for (let i = 0; i < 10; i++) times.push((await timed(() => get(`/index/list/${type}`))).ms);
				return median(times);
			};
			await measure(`index: list latency (limit 50, status=waiting), ${total} entries: 1 shard (ours) / 4 (cf col) / 16 (floor col)`, 'ms', {
				ours: list('ix1'),
				cf: list('ix4'),
				floor: list('ix16'),
			});
			// Search attributes on the one shard of ix1 (every entry has three): each shape against the status listing of the same run.
			const shape = (name) => async () => {
				const times = [];
				for (let i = 0; i < 10; i++) times.push((await timed(() => get(`/index/list-attr/${name}`))).ms);
				return median(times);
			};
			for (const name of ['customer', 'customer+status', 'vip+status', 'in-list', 'range-by-amount', 'range-by-created', 'order-by-amount']) {
				await measure(`attributes: list latency (limit 50) ${name}, ${total} entries in 1 shard (ours) vs status=waiting (cf col)`, 'ms', { ours: shape(name), cf: shape('status') });
			}
			await measure(`attributes: count by vip (status=waiting), ${total} entries in 1 shard (ours) vs status=waiting list (cf col)`, 'ms', {
				ours: async () => {
					const times = [];
					for (let i = 0; i < 10; i++) times.push((await timed(() => get('/index/count-attr'))).ms);
					return median(times);
				},
				cf: shape('status'),
			});
		}
		// Run metrics (docs/dashboard.md): 10,000 runs of the last day in a 4-shard type. The list with a
		// metrics read running beside it (ours) vs the list alone (floor col), and the metrics read itself.
		await post('/index/seed-recent', { type: 'ix4', count: size.metricsRuns });
		const listAll = async () => (await timed(() => get('/index/list-all/ix4'))).ms;
		const listTimes = (withMetrics) => async () => {
			const times = [];
			for (let i = 0; i < 10; i++) {
				const [t] = await Promise.all([listAll(), withMetrics ? get('/index/metrics/ix4') : null]);
				times.push(t);
			}
			return median(times);
		};
		await measure(`run metrics: list latency (limit 50) of a 4-shard type with ${size.metricsRuns} runs of the last day, while its metrics are read (ours) vs alone (floor col)`, 'ms', {
			ours: listTimes(true),
			floor: listTimes(false),
		});
		await measure(`run metrics: GET metrics of that type (ours) vs its list page (floor col)`, 'ms', {
			ours: async () => {
				const times = [];
				for (let i = 0; i < 10; i++) times.push((await timed(() => get('/index/metrics/ix4'))).ms);
				return median(times);
			},
			floor: listTimes(false),
		});
		const writeCost = (counted) => async () => {
			const { ms } = await post('/index/write-metrics-cost', { type: 'ix1', count: size.writes, counted });
			return size.writes / (Math.max(ms, 1) / 1000);
		};
		await measure(`run metrics: index writes/s one at a time, counted (ours) vs a rebalance's uncounted copies (floor col)`, 'writes/s', { ours: writeCost(true), floor: writeCost(false) }, 'higher');

		const writes = (type) => async () => {
			const { ms } = await post('/index/write-throughput', { type, count: size.writes });
			return size.writes / (Math.max(ms, 1) / 1000);
		};
		await measure(`index: write throughput, ${size.writes} entries, 1 shard (ours) vs 16 shards (cf col)`, 'writes/s', { ours: writes('ix1'), cf: writes('ix16') }, 'higher');

		// Production limits: the peak heap of a replay after a crash, then of archiving the instance, on Node
		// with the heap capped at an isolate's 128 MB (the harness of test/harness/): flat in the history's
		// size, not linear. Up to 100 MiB in results of 100 KiB; ~1 GB in results of 1 MB.
		for (const mib of size.replayHistoryMiB) {
			const shape = mib <= 100 ? { results: Math.round((mib * 1024) / 100), bytes: 100 * 1024 } : { results: Math.round(mib), bytes: 1_000_000 };
			/** @type {{ replay: number[], archive: number[] }} */
			const seen = { replay: [], archive: [] };
			const once = async () => {
				const { code, died, result } = await runReplayHarness({ heapMiB: 128, ...shape });
				if (code !== 0 || !result) throw new Error(`the production-limits harness failed: ${died}`);
				seen.archive.push(result.archive.peakHeapMiB);
				return result.peakHeapMiB;
			};
			await measure(`production limits: peak heap of a replay after a crash, ${mib} MiB of history (Node, heap capped at 128 MB)`, 'MiB', { ours: once });
			const archived = { median: median(seen.archive), min: Math.min(...seen.archive), max: Math.max(...seen.archive), samples: seen.archive };
			results.push({ name: `production limits: peak heap of archiving and deleting it (${mib} MiB of history, chunks of 4 MiB)`, unit: 'MiB', better: 'lower', ours: archived });
		}

		// Production limits: the most subrequests one invocation makes in a run of fetch steps (one fetch
		// each): a pass continues in a new invocation after SHARDFLOW_INVOCATION_STEPS (1,000) attempts.
		/** @type {number[]} */
		const invocationsPerRun = [];
		await measure(`production limits: most subrequests in one invocation, a run of ${size.fetchSteps} fetch steps`, 'subrequests', {
			ours: async () => {
				const { id } = await post('/ours/create', { type: 'fetcher', params: { n: size.fetchSteps } });
				await oursDoneOverHttp(id);
				const { perInvocation } = await get(`/ours/subrequests/${id}`);
				invocationsPerRun.push(perInvocation.filter((n) => n > 0).length);
				return Math.max(...perInvocation);
			},
		});
		results.push({ name: `production limits: invocations that made subrequests in that run`, unit: 'invocations', better: 'lower', ours: { median: median(invocationsPerRun), min: Math.min(...invocationsPerRun), max: Math.max(...invocationsPerRun), samples: invocationsPerRun } });

		// Production limits: one list request's heap in the API Worker, a page of 1000 over 256 index shards.
		/** @type {number[]} */
		const listingRows = [];
		await measure('production limits: heap of one list request, limit 1000 over 256 shards of 1000 entries (Node, in-memory shards)', 'MiB', {
			ours: async () => {
				const { code, died, result } = await runListingHarness({ shards: 256, perShard: size.listingPerShard, limit: 1000 });
				if (code !== 0 || !result) throw new Error(`the listing harness failed: ${died}`);
				listingRows.push(result.rowsRequested);
				return result.heapMiB;
			},
		});
		results.push({ name: 'production limits: rows that list request asks the shards for', unit: 'rows', better: 'lower', ours: { median: median(listingRows), min: Math.min(...listingRows), max: Math.max(...listingRows), samples: listingRows } });

		await streamRows();
		const cost = await costRows();

		// Storage cost
		const ours = await post('/size/ours', { steps: size.storageSteps });
		const floor = await post('/size/floor', { steps: size.storageSteps });
		// What an instance keeps before its first step: its schema (the instance role's tables, docs/decisions.md
		// "One migration chain, each role its own tables") and the rows of a run of 0 steps.
		results.push({ name: 'bytes an instance of 0 steps keeps (databaseSize: its schema and rows)', unit: 'B', better: 'lower', ours: { median: ours.emptyBytes, min: NaN, max: NaN } });
		const index = await post('/size/index', { type: 'ix1' });
		const retained = await post('/size/after-retention', { steps: size.storageSteps });
		const storage = {
			oursBytesPerStep: (ours.fullBytes - ours.emptyBytes) / size.storageSteps,
			floorBytesPerStep: (floor.fullBytes - floor.emptyBytes) / size.storageSteps,
			indexBytesPerEntry: index.bytes / Math.max(1, index.entries),
			// A deleted instance's object keeps no data (deleteAll): no table, no row, no alarm. What
			// databaseSize still reports is SQLite's first page of an empty database, which an object that
			// was never written reports too (docs/decisions.md "Bytes left after a deletion").
			bytesLeftAfterRetention: retained.leftBytes,
			schemaObjectsLeftAfterRetention: retained.leftSchemaObjects,
			bytesBeforeRetention: retained.fullBytes,
			bytesOfNeverWrittenObject: retained.neverWrittenBytes,
			cf: 'not readable: the local Workflows engine keeps its storage private',
		};


		report(storage, cost);
	}
} catch (error) {
	// What the server said last: a crash of workerd, or a request it never saw (the row's error alone cannot tell).
	console.error(`bench: failed; wrangler dev's last output:\n${server.output().slice(-4000)}`);
	throw error;
} finally {
	await server.stop();
}

function report(storage, cost) {
	const fmt = (v) => (v === undefined || Number.isNaN(v) ? '-' : v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(2) : v.toFixed(4));
	const cell = (r) => (r ? `${fmt(r.median)}${Number.isFinite(r.min) ? ` (${fmt(r.min)}-${fmt(r.max)})` : ''}` : '-');
	const ratio = (a, b, better) => (a && b && a.median > 0 && b.median > 0 ? `${fmt(better === 'higher' ? a.median / b.median : b.median / a.median)}x` : '-');
	const header = ['measurement', 'unit', 'ours', 'cf workflows', 'floor', 'ours vs cf', 'ours vs floor'];
	const rows = results.map((r) => [r.name, r.unit, cell(r.ours), cell(r.cf), cell(r.floor), ratio(r.ours, r.cf, r.better), r.floor && r.floor.median > 0 ? `${fmt(r.ours.median / r.floor.median)}x of floor` : '-']);
	// `--only cost` measures no row of this table: none is printed.
	const md = results.length === 0 ? '' : [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
	const versions = {
		node: process.version,
		wrangler: JSON.parse(readFileSync(join(root, 'node_modules/wrangler/package.json'), 'utf8')).version,
		workerd: JSON.parse(readFileSync(join(root, 'node_modules/workerd/package.json'), 'utf8')).version,
		cpus: availableParallelism(),
		cpuModel: cpus()[0]?.model ?? 'unknown',
		localTraceCollector: collector,
	};
	const notes = [
		'"ours vs cf" is how many times better ours is (higher is better for us); medians of the repetitions, (min-max) in brackets.',
		'Index rows reuse the columns: see each row name for what ours / cf / floor mean there.',
	];
	if (results.length === 0) notes.length = 0; // `--only cost`: notes on a table not printed
	if (storage) notes.push(
		`Storage: ours ${fmt(storage.oursBytesPerStep)} B/step, floor ${fmt(storage.floorBytesPerStep)} B/step, index ${fmt(storage.indexBytesPerEntry)} B/entry; left per finished instance after retention: ${fmt(storage.schemaObjectsLeftAfterRetention)} tables and no rows; databaseSize ${fmt(storage.bytesLeftAfterRetention)} B, an empty SQLite database's first page (of ${fmt(storage.bytesBeforeRetention)} B before; an object never written reports ${fmt(storage.bytesOfNeverWrittenObject)} B; see docs/decisions.md "Bytes left after a deletion"); cf: ${storage.cf}.`,
	);
	const costMd = cost?.markdown ?? '';
	const machine = `node ${versions.node}, wrangler ${versions.wrangler}, workerd ${versions.workerd}, ${versions.cpus} CPUs (${versions.cpuModel}), wrangler's local trace collector ${collector}`;
	// Parts a run did not measure (`--only cost` has no table above its Cost section) are left out, not printed empty.
	const parts = (/** @type {string[]} */ ...xs) => xs.filter((x) => x !== '').join('\n\n');
	console.log(`\n${parts(md, notes.join('\n'), costMd, machine)}`);
	mkdirSync(outDir, { recursive: true });
	const stamp = new Date().toISOString();
	writeFileSync(join(outDir, `${resultName}.json`), JSON.stringify({ stamp, smoke, size, versions, storage, cost: cost?.figures, costTargets: cost?.targets, results }, null, 2));
	writeFileSync(
		join(outDir, `${resultName}.md`),
		`${parts(`# Benchmark results (${stamp}${smoke ? ', smoke' : ''})`, md, notes.map((n) => `- ${n}`).join('\n'), costMd, machine)}\n`,
	);
}
