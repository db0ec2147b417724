import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { workDone, workTables } from '../../bench/lib/work-table.mjs';

const root = resolve(import.meta.dirname, '../..');
type Reading = Record<string, [number, number, number]>;

describe("npm run bench:work's tables", () => {
	it('takes the work between two readings as their difference, leaving out what did nothing', () => {
		const before: Reading = { 'sql SELECT 1': [4, 4, 0], 'rpc create': [2, 0, 0], 'kv.get i': [1, 0, 0] };
		const after: Reading = { 'sql SELECT 1': [10, 10, 0], 'rpc create': [2, 0, 0], 'kv.get i': [1, 0, 0], 'storage.setAlarm': [3, 0, 3] };
		expect(workDone(before, after)).toEqual({ 'sql SELECT 1': [6, 6, 0], 'storage.setAlarm': [3, 0, 3] });
	});

	it('sums each kind per run and lists only the calls whose counts differ between the sides', () => {
		const head: Reading = { 'sql INSERT INTO steps': [20, 0, 20], 'sql SELECT x': [2, 6, 0], 'kv.put s:': [4, 0, 4], 'storage.setAlarm': [4, 0, 4], 'rpc create': [2, 0, 0], 'rpc alarm': [0, 0, 0], 'timer setTimeout': [6, 0, 0] };
		const base: Reading = { ...head, 'sql INSERT INTO metrics': [2, 2, 2] };
		const table = workTables({ runs: 2, head: [head], base: [base] }).join('\n');
		expect(table).toContain('| SQL statements | 11 | 12 | -1 |');
		expect(table).toContain('| SQL rows written | 10 | 11 | -1 |');
		expect(table).toContain('| key-value rows written | 2 | 2 | 0 |');
		expect(table).toContain('| alarm writes (setAlarm, deleteAlarm) | 2 | 2 | 0 |');
		expect(table).toContain('| calls into the objects (RPC methods, the alarm included) | 1 | 1 | 0 |');
		expect(table).toMatch(/\| timers set [^|]+ \| 3 \| 3 \| 0 \|/);
		expect(table).toContain('| `sql INSERT INTO metrics` | 0 / 0 / 0 | 1 / 1 / 1 |');
		expect(table).not.toContain('`sql INSERT INTO steps`');
	});

	it('gives the median of the repetitions per run, and their range when they differ', () => {
		const rep = (n: number): Reading => ({ 'sql SELECT x': [n, 0, 0] });
		const table = workTables({ runs: 10, head: [rep(30), rep(10), rep(20)], base: [rep(20), rep(20), rep(20)] }).join('\n');
		expect(table).toContain('| SQL statements | 2 (1-3) | 2 | 0 |');
	});

	it('says so when both sides did the same work', () => {
		const same: Reading = { 'sql SELECT x': [5, 5, 0] };
		expect(workTables({ runs: 1, head: [same], base: [same] }).join('\n')).toContain('(none: both sides did the same work)');
	});

	it('refuses a bad option in one line, before checking anything out or starting a server', () => {
		for (const args of [['--base', 'HEAD', '--runs', '0'], ['--runs', '5'], ['--base', 'HEAD', '--var', 'lower=1'], ['--base', 'HEAD', '--rep', '2']]) {
			const run = spawnSync(process.execPath, [join(root, 'bench/work-ab.mjs'), ...args], { cwd: root, encoding: 'utf8', timeout: 20_000 });
			expect(run.status).toBe(2);
			expect(run.stderr).toMatch(/^npm run bench:work: .+\nusage: /);
		}
	});
});
