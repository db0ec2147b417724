#!/usr/bin/env node
// `npm run bench:profile -- --base <rev>`: where workerd spends its CPU on long sequential runs, this tree against
// another commit of it. Each side is served by its own `wrangler dev` of bench/wrangler.jsonc (as bench:ab does), and
// profiled through the DevTools protocol its inspector port serves (Profiler.start / Profiler.stop over the WebSocket
// that http://127.0.0.1:<inspector>/json names) while it runs `--runs` runs of `--steps` trivial steps, one after
// another; the sides alternate `--rounds` times. Prints the self time of every function, summed over the rounds, per
// step, both sides side by side, largest difference first: what a step costs more (or less) in one build than the other.
// `--steps 0` profiles runs without steps (a create and its end, index delivery included) and prints µs per run instead.
//
//   npm run bench:profile -- --base <rev> [--steps 2000] [--runs 10] [--rounds 2] [--var KEY=VALUE ...] [--top 40] [--save DIR] [--out FILE.md]
//
// `--save DIR` keeps each profile (DIR/head-1.cpuprofile, ...: Chrome DevTools' Performance panel opens them).
import { jsonClient } from './lib/json-client.mjs';
import { writeFileSync } from 'node:fs';
import { baseSide, reportTable, stopSides } from './lib/sides.mjs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, startDevServer } from './lib/dev-server.mjs';
import { createRequire } from 'node:module';

// The `ws` client wrangler itself depends on: Node's own WebSocket fails the inspector proxy's handshake (closed, 1006).
const WebSocket = createRequire(import.meta.url)('ws');

const root = resolve(import.meta.dirname, '..');
/** @type {{ base?: string, steps: string, runs: string, rounds: string, var: string[], top: string, out?: string, save?: string, 'head-inspector'?: string, 'base-inspector'?: string }} */
let options;
try {
	options = /** @type {any} */ (
		parseArgs({
			options: {
				base: { type: 'string' }, steps: { type: 'string', default: '2000' }, runs: { type: 'string', default: '10' }, rounds: { type: 'string', default: '2' }, var: { type: 'string', multiple: true, default: [] }, top: { type: 'string', default: '40' }, out: { type: 'string' },
				'head-inspector': { type: 'string' }, 'base-inspector': { type: 'string' }, save: { type: 'string' },
			},
			strict: true,
			allowPositionals: false,
		}).values
	);
	if (!options.base) throw new Error('--base <rev> is required');
	if (!/^\d+$/.test(options.steps)) throw new Error(`--steps takes a whole number, not ${JSON.stringify(options.steps)}`);
	for (const name of /** @type {const} */ (['runs', 'rounds', 'top'])) if (!/^[1-9]\d*$/.test(options[name])) throw new Error(`--${name} takes a positive whole number, not ${JSON.stringify(options[name])}`);
	for (const v of options.var) if (!/^[A-Z][A-Z0-9_]*=.*$/.test(v)) throw new Error(`--var takes KEY=VALUE, not ${JSON.stringify(v)}`);
} catch (error) {
	console.error(`npm run bench:profile: ${error instanceof Error ? error.message : error}\nusage: npm run bench:profile -- --base <rev> [--steps N] [--runs N] [--rounds N] [--var KEY=VALUE ...] [--top N] [--head-inspector PORT] [--base-inspector PORT] [--save DIR] [--out FILE.md]`);
	process.exit(2);
}
const [steps, runs, rounds, top] = [Number(options.steps), Number(options.runs), Number(options.rounds), Number(options.top)];
const vars = Object.fromEntries(options.var.map((v) => [v.slice(0, v.indexOf('=')), v.slice(v.indexOf('=') + 1)]));
process.env.X_LOCAL_OBSERVABILITY = 'false';

// Its own directory (not bench:ab's bench/.ab/<rev>, which that script removes when it ends).
const { baseRev, headRev, baseDir, remove: removeBase } = baseSide(root, options.base, 'profile-');

/** One DevTools protocol session over the inspector's WebSocket. */
async function devtools(inspectorPort) {
	const targets = /** @type {{ webSocketDebuggerUrl?: string }[]} */ (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json());
	const target = targets.find((t) => t.webSocketDebuggerUrl);
	if (!target) throw new Error(`no debuggable target on inspector port ${inspectorPort}: ${JSON.stringify(targets)}`);
	const socket = new WebSocket(target.webSocketDebuggerUrl);
	await new Promise((done, fail) => {
		socket.once('open', done);
		socket.once('error', fail);
	});
	let next = 1;
	/** @type {Map<number, { done: (value: any) => void, fail: (error: Error) => void }>} */
	const waiting = new Map();
	socket.on('message', (data) => {
		const message = JSON.parse(String(data));
		const call = waiting.get(message.id);
		if (!call) return;
		waiting.delete(message.id);
		if (message.error) call.fail(new Error(`${message.error.message} (${message.error.code})`));
		else call.done(message.result);
	});
	return {
		/** @param {string} method @param {object} [params] */
		send: (method, params = {}) =>
			new Promise((done, fail) => {
				const id = next++;
				waiting.set(id, { done, fail });
				socket.send(JSON.stringify({ id, method, params }));
			}),
		close: () => socket.close(),
	};
}

/**
 * Self time in µs by function of a profile: its name and file (lines differ between two builds' bundles); an anonymous
 * function is named after the nearest named function above it in the call tree (`(anonymous in run)`), so that the
 * callbacks of two builds compare too.
 */
function selfTimes(profile) {
	const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
	/** @type {Map<number, number>} */
	const parents = new Map();
	for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
	const label = (id) => {
		const { callFrame } = nodes.get(id);
		const file = callFrame.url.split('/').pop() || callFrame.url;
		if (callFrame.functionName) return `${callFrame.functionName} ${file}`.trim();
		for (let up = parents.get(id); up !== undefined; up = parents.get(up)) {
			const named = nodes.get(up).callFrame.functionName;
			if (named) return `(anonymous in ${named}) ${file}`.trim();
		}
		return `(anonymous) ${file}`.trim();
	};
	/** @type {Map<string, number>} */
	const self = new Map();
	for (let i = 0; i < profile.samples.length; i++) {
		const name = label(profile.samples[i]);
		self.set(name, (self.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0));
	}
	return self;
}

const servers = {
	head: await startDevServer({ configs: ['bench/wrangler.jsonc'], vars, inspectorPort: Number(options['head-inspector'] ?? (await freePort())) }),
	base: await startDevServer({ configs: ['bench/wrangler.jsonc'], vars, cwd: baseDir, inspectorPort: Number(options['base-inspector'] ?? (await freePort())) }),
};
try {
	/** @type {Record<'head' | 'base', Map<string, number>>} */
	const totals = { head: new Map(), base: new Map() };
	/** @type {Record<'head' | 'base', number>} */
	const stepsRun = { head: 0, base: 0 };
	for (const side of /** @type {const} */ (['head', 'base'])) await jsonClient(servers[side].url).post('/ours/run', { params: { steps } });
	for (let round = 0; round < rounds; round++) {
		/** @type {('head' | 'base')[]} */
		const order = round % 2 === 0 ? ['head', 'base'] : ['base', 'head'];
		for (const side of order) {
			const client = jsonClient(servers[side].url);
			const session = await devtools(servers[side].inspectorPort);
			await session.send('Profiler.enable');
			await session.send('Profiler.setSamplingInterval', { interval: 100 });
			await session.send('Profiler.start');
			for (let i = 0; i < runs; i++) {
				const { status } = await client.post('/ours/run', { params: { steps } });
				if (status !== 'completed') throw new Error(`${side}: a run ended ${status}`);
			}
			const { profile } = await session.send('Profiler.stop');
			await session.send('Profiler.disable');
			session.close();
			if (options.save) writeFileSync(join(resolve(options.save), `${side}-${round + 1}.cpuprofile`), JSON.stringify(profile));
			for (const [name, us] of selfTimes(profile)) totals[side].set(name, (totals[side].get(name) ?? 0) + us);
			stepsRun[side] += steps > 0 ? runs * steps : runs;
			console.error(`  round ${round + 1} ${side}: ${runs} runs of ${steps} steps profiled`);
		}
	}
	/** @type {Map<string, { head: number, base: number }>} */
	const byName = new Map();
	for (const side of /** @type {const} */ (['head', 'base'])) {
		for (const [name, us] of totals[side]) {
			const row = byName.get(name) ?? { head: 0, base: 0 };
			row[side] += us / stepsRun[side];
			byName.set(name, row);
		}
	}
	const sum = (side) => [...byName.values()].reduce((total, row) => total + row[side], 0);
	const busy = (side) => sum(side) - (byName.get('(idle)')?.[side] ?? 0);
	const fmt = (us) => us.toFixed(3);
	const unit = steps > 0 ? 'step' : 'run';
	const table = [
		`# CPU profile of workerd: head against ${options.base} (${new Date().toISOString()})`,
		'',
		`head ${headRev}, base ${baseRev}; Worker variables on both sides: ${options.var.length ? options.var.join(', ') : 'none (the table layout)'}; ${rounds} rounds per side of ${runs} sequential runs of ${steps} trivial steps, sides alternating; sampled every 100 µs. ${steps > 0 ? "Self time per step (µs): the profile's time in each function divided by the steps run (a run's fixed cost is spread over its steps)." : "Self time per run (µs): the profile's time in each function divided by the runs."}`,
		'',
		`Busy (all but idle): head ${fmt(busy('head'))}, base ${fmt(busy('base'))} µs per ${unit}.`,
		'',
		`| function (file) | head µs/${unit} | base µs/${unit} | head - base |`,
		'|---|---|---|---|',
		...[...byName]
			.sort((a, b) => Math.abs(b[1].head - b[1].base) - Math.abs(a[1].head - a[1].base))
			.slice(0, top)
			.map(([name, row]) => `| \`${name}\` | ${fmt(row.head)} | ${fmt(row.base)} | ${row.head - row.base >= 0 ? '+' : ''}${fmt(row.head - row.base)} |`),
		'',
	].join('\n');
	reportTable(table, options.out);
} finally {
	await stopSides(servers, removeBase);
}
