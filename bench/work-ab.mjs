#!/usr/bin/env node
// `npm run bench:work -- --base <rev>`: the work of the bench's throughput scenario (`--runs` instances of
// `--steps` trivial steps, all created at once, each polled to its end: bench/run.mjs "throughput"), on this tree
// and on another commit of it, counted rather than timed: SQL statements and rows, key-value calls, transactions,
// alarm writes, alarm handlers and calls into the objects, per run, and every kind of call whose count differs
// (bench/work-meter.ts, through bench/work-entry.ts). On a shared machine a timed A/B moves by a few per cent
// either way (`npm run bench:ab`); these counts do not, so they say whether the hot path grew, and where. The CPU
// time of each side's workerd over a repetition (Linux /proc, utime + stime) and the throughput are shown beside
// them, as measured: both are timing, with their ranges.
//
//   npm run bench:work -- --base <rev> [--runs 100] [--steps 10] [--reps 3] [--var KEY=VALUE ...] [--out FILE.md]
//
// The base is checked out as `npm run bench:ab` does (bench/.ab/<rev>, ignored by git), with this tree's
// work-entry.ts and work-meter.ts beside its bench/worker.ts: the same meter counts both builds.
import { jsonClient } from './lib/json-client.mjs';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { baseSide, reportTable, stopSides } from './lib/sides.mjs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startDevServer } from './lib/dev-server.mjs';
import { inTurn } from './lib/turns.mjs';
import { timed } from './lib/stats.mjs';
import { workDone, workTables } from './lib/work-table.mjs';

const root = resolve(import.meta.dirname, '..');
const whole = (name, value) => {
	if (!/^[1-9]\d*$/.test(value)) throw new Error(`--${name} takes a positive whole number, not ${JSON.stringify(value)}`);
	return Number(value);
};
/** @type {{ base: string, runs: number, steps: number, reps: number, vars: Record<string, string>, out?: string }} */
let options;
try {
	const { values } = parseArgs({
		options: { base: { type: 'string' }, runs: { type: 'string', default: '100' }, steps: { type: 'string', default: '10' }, reps: { type: 'string', default: '3' }, var: { type: 'string', multiple: true, default: [] }, out: { type: 'string' } },
		strict: true,
		allowPositionals: false,
	});
	if (!values.base) throw new Error('--base <rev> is required');
	for (const v of values.var) if (!/^[A-Z][A-Z0-9_]*=.*$/.test(v)) throw new Error(`--var takes KEY=VALUE, not ${JSON.stringify(v)}`);
	const vars = Object.fromEntries(values.var.map((v) => [v.slice(0, v.indexOf('=')), v.slice(v.indexOf('=') + 1)]));
	options = { base: values.base, runs: whole('runs', values.runs), steps: whole('steps', values.steps), reps: whole('reps', values.reps), vars, out: values.out };
} catch (error) {
	console.error(`npm run bench:work: ${error instanceof Error ? error.message : error}\nusage: npm run bench:work -- --base <rev> [--runs N] [--steps N] [--reps N] [--var KEY=VALUE ...] [--out FILE.md]`);
	process.exit(2);
}
// wrangler's local trace collector off on both sides: a span per storage statement is work of its own.
process.env.X_LOCAL_OBSERVABILITY = 'false';

const { baseRev, headRev, baseDir, remove: removeBase } = baseSide(root, options.base, 'work-');
for (const file of ['work-entry.ts', 'work-meter.ts']) copyFileSync(join(root, 'bench', file), join(baseDir, 'bench', file));

const entry = 'bench/work-entry.ts';
const servers = {
	head: await startDevServer({ configs: ['bench/wrangler.jsonc'], vars: options.vars, entry }),
	base: await startDevServer({ configs: ['bench/wrangler.jsonc'], vars: options.vars, entry, cwd: baseDir }),
};
const clients = Object.fromEntries(Object.entries(servers).map(([side, server]) => [side, jsonClient(server.url)]));
/** @param {'head' | 'base'} side */
const reading = async (side) => /** @type {Record<string, [number, number, number]>} */ (await (await fetch(`${servers[side].url}/__work/reading`)).json());
/** A reading once the counts stand still for a second: the runs' index deliveries are done. */
const settled = async (side) => {
	let last = JSON.stringify(await reading(side));
	for (;;) {
		await new Promise((r) => setTimeout(r, 1000));
		const now = JSON.stringify(await reading(side));
		if (now === last) return JSON.parse(now);
		last = now;
	}
};
/** CPU ms (user + system) of the workerd processes of a server's process group so far (Linux; NaN elsewhere). */
const cpuMs = (group) => {
	if (!existsSync('/proc/self/stat')) return NaN;
	let ticks = 0;
	for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
		try {
			const [, comm, rest] = /^\d+ \((.*)\) (.*)$/s.exec(readFileSync(`/proc/${pid}/stat`, 'utf8')) ?? [];
			const fields = rest?.split(' ') ?? [];
			if (comm === 'workerd' && Number(fields[2]) === group) ticks += Number(fields[11]) + Number(fields[12]);
		} catch {} // gone meanwhile
	}
	return ticks * (1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })));
};
/** @param {'head' | 'base'} side */
const scenario = (side) => Promise.all(Array.from({ length: options.runs }, () => clients[side].post('/ours/run', { params: { steps: options.steps } })));

const work = { head: /** @type {any[]} */ ([]), base: /** @type {any[]} */ ([]) };
const cpu = { head: /** @type {number[]} */ ([]), base: /** @type {number[]} */ ([]) };
const throughput = { head: /** @type {number[]} */ ([]), base: /** @type {number[]} */ ([]) };
try {
	console.error(`bench:work: head ${headRev} vs base ${baseRev}, ${options.runs} runs x ${options.steps} steps, ${options.reps} repetitions`);
	for (const side of /** @type {const} */ (['head', 'base'])) await scenario(side); // warm: the index shard's tables, the isolate's code
	for (let rep = 0; rep < options.reps; rep++) {
		for (const side of inTurn(/** @type {const} */ (['head', 'base']), rep)) {
			const before = await settled(side);
			const cpuBefore = cpuMs(servers[side].pid);
			const { ms } = await timed(() => scenario(side));
			work[side].push(workDone(before, await settled(side)));
			cpu[side].push((cpuMs(servers[side].pid) - cpuBefore) / options.runs);
			throughput[side].push((options.runs * options.steps) / (ms / 1000));
			console.error(`  ${side}: ${ms.toFixed(0)} ms`);
		}
	}
	const table = [
		`# Work per run: head against ${options.base} (${new Date().toISOString()})`,
		'',
		`head ${headRev}, base ${baseRev}; the bench's throughput scenario: ${options.runs} instances x ${options.steps} trivial steps created at once, each polled to its end, their index deliveries included; Worker variables on both sides: ${Object.keys(options.vars).length ? Object.entries(options.vars).map(([k, v]) => `${k}=${v}`).join(', ') : 'none (the table layout)'}; ${options.reps} repetitions, sides alternating; counted by bench/work-meter.ts, medians per run (the range when repetitions differ). The CPU and throughput rows are timing: noise on a shared machine.`,
		'',
		...workTables({
			runs: options.runs,
			head: work.head,
			base: work.base,
			extra: [
				{ name: "workerd CPU time per run (the server's, over the repetition)", unit: 'ms', head: cpu.head, base: cpu.base },
				{ name: 'throughput', unit: 'steps/s', head: throughput.head, base: throughput.base },
			],
		}),
		'',
	].join('\n');
	reportTable(table, options.out);
} finally {
	await stopSides(servers, removeBase);
}
