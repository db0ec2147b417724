import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

// Not a timed test: it only proves that `npm run bench` still runs end to end
// (tiny sizes) and reports a figure for every engine, so the benchmark cannot rot.
describe('npm run bench', () => {
	it('runs its smoke sizes against our engine, Cloudflare Workflows and the floor, and writes results', () => {
		const out = mkdtempSync(join(tmpdir(), 'shardflow-bench-'));
		try {
			execFileSync(process.execPath, [join(root, 'bench/run.mjs'), '--smoke', '--out', out], { cwd: root, encoding: 'utf8', stdio: 'pipe' });
			const results = JSON.parse(readFileSync(join(out, 'smoke.json'), 'utf8'));
			expect(results.versions).toMatchObject({ wrangler: expect.any(String), workerd: expect.any(String), cpus: expect.any(Number) });
			const marginal = results.results.find((r: { name: string }) => r.name.startsWith('marginal'));
			// Tiny sizes under a loaded test run are noise: only check that every engine produced a figure.
			for (const engine of ['ours', 'cf', 'floor']) expect(Number.isFinite(marginal[engine].median)).toBe(true);
			const status = results.results.find((r: { name: string }) => r.name.startsWith('status latency'));
			for (const engine of ['ours', 'floor']) expect(Number.isFinite(status[engine].median)).toBe(true);
			expect(readFileSync(join(out, 'smoke.md'), 'utf8')).toContain('| measurement |');
		} finally {
			rmSync(out, { recursive: true, force: true });
		}
		// A safety net, not a target: the smoke run took 135 s on a loaded 2-core machine with this round's rows.
	}, 420_000);

	it('refuses an option it does not know, or a collector other than on/off, in one line and before starting anything', () => {
		for (const args of [['--colector', 'off'], ['--collector', 'ON'], ['--collector']]) {
			const run = spawnSync(process.execPath, [join(root, 'bench/run.mjs'), '--smoke', ...args], { cwd: root, encoding: 'utf8', timeout: 20_000 });
			expect(run.status).toBe(2);
			expect(run.stderr).toMatch(/^npm run bench: .+\nusage: /);
			expect(run.stderr).not.toMatch(/\n\s+at /);
		}
	});
});
