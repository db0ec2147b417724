import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

// Not a timed test: `npm run bench:capacity` still runs end to end at tiny sizes, and its overloaded
// shard loses no entry (docs/capacity.md "When a shard is saturated" rests on that row).
describe('npm run bench:capacity', () => {
	it('runs its smoke sizes, and every run of the overload rows ends with its final status in the index', () => {
		const out = mkdtempSync(join(tmpdir(), 'shardflow-capacity-'));
		try {
			execFileSync(process.execPath, [join(root, 'bench/capacity.mjs'), '--smoke', '--out', out], { cwd: root, encoding: 'utf8', stdio: 'pipe' });
			const results = JSON.parse(readFileSync(join(out, 'capacity-smoke.json'), 'utf8'));
			for (const phase of ['light', 'burst', 'flooded']) expect(results.overloads[phase]).toMatchObject({ created: results.overloads[phase].n, lost: 0 });
			expect(results.rows.map((r: { section: string }) => r.section)).toEqual(
				expect.arrayContaining(['index write, in process', 'index write, over RPC', 'listing, fan-out', 'listing, one shard', 'hot concurrency key (limit 10)', 'per-second schedule']),
			);
			expect(readFileSync(join(out, 'capacity-smoke.md'), 'utf8')).toContain('| section | measurement |');
		} finally {
			rmSync(out, { recursive: true, force: true });
		}
		// A safety net, not a target: the smoke run took ~70 s beside a full bench on two cores.
	}, 420_000);

	it('refuses an option it does not know in one line, before starting anything', () => {
		const run = spawnSync(process.execPath, [join(root, 'bench/capacity.mjs'), '--smoke', '--colector', 'off'], { cwd: root, encoding: 'utf8', timeout: 20_000 });
		expect(run.status).toBe(2);
		expect(run.stderr).toMatch(/^npm run bench:capacity: .+\nusage: /);
	});
});
