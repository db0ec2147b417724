import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import type { Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer } from '../../bench/lib/dev-server.mjs';

/**
 * The package as a stranger gets it: `npm pack` (which builds dist/), a fresh
 * project in a temporary folder that installs the tarball (dependencies from
 * npm's cache), writes its own workflow and Worker (test/fixtures/fresh-project)
 * and runs them under the repository's wrangler, with no wrangler rule for
 * .sql and nothing of this repository's sources.
 */
const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const work = mkdtempSync(join(tmpdir(), 'shardflow-package-'));
const project = join(work, 'fresh-shop');
const persistTo = join(work, 'state');
const wrangler = [join(root, 'node_modules/wrangler/bin/wrangler.js')];
const quiet = { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: 'true', npm_config_update_notifier: 'false' };
/** The engine's classes as esbuild names them in a bundle (`var InstanceEngine = class ...`). */
const ENGINE = /\b(InstanceEngine|StepContext|WorkflowRunnerBase|ObjectStorage) = class\b/;
type Server = Awaited<ReturnType<typeof startDevServer>>;
let server: Server | undefined;
let tarball = '';

/** A bundle as `wrangler deploy --dry-run` writes it, with esbuild's metafile. */
interface Bundle {
	code: string;
	bytes: number;
	gzipBytes: number;
	inputs: string[];
	/** Bytes in the bundle per package (`shardflow` for the package, `.` for the project's own code). */
	byPackage: Record<string, number>;
}
const bundles: Record<'host' | 'hostMinified' | 'caller', Bundle> = {} as never;

async function dryRun(name: keyof typeof bundles, config: string, flags: string[] = []): Promise<Bundle> {
	const outdir = join(work, 'out', name);
	await run(process.execPath, [...wrangler, 'deploy', '-c', config, '--dry-run', ...flags, '--outdir', outdir, '--metafile', join(outdir, 'meta.json')], { cwd: project, env: quiet });
	const code = readFileSync(join(outdir, 'index.js'), 'utf8');
	const metafile = JSON.parse(readFileSync(join(outdir, 'meta.json'), 'utf8')) as Metafile;
	const output = Object.entries(metafile.outputs).find(([path]) => path.endsWith('.js'))![1];
	const byPackage: Record<string, number> = {};
	for (const [path, input] of Object.entries(output.inputs)) {
		const name = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1] ?? '.';
		byPackage[name] = (byPackage[name] ?? 0) + input.bytesInOutput;
	}
	return { code, bytes: Buffer.byteLength(code), gzipBytes: gzipSync(code).length, inputs: Object.keys(output.inputs), byPackage };
}

beforeAll(async () => {
	const packed = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: root, env: quiet, maxBuffer: 16 * 1024 * 1024 });
	tarball = join(work, (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename);
	cpSync(join(root, 'test/fixtures/fresh-project'), project, { recursive: true });
	writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'fresh-shop', private: true, type: 'module' }));
	const hono = (JSON.parse(readFileSync(join(root, 'node_modules/hono/package.json'), 'utf8')) as { version: string }).version;
	await run('npm', ['install', tarball, `hono@${hono}`, '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: project, env: quiet });
	// Type declarations for the compile check: a Worker project has these from its own template.
	mkdirSync(join(project, 'node_modules/@cloudflare'), { recursive: true });
	symlinkSync(join(root, 'node_modules/@cloudflare/workers-types'), join(project, 'node_modules/@cloudflare/workers-types'));
	bundles.host = await dryRun('host', 'wrangler.jsonc');
	bundles.hostMinified = await dryRun('hostMinified', 'wrangler.jsonc', ['--minify']);
	bundles.caller = await dryRun('caller', 'caller/wrangler.jsonc');
	const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
	for (const [name, b] of Object.entries(bundles)) {
		const parts = Object.entries(b.byPackage).sort(([, x], [, y]) => y - x).map(([pkg, n]) => `${pkg} ${kib(n)}`);
		console.log(`[package] ${name} bundle: ${kib(b.bytes)} (gzip ${kib(b.gzipBytes)}): ${parts.join(', ')}`);
	}
}, 240_000);

afterAll(async () => {
	await server?.stop();
	rmSync(work, { recursive: true, force: true });
});

describe('shardflow installed from its tarball into a fresh project', () => {
	it('ships built JavaScript and declarations only: no sources, tests or .sql files', async () => {
		const { stdout } = await run('tar', ['-tzf', tarball], { cwd: work });
		const files = stdout.trim().split('\n');
		expect(files).toContain('package/dist/index.js');
		expect(files).toContain('package/dist/client.js');
		expect(files).toContain('package/dist/types/src/host.d.ts');
		expect(files.filter((f) => /^package\/(src|test|drizzle|bench|examples)\/|\.sql$/.test(f))).toEqual([]);
		// Exactly: the built package, its license, its readme, its changelog.
		expect(files.filter((f) => !f.startsWith('package/dist/')).sort()).toEqual(['package/CHANGELOG.md', 'package/LICENSE', 'package/README.md', 'package/package.json']);
		// Types for every entry the package exports.
		const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, { types?: string; default?: string }> };
		for (const [entry, target] of Object.entries(manifest.exports)) {
			if (entry === './package.json') continue;
			expect(files, entry).toContain(`package/${target.types!.slice(2)}`);
			expect(files, entry).toContain(`package/${target.default!.slice(2)}`);
		}
	});

	it('is publishable: MIT-licensed, not private, and npm publish --dry-run of the built package passes', async () => {
		const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { private?: boolean; license?: string };
		expect(manifest.private).toBeUndefined();
		expect(manifest.license).toBe('MIT');
		expect(readFileSync(join(root, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
		// The build ran for the tarball above (prepack); the dry run checks what the registry would take.
		const { stdout, stderr } = await run('npm', ['publish', '--dry-run', '--ignore-scripts', '--json'], { cwd: root, env: quiet, maxBuffer: 16 * 1024 * 1024 });
		// npm 11 answers { "<name>": { name, version, files, ... } }.
		const report = (JSON.parse(stdout.slice(stdout.indexOf('{'))) as Record<string, { name: string; version: string; files: { path: string }[] }>).shardflow!;
		expect(report).toMatchObject({ name: 'shardflow' });
		expect(report.files.map((f) => f.path)).toContain('LICENSE');
		expect(stderr).not.toMatch(/npm error/i);
	}, 120_000);

	it("type-checks the project's own workflow, host and caller against the package's declarations", async () => {
		await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', project], { cwd: project });
	}, 60_000);

	it('type-checks a plain-Node test project that imports shardflow/testing, with Node\'s types only and no skipLibCheck', async () => {
		const kit = join(project, 'node-kit');
		cpSync(join(root, 'test/fixtures/node-test-project'), kit, { recursive: true });
		// A Node project has Node's types, nothing of Cloudflare's.
		mkdirSync(join(kit, 'node_modules/@types'), { recursive: true });
		symlinkSync(join(root, 'node_modules/@types/node'), join(kit, 'node_modules/@types/node'));
		await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', kit], { cwd: kit });
	}, 60_000);

	it('the host bundle carries the engine, Drizzle and the migrations (inlined: no wrangler rule for .sql)', () => {
		expect(bundles.host.inputs.some((path) => path.includes('node_modules/drizzle-orm/'))).toBe(true);
		expect(bundles.host.code).toMatch(ENGINE);
		expect(bundles.host.code).toMatch(/CREATE TABLE [`"]steps[`"]/);
	});

	it('the host deployed with --minify (as the README says) is about half the size and keeps class names for stack traces', () => {
		const { bytes, code } = bundles.hostMinified;
		expect(bytes).toBeLessThan(bundles.host.bytes * 0.65);
		// keep_names (wrangler's default): `static{__name(this,"InstanceEngine")}`, so a stored error stack names the frames.
		for (const name of ['InstanceEngine', 'StepContext', 'Greeter']) expect(code).toMatch(new RegExp(`\\(this,"${name}"\\)`));
	});

	it('the caller bundle, importing only shardflow/client, carries no Drizzle, no Hono, no zod, no engine and no workflow code', () => {
		const { inputs, code, bytes } = bundles.caller;
		expect(inputs.filter((path) => /node_modules\/(drizzle-orm|hono|@hono|zod|@asteasolutions)\//.test(path))).toEqual([]);
		// The typed client, the index client and the error classes: ~30 KiB unminified (zod alone was 764 KiB).
		expect(bytes).toBeLessThan(64 * 1024);
		expect(inputs.filter((path) => path.includes('greeter'))).toEqual([]);
		expect(code).not.toMatch(ENGINE);
		for (const marker of ['CREATE TABLE', 'drizzle']) expect(code).not.toContain(marker);
	});

	it('runs its own workflow under wrangler dev: created over HTTP under its mount path, behind its own auth, and finished', async () => {
		server = await startDevServer({ cwd: project, persistTo, vars: {} });
		const admin = { 'x-admin-key': 'open-sesame', 'content-type': 'application/json' };
		expect(await (await fetch(server.url)).text()).toBe('the shop');
		expect((await fetch(`${server.url}/workflows-admin/workflows`)).status).toBe(401);
		const created = await fetch(`${server.url}/workflows-admin/workflows`, { method: 'POST', headers: admin, body: JSON.stringify({ type: 'greeter', id: 'hello-1', payload: { name: 'World' } }) });
		expect(created.status).toBe(201);
		let status: { status?: string; output?: unknown } = {};
		for (let i = 0; i < 60 && status.status !== 'completed'; i++) {
			await new Promise((r) => setTimeout(r, 100));
			status = (await (await fetch(`${server.url}/workflows-admin/workflows/hello-1`, { headers: admin })).json()) as typeof status;
		}
		expect(status).toMatchObject({ status: 'completed', output: { greeting: 'Hello, World!' } });
		const doc = (await (await fetch(`${server.url}/workflows-admin/openapi.json`, { headers: admin })).json()) as { servers: unknown };
		expect(doc.servers).toEqual([{ url: '/workflows-admin' }]);
		await server.stop();
		server = undefined;
	}, 90_000);

	it('a second Worker bound by script_name drives it through the typed client', async () => {
		server = await startDevServer({ cwd: project, persistTo, vars: {}, configs: ['caller/wrangler.jsonc', 'wrangler.jsonc'] });
		const created = await fetch(`${server.url}/?name=Ann`, { method: 'POST' });
		expect(created.status).toBe(201);
		const { id } = (await created.json()) as { id: string };
		let seen: { status?: string; greeting?: string | null } = {};
		for (let i = 0; i < 60 && seen.status !== 'completed'; i++) {
			await new Promise((r) => setTimeout(r, 100));
			seen = (await (await fetch(`${server.url}/${id}`)).json()) as typeof seen;
		}
		expect(seen).toEqual({ status: 'completed', greeting: 'Hello, Ann!' });
		// The same namespace the host served over HTTP: the first run's instance is there.
		expect(await (await fetch(`${server.url}/hello-1`)).json()).toEqual({ status: 'completed', greeting: 'Hello, World!' });
	}, 90_000);
});
