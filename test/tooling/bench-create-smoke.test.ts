import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runRefused } from './bench-script.js';

const root = resolve(import.meta.dirname, '../..');

// Not a timed test: `npm run bench:create` (the interleaved create comparison docs/internals.md cites) still runs.
describe('npm run bench:create', () => {
	it('times every kind the same number of times, in blocks whose order alternates, into its table', () => {
		const out = mkdtempSync(join(tmpdir(), 'shardflow-bench-create-'));
		try {
			execFileSync(process.execPath, [join(root, 'bench/create-interleaved.mjs'), '--smoke', '--out', join(out, 'create.md')], { cwd: root, encoding: 'utf8', stdio: 'pipe' });
			const rows = readFileSync(join(out, 'create.md'), 'utf8').split('\n').filter((line) => /^\| (ours|cf|floor) \|/.test(line));
			expect(rows.map((row) => row.split('|').slice(1, 3).map((cell) => cell.trim()))).toEqual([['ours', '6'], ['cf', '6'], ['floor', '6']]);
			for (const row of rows) expect(Number(row.split('|')[3])).toBeGreaterThan(0);
		} finally {
			rmSync(out, { recursive: true, force: true });
		}
	}, 120_000);

	it('refuses a block count that is not a positive whole number, before starting anything', () => {
		const run = runRefused('create-interleaved.mjs', ['--blocks', '0']);
		expect(run.status).toBe(2);
		expect(run.stderr).toMatch(/^npm run bench:create: --blocks takes a positive whole number, not "0"\nusage: /);
	});
});
