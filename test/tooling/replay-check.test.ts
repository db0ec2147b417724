import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer } from '../../bench/lib/dev-server.mjs';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const persistTo = mkdtempSync(join(tmpdir(), 'shardflow-replay-'));
type Server = Awaited<ReturnType<typeof startDevServer>>;
let server: Server;

/** `npm run replay` as CI would run it: exit code and output. */
async function replay(...args: string[]): Promise<{ code: number; out: string }> {
	try {
		const { stdout } = await run(process.execPath, [join(root, 'scripts/replay.mjs'), '--url', server.url, ...args], { cwd: root });
		return { code: 0, out: stdout };
	} catch (error) {
		const e = error as { code: number; stdout: string; stderr: string };
		return { code: e.code, out: `${e.stdout}${e.stderr}` };
	}
}

const post = (path: string, body: unknown) =>
	fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

beforeAll(async () => {
	// Version A (the example code) serves instances that stop at different points.
	server = await startDevServer({ persistTo });
	for (const id of ['replay-waiting', 'replay-paused', 'replay-done']) {
		expect((await post('/workflows', { type: 'payment', id, payload: { amount: 5, currency: 'EUR' } })).status).toBe(201);
	}
	await new Promise((r) => setTimeout(r, 500));
	expect((await post('/workflows/replay-paused/pause', {})).status).toBe(200);
	expect((await post('/workflows/replay-done/events/approval', { approved: true, reviewer: 'ann' })).status).toBe(202);
	for (let i = 0; i < 50; i++) {
		const listed = (await (await fetch(`${server.url}/workflows?type=payment&status=waiting,paused,completed&limit=10`)).json()) as { items: { id: string; status: string }[] };
		if (listed.items.length === 3 && listed.items.some((x) => x.id === 'replay-done' && x.status === 'completed')) break;
		await new Promise((r) => setTimeout(r, 200));
	}
}, 120_000);
afterAll(async () => {
	await server?.stop();
	rmSync(persistTo, { recursive: true, force: true });
});

describe('npm run replay: the check before a deploy', () => {
	it('passes the code the deployment runs', async () => {
		const { code, out } = await replay('--type', 'payment');
		expect(out).toContain('2 instance(s) replayed, 0 divergent');
		expect(code).toBe(0);
	}, 60_000);

	it('reports every in-flight instance a changed step sequence would break, and exits 1', async () => {
		const { code, out } = await replay('--type', 'payment', '--registry', 'test/fixtures/replay/unpatched-registry.ts');
		expect(code).toBe(1);
		expect(out).toMatch(/replay-waiting\s+payment\s+waiting\s+.*fraud-check/);
		expect(out).toMatch(/replay-paused\s+payment\s+paused\s+.*fraud-check/);
		expect(out).not.toContain('replay-done'); // finished instances are not checked by default
		expect(out).toContain('2 instance(s) replayed, 2 divergent');
	}, 60_000);

	it('checks finished instances too when asked, and passes once the change is guarded by step.patched', async () => {
		const unpatched = await replay('--type', 'payment', '--status', 'waiting,paused,completed', '--registry', 'test/fixtures/replay/unpatched-registry.ts');
		expect(unpatched.out).toContain('3 instance(s) replayed, 3 divergent');
		const patched = await replay('--type', 'payment', '--status', 'waiting,paused,completed', '--registry', 'test/fixtures/replay/patched-registry.ts');
		expect(patched.out).toContain('3 instance(s) replayed, 0 divergent');
		expect(patched.code).toBe(0);
	}, 60_000);

	it('says how to use it when the URL is missing', async () => {
		try {
			await run(process.execPath, [join(root, 'scripts/replay.mjs')], { cwd: root });
			expect.unreachable();
		} catch (error) {
			expect((error as { code: number; stderr: string }).code).toBe(2);
			expect((error as { stderr: string }).stderr).toContain('usage: npm run replay');
		}
	});
});

describe('npm run replay when it cannot check', () => {
	it('exits 2 with one line, not a stack trace, for an unknown type, an unknown status or a missing registry', async () => {
		for (const args of [['--type', 'nope'], ['--status', 'bogus'], ['--registry', 'does/not/exist.ts']]) {
			const { code, out } = await replay(...args);
			expect(code, args.join(' ')).toBe(2);
			expect(out).toContain('replay check could not run:');
			expect(out).not.toMatch(/\n\s+at /);
		}
	}, 60_000);
});
