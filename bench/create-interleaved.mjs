// `npm run bench:create`: create latency only, ours against Cloudflare's local engine and the floor, in one
// `wrangler dev` (collector off), interleaved in small blocks whose order reverses every other block.
//
// The full bench measures each engine's 200 creates in one block per repetition (until 2026-11-27 always in the order ours, cf,
// floor; now rotated, bench/lib/turns.mjs). Whichever kind runs first after a pause comes out a few per cent slower (measured with two copies of ours:
// each was ~5% slower whenever it went first), so a long comparison of a small difference alternates the order.
//
//   npm run bench:create [-- --blocks 30] [--per 20] [--out FILE.md] [--smoke]
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startDevServer } from './lib/dev-server.mjs';

/** @type {{ blocks: string, per: string, out?: string, smoke: boolean }} */
let options;
try {
	options = /** @type {typeof options} */ (
		parseArgs({ options: { blocks: { type: 'string', default: '30' }, per: { type: 'string', default: '20' }, out: { type: 'string' }, smoke: { type: 'boolean', default: false } }, strict: true, allowPositionals: false }).values
	);
	for (const key of /** @type {const} */ (['blocks', 'per'])) {
		if (!/^[1-9]\d*$/.test(options[key])) throw new Error(`--${key} takes a positive whole number, not ${JSON.stringify(options[key])}`);
	}
} catch (error) {
	console.error(`npm run bench:create: ${error instanceof Error ? error.message : error}\nusage: npm run bench:create [-- --blocks N] [--per N] [--out FILE.md] [--smoke]`);
	process.exit(2);
}
const blocks = options.smoke ? 2 : Number(options.blocks);
const per = options.smoke ? 3 : Number(options.per);

const PATHS = { ours: '/ours/create', cf: '/cf/create', floor: '/floor/run' };
const KINDS = /** @type {(keyof typeof PATHS)[]} */ (Object.keys(PATHS));

const server = await startDevServer({ configs: ['bench/wrangler.jsonc'] });
try {
	const create = async (/** @type {keyof typeof PATHS} */ kind) => {
		const started = performance.now();
		const response = await fetch(server.url + PATHS[kind], { method: 'POST', body: JSON.stringify({ params: { steps: 0 } }), headers: { 'content-type': 'application/json' } });
		const text = await response.text();
		if (!response.ok) throw new Error(`${PATHS[kind]} answered ${response.status}: ${text}`);
		return performance.now() - started;
	};
	// Warm every path: no figure pays for module loading or the first object of its class.
	for (let i = 0; i < (options.smoke ? 2 : 15); i++) for (const kind of KINDS) await create(kind);
	/** @type {Record<string, number[]>} */
	const times = Object.fromEntries(KINDS.map((kind) => [kind, []]));
	for (let block = 0; block < blocks; block++) {
		for (const kind of block % 2 ? [...KINDS].reverse() : KINDS) {
			for (let i = 0; i < per; i++) times[kind].push(await create(kind));
			await new Promise((resolve) => setTimeout(resolve, 300));
		}
	}
	const quantile = (/** @type {number[]} */ values, /** @type {number} */ q) => {
		const sorted = [...values].sort((a, b) => a - b);
		return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
	};
	const p = (/** @type {string} */ kind, /** @type {number} */ q) => quantile(times[kind], q);
	const lines = [
		`# Create latency, interleaved (${new Date().toISOString()})`,
		'',
		`${blocks} blocks of ${per} sequential creates of a run of 0 steps per kind, the order reversed every other block; one \`wrangler dev\`, collector off.`,
		'',
		'| kind | creates | p50 ms | p95 ms | p50 vs cf (below 1: faster) | p95 vs cf | p50 vs floor |',
		'|---|---|---|---|---|---|---|',
		...KINDS.map((kind) =>
			`| ${kind} | ${times[kind].length} | ${p(kind, 0.5).toFixed(2)} | ${p(kind, 0.95).toFixed(2)} | ${(p(kind, 0.5) / p('cf', 0.5)).toFixed(3)} | ${(p(kind, 0.95) / p('cf', 0.95)).toFixed(3)} | ${(p(kind, 0.5) / p('floor', 0.5)).toFixed(3)} |`,
		),
	];
	console.log(lines.join('\n'));
	if (options.out) writeFileSync(options.out, `${lines.join('\n')}\n`);
} finally {
	await server.stop();
}
