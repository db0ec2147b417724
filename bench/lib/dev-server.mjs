// Starts `wrangler dev` on a free loopback port, waits until it serves, and
// stops it by its own process group. Used by the benchmark driver and by the
// tooling tests that exercise the Workers over real HTTP.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '../..');

/** @returns {Promise<number>} a port that was free a moment ago */
export function freePort() {
	return new Promise((resolvePort, reject) => {
		const server = createServer();
		server.unref();
		server.on('error', reject);
		server.listen(0, '127.0.0.1', () => {
			const address = server.address();
			server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
		});
	});
}

/**
 * @param {{ configs?: string[], vars?: Record<string, string>, timeoutMs?: number, persistTo?: string, cwd?: string, port?: number, inspectorPort?: number, entry?: string }} [options]
 *   `cwd`: the project to serve (the repository by default); the repository's own wrangler serves it either way.
 *   `port`: serve on this port (say, the one a crashed server had, so its clients reconnect); a free one by default.
 *   `inspectorPort`: the DevTools protocol's port (a CPU profile, bench/profile-steps.mjs); a free one by default.
 *   `entry`: the Worker's entry point instead of the configuration's `main` (bench/work-entry.ts), relative to `cwd`.
 * @returns {Promise<{ url: string, port: number, inspectorPort: number, pid: number, persistTo: string, stop: () => Promise<void>, crash: () => Promise<void>, output: () => string, peakMemory: { reset: () => void, mib: () => number } }>}
 */
export async function startDevServer(options = {}) {
	// A port that was free a moment ago can be taken before wrangler binds it (another test file's server
	// starts beside this one): on "Address already in use", start again on other ports.
	for (let attempt = 1; ; attempt++) {
		try {
			return await startOnce(options);
		} catch (error) {
			if (attempt >= 3 || !/Address already in use/.test(String(error))) throw error;
		}
	}
}

/** @param {Parameters<typeof startDevServer>[0] & {}} options */
async function startOnce(options) {
	const configs = options.configs ?? ['wrangler.jsonc'];
	const port = options.port ?? (await freePort());
	const persistTo = options.persistTo ?? mkdtempSync(join(tmpdir(), 'shardflow-dev-'));
	// The devtools port too: by default every wrangler dev probes from 9229 upward, and two started at
	// the same moment (test files run two at a time) both take 9229 and the second exits "Address already in use".
	const inspectorPort = options.inspectorPort ?? (await freePort());
	const registry = mkdtempSync(join(tmpdir(), 'shardflow-registry-'));
	const args = ['dev', ...(options.entry ? [options.entry] : []), ...configs.flatMap((c) => ['-c', c]), '--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(inspectorPort), '--persist-to', persistTo, '--show-interactive-dev-session=false'];
	for (const [key, value] of Object.entries(options.vars ?? { SHARDFLOW_ENV: 'development' })) args.push('--var', `${key}:${value}`);
	// Run wrangler's script on this Node (the pinned one under npm scripts), not on whatever `node` is first on PATH.
	const child = spawn(process.execPath, [join(root, 'node_modules/wrangler/bin/wrangler.js'), ...args], {
		cwd: options.cwd ?? root,
		detached: true,
		stdio: ['ignore', 'pipe', 'pipe'],
		// wrangler's local trace collector off, as under `npm run dev` (scripts/dev.mjs): a span per storage statement, written on the workflows' thread.
		// Its own dev registry: two servers running at once (test files run two at a time) must not find each other's Workers by name.
		env: { ...process.env, WRANGLER_REGISTRY_PATH: registry, PATH: `${join(root, 'node_modules/.bin')}:${process.env.PATH ?? ''}`, WRANGLER_SEND_METRICS: 'false', CI: 'true', X_LOCAL_OBSERVABILITY: process.env.X_LOCAL_OBSERVABILITY || 'false' },
	});
	let log = '';
	child.stdout.on('data', (d) => (log += d));
	child.stderr.on('data', (d) => (log += d));
	const url = `http://127.0.0.1:${port}`;
	const deadline = Date.now() + (options.timeoutMs ?? 60_000);
	const stop = async () => {
		if (child.exitCode === null && child.pid) {
			try {
				process.kill(-child.pid, 'SIGTERM');
			} catch {}
			await new Promise((r) => setTimeout(r, 300));
			try {
				process.kill(-child.pid, 'SIGKILL');
			} catch {}
		}
		if (!options.persistTo) rmSync(persistTo, { recursive: true, force: true });
		rmSync(registry, { recursive: true, force: true });
	};
	/** A hard crash: SIGKILL to wrangler and workerd at once, nothing flushed, storage left as it is. */
	const crash = async () => {
		if (child.pid) {
			try {
				process.kill(-child.pid, 'SIGKILL');
			} catch {}
		}
		await new Promise((r) => child.exitCode !== null || child.signalCode !== null ? r(undefined) : child.once('exit', r));
		rmSync(registry, { recursive: true, force: true });
	};
	while (Date.now() < deadline) {
		if (child.exitCode !== null) throw new Error(`wrangler dev exited early:\n${log}`);
		if (/Ready on/.test(log)) {
			try {
				await fetch(`${url}/__health`);
				return { url, port, inspectorPort, pid: child.pid ?? 0, persistTo, stop, crash, output: () => log, peakMemory: peakMemory(child.pid ?? 0) };
			} catch {}
		}
		await new Promise((r) => setTimeout(r, 200));
	}
	await stop();
	throw new Error(`wrangler dev did not become ready:\n${log}`);
}

/**
 * The peak resident memory of this server's `workerd` processes (Linux: `VmHWM`,
 * reset by writing 5 to `clear_refs`): what one operation costs in memory, seen
 * from outside. There are two under `wrangler dev`; the one running the Worker is
 * the larger, and `mib()` reports the largest peak since the last `reset()`.
 * @param {number} group the process group wrangler was started in
 */
function peakMemory(group) {
	// /proc/<pid>/stat: "pid (comm) state ppid pgrp ...".
	const pids = () =>
		readdirSync('/proc').filter((name) => /^\d+$/.test(name)).filter((pid) => {
			try {
				const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
				const [, comm, rest] = /^\d+ \((.*)\) (.*)$/s.exec(stat) ?? [];
				return comm === 'workerd' && Number(rest?.split(' ')[2]) === group;
			} catch {
				return false; // gone meanwhile
			}
		});
	return {
		reset: () => {
			for (const pid of pids()) writeFileSync(`/proc/${pid}/clear_refs`, '5');
		},
		mib: () => Math.max(0, ...pids().map((pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024)),
	};
}
