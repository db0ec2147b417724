import { describe, expect, it } from 'vitest';
import { runRefused, withSmokeRun } from './bench-script.js';

// Not a timed test: `npm run bench:capacity` still runs end to end at tiny sizes, and its overloaded
// shard loses no entry (docs/capacity.md "When a shard is saturated" rests on that row).
describe('npm run bench:capacity', () => {
	it('runs its smoke sizes, and every run of the overload rows ends with its final status in the index', () => {
		withSmokeRun('capacity.mjs', (read) => {
			const results = JSON.parse(read('capacity-smoke.json'));
			for (const phase of ['light', 'burst', 'flooded']) expect(results.overloads[phase]).toMatchObject({ created: results.overloads[phase].n, lost: 0 });
			expect(results.rows.map((r: { section: string }) => r.section)).toEqual(
				expect.arrayContaining(['index write, in process', 'index write, over RPC', 'listing, fan-out', 'listing, one shard', 'hot concurrency key (limit 10)', 'per-second schedule']),
			);
			expect(read('capacity-smoke.md')).toContain('| section | measurement |');
		});
		// A safety net, not a target: the smoke run took ~70 s beside a full bench on two cores.
	}, 420_000);

	it('refuses an option it does not know in one line, before starting anything', () => {
		const run = runRefused('capacity.mjs', ['--colector', 'off']);
		expect(run.status).toBe(2);
		expect(run.stderr).toMatch(/^npm run bench:capacity: .+\nusage: /);
	});
});
