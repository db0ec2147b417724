// The tables of `npm run bench:work` (bench/work-ab.mjs): what a scenario's objects did per run on each side,
// from the readings of bench/work-meter.ts ("sql <statement>", "kv.put <prefix>", "rpc <method>", ...: each
// [calls, rows read, rows written]). Pure, so that its arithmetic is tested (test/tooling/work-table.test.ts).
import { median } from './stats.mjs';

/** @typedef {Record<string, [number, number, number]>} WorkReading */

/**
 * What was done between two readings of the same server (keys that did nothing left out).
 * @param {WorkReading} before @param {WorkReading} after @returns {WorkReading}
 */
export function workDone(before, after) {
	/** @type {WorkReading} */
	const done = {};
	for (const [what, [calls, read, written]] of Object.entries(after)) {
		const [c0, r0, w0] = before[what] ?? [0, 0, 0];
		if (calls !== c0 || read !== r0 || written !== w0) done[what] = [calls - c0, read - r0, written - w0];
	}
	return done;
}

/** The summary rows: a label and what it adds up from a reading (one repetition's work). */
const SUMMARY = /** @type {const} */ ([
	['SQL statements', (/** @type {WorkReading} */ r) => sum(r, 'sql ', 0)],
	['SQL rows read', (r) => sum(r, 'sql ', 1)],
	['SQL rows written', (r) => sum(r, 'sql ', 2)],
	['key-value calls', (r) => sum(r, 'kv.', 0)],
	['key-value rows read', (r) => sum(r, 'kv.', 1)],
	['key-value rows written', (r) => sum(r, 'kv.', 2)],
	['transactions (transactionSync)', (r) => sum(r, 'storage.transactionSync', 0)],
	['alarm writes (setAlarm, deleteAlarm)', (r) => sum(r, 'storage.setAlarm', 0) + sum(r, 'storage.deleteAlarm', 0)],
	['alarm handlers run', (r) => sum(r, 'rpc alarm', 0)],
	['calls into the objects (RPC methods, the alarm included)', (r) => sum(r, 'rpc ', 0)],
	["timers set (setTimeout; the whole isolate's, the bench's polling included)", (r) => sum(r, 'timer ', 0)],
]);

/** @param {WorkReading} reading @param {string} prefix @param {0 | 1 | 2} column */
function sum(reading, prefix, column) {
	let total = 0;
	for (const [what, count] of Object.entries(reading)) if (what === prefix || what.startsWith(prefix)) total += count[column];
	return total;
}

const fmt = (/** @type {number} */ v) => (Number.isInteger(v) ? String(v) : v.toFixed(2));
/** The median of the repetitions per run, with their range when they differ. */
function perRun(/** @type {number[]} */ values, /** @type {number} */ runs) {
	const [lo, mid, hi] = [Math.min(...values), median(values), Math.max(...values)].map((v) => v / runs);
	return { value: mid, text: lo === hi ? fmt(mid) : `${fmt(mid)} (${fmt(lo)}-${fmt(hi)})` };
}

/**
 * The markdown tables: per run, each side's work summed by kind, then every kind of call whose count differs
 * between the sides (what grew or shrank), each as the median of the repetitions (the range when they differ).
 * @param {{ runs: number, head: WorkReading[], base: WorkReading[], extra?: { name: string, head: number[], base: number[], unit?: string }[] }} work
 *   `head`, `base`: one reading of the work done per repetition; `extra`: measured rows (CPU time, throughput) shown as they are.
 * @returns {string[]}
 */
export function workTables({ runs, head, base, extra = [] }) {
	const lines = ['| per run | head | base | head - base |', '|---|---|---|---|'];
	for (const [label, of] of SUMMARY) {
		const [h, b] = [perRun(head.map(of), runs), perRun(base.map(of), runs)];
		lines.push(`| ${label} | ${h.text} | ${b.text} | ${fmt(h.value - b.value)} |`);
	}
	for (const row of extra) {
		const [h, b] = [perRun(row.head, 1), perRun(row.base, 1)];
		lines.push(`| ${row.name}${row.unit ? ` (${row.unit})` : ''} | ${h.text} | ${b.text} | ${fmt(h.value - b.value)} |`);
	}
	lines.push('', '| what (calls / rows read / rows written per run) | head | base |', '|---|---|---|');
	const kinds = [...new Set([...head, ...base].flatMap((r) => Object.keys(r)))].sort();
	let differing = 0;
	for (const what of kinds) {
		const side = (/** @type {WorkReading[]} */ readings) => [0, 1, 2].map((column) => perRun(readings.map((r) => r[what]?.[column] ?? 0), runs));
		const [h, b] = [side(head), side(base)];
		if (h.every((c, i) => c.value === b[i].value)) continue;
		differing++;
		lines.push(`| \`${what.replace(/\|/g, '\\|')}\` | ${h.map((c) => c.text).join(' / ')} | ${b.map((c) => c.text).join(' / ')} |`);
	}
	if (differing === 0) lines.push('| (none: both sides did the same work) | | |');
	return lines;
}
