import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../bench/lib/dev-server.mjs';

// The README's quick start, exactly as a user types it: `npm run dev`, then curl. Extra
// arguments after `--` reach wrangler; wrangler's local trace collector stays off unless asked for.
const root = resolve(import.meta.dirname, '../..');
let child: ChildProcess;
let url: string;
let log = '';
const persistTo = mkdtempSync(join(tmpdir(), 'shardflow-npm-run-dev-'));

beforeAll(async () => {
	const port = await freePort();
	url = `http://127.0.0.1:${port}`;
	// Its own dev registry, as bench/lib/dev-server.mjs gives each server: another test file's wrangler dev runs beside this one.
	const env: NodeJS.ProcessEnv = { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true', WRANGLER_REGISTRY_PATH: join(persistTo, 'registry') };
	delete env.X_LOCAL_OBSERVABILITY;
	child = spawn('npm', ['run', 'dev', '--', '--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(await freePort()), '--persist-to', persistTo, '--show-interactive-dev-session=false'], {
		cwd: root,
		env,
		detached: true,
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	child.stdout!.on('data', (d) => (log += d));
	child.stderr!.on('data', (d) => (log += d));
	for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
		if (child.exitCode !== null) throw new Error(`npm run dev exited early:\n${log}`);
		if (!/Ready on/.test(log)) continue;
		try {
			await fetch(`${url}/workflows?type=test`);
			return;
		} catch {}
	}
	throw new Error(`npm run dev did not become ready:\n${log}`);
}, 90_000);

afterAll(() => {
	try {
		process.kill(-child.pid!, 'SIGKILL');
	} catch {}
	rmSync(persistTo, { recursive: true, force: true });
});

describe('npm run dev', () => {
	it('serves the example workflows without a token, on the port given after --', async () => {
		const created = await fetch(`${url}/workflows`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ type: 'test', id: 'hello-1', payload: { name: 'World' } }),
		});
		expect(created.status).toBe(201);
		let status: { status: string } | undefined;
		for (let i = 0; i < 100 && status?.status !== 'completed'; i++) {
			await new Promise((r) => setTimeout(r, 100));
			status = (await (await fetch(`${url}/workflows/hello-1`)).json()) as { status: string };
		}
		expect(status?.status).toBe('completed');
	});

	it('answers a route it does not have with the JSON 404 of the API, beside the example page it adds', async () => {
		const unknown = await fetch(`${url}/workflows/hello-1/stream`, { method: 'POST' });
		expect(unknown.status).toBe(404);
		expect(unknown.headers.get('content-type')).toContain('application/json');
		expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('ROUTE_NOT_FOUND');
		const page = await fetch(`${url}/examples/progress`);
		expect(page.status).toBe(200);
		expect(page.headers.get('content-type')).toContain('text/html');
	});

	it("runs without wrangler's local trace collector: it keeps no trace store", () => {
		expect(existsSync(join(persistTo, 'v3/do'))).toBe(true);
		expect(existsSync(join(persistTo, 'v3/observability'))).toBe(false);
	});

	it('stops wrangler when it is sent SIGTERM', async () => {
		const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
		process.kill(child.pid!, 'SIGTERM');
		await exited;
		let refused = false;
		for (let i = 0; i < 50 && !refused; i++) {
			await new Promise((r) => setTimeout(r, 100));
			refused = await fetch(`${url}/workflows?type=test`).then(() => false, () => true);
		}
		expect(refused).toBe(true);
	}, 20_000);
});
