import { describe, expect, it } from 'vitest';
import { runRefused, withSmokeRun } from './bench-script.js';

// Not a timed test: it only proves that `npm run bench` still runs end to end
// (tiny sizes) and reports a figure for every engine, so the benchmark cannot rot.
describe('npm run bench', () => {
	it('runs its smoke sizes against our engine, Cloudflare Workflows and the floor, and writes results', () => {
		withSmokeRun('run.mjs', (read) => {
			const results = JSON.parse(read('smoke.json'));
			expect(results.versions).toMatchObject({ wrangler: expect.any(String), workerd: expect.any(String), cpus: expect.any(Number) });
			const marginal = results.results.find((r: { name: string }) => r.name.startsWith('marginal'));
			// Tiny sizes under a loaded test run are noise: only check that every engine produced a figure.
			for (const engine of ['ours', 'cf', 'floor']) expect(Number.isFinite(marginal[engine].median)).toBe(true);
			const status = results.results.find((r: { name: string }) => r.name.startsWith('status latency'));
			for (const engine of ['ours', 'floor']) expect(Number.isFinite(status[engine].median)).toBe(true);
			expect(read('smoke.md')).toContain('| measurement |');
		});
		// A safety net, not a target: the smoke run took 135 s on a loaded 2-core machine with this round's rows.
	}, 420_000);

	it('refuses an option it does not know, or a collector other than on/off, in one line and before starting anything', () => {
		for (const args of [['--colector', 'off'], ['--collector', 'ON'], ['--collector']]) {
			const run = runRefused('run.mjs', args);
			expect(run.status).toBe(2);
			expect(run.stderr).toMatch(/^npm run bench: .+\nusage: /);
			expect(run.stderr).not.toMatch(/\n\s+at /);
		}
	});
});
