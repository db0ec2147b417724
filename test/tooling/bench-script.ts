import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// The bench drivers' smoke tests: run a script of bench/ at its smoke sizes into a scratch
// directory, and run it with arguments it should refuse.

const root = resolve(import.meta.dirname, '../..');

/** Runs `bench/<script> --smoke --out <scratch>`, hands `check` a reader of the files it wrote, then removes them. */
export function withSmokeRun(script: string, check: (read: (file: string) => string) => void): void {
	const out = mkdtempSync(join(tmpdir(), 'shardflow-bench-'));
	try {
		execFileSync(process.execPath, [join(root, 'bench', script), '--smoke', '--out', out], { cwd: root, encoding: 'utf8', stdio: 'pipe' });
		check((file) => readFileSync(join(out, file), 'utf8'));
	} finally {
		rmSync(out, { recursive: true, force: true });
	}
}

/** `bench/<script> --smoke ...args`, as a refusal is checked: its exit status and what it printed. */
export function runRefused(script: string, args: string[]): { status: number | null; stderr: string } {
	const run = spawnSync(process.execPath, [join(root, 'bench', script), '--smoke', ...args], { cwd: root, encoding: 'utf8', timeout: 20_000 });
	return { status: run.status, stderr: run.stderr };
}
