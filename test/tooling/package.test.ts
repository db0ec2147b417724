import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import type { Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startDevServer } from '../../bench/lib/dev-server.mjs';
import { expectNoPageErrors, launchBrowser, openPage, screenshot } from '../dashboard/browser-kit.js';

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
let installOutput = { stdout: '', stderr: '' };
const manifestBeforePack = readFileSync(join(root, 'package.json'), 'utf8');

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
	// Scripts allowed, as a user installs: the package has none to run, so npm has nothing to warn about.
	installOutput = await run('npm', ['install', tarball, `hono@${hono}`, '--prefer-offline', '--no-audit', '--no-fund'], { cwd: project, env: quiet });
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
	// The starter's node_modules too: a few hundred MB, seconds on a busy machine.
	rmSync(work, { recursive: true, force: true });
}, 120_000);

describe('shardflow installed from its tarball into a fresh project', () => {
	it('ships built JavaScript and declarations only: no sources, tests or .sql files', async () => {
		const { stdout } = await run('tar', ['-tzf', tarball], { cwd: work });
		const files = stdout.trim().split('\n');
		expect(files).toContain('package/dist/index.js');
		expect(files).toContain('package/dist/client.js');
		expect(files).toContain('package/dist/types/src/host.d.ts');
		expect(files.filter((f) => /^package\/(src|test|drizzle|bench|examples)\/|\.sql$/.test(f))).toEqual([]);
		// Exactly: the built package, the starter's bin and templates (`npx shardflow init`), its license, its readme, its changelog.
		const templates = (dir: string, prefix: string): string[] =>
			readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? templates(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`]));
		expect(files.filter((f) => !f.startsWith('package/dist/')).sort()).toEqual(
			['package/CHANGELOG.md', 'package/LICENSE', 'package/README.md', 'package/package.json', 'package/bin/shardflow.mjs', ...templates(join(root, 'templates'), 'package/templates/')].sort(),
		);
		// Types for every entry the package exports.
		const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, { types?: string; default?: string }> };
		for (const [entry, target] of Object.entries(manifest.exports)) {
			if (entry === './package.json') continue;
			expect(files, entry).toContain(`package/${target.types!.slice(2)}`);
			expect(files, entry).toContain(`package/${target.default!.slice(2)}`);
		}
	});

	it("installs without npm's install-scripts warning: the packed package.json has no scripts (prepare builds a git install only), and the repository's is left as it was", async () => {
		const { stdout } = await run('tar', ['-xzOf', tarball, 'package/package.json'], { cwd: work });
		const packed = JSON.parse(stdout) as { scripts?: unknown; exports: unknown; name: string };
		expect(packed.scripts).toBeUndefined();
		expect(packed).toMatchObject({ name: 'shardflow', exports: expect.any(Object) });
		expect(`${installOutput.stdout}\n${installOutput.stderr}`).not.toMatch(/install-scripts|allowScripts|prepare/i);
		expect(readFileSync(join(root, 'package.json'), 'utf8')).toBe(manifestBeforePack);
		expect(existsSync(join(root, '.package.json.unpacked'))).toBe(false);
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

	it('type-checks a Worker project whose runtime and bindings come from `wrangler types`, with no @cloudflare/workers-types', async () => {
		const kit = join(work, 'wrangler-types-project');
		cpSync(join(root, 'test/fixtures/fresh-project'), kit, { recursive: true });
		// The fresh project's own node_modules (the tarball, its dependencies), without the workers-types link the other checks add.
		symlinkSync(join(project, 'node_modules'), join(kit, 'node_modules'));
		await run(process.execPath, [...wrangler, 'types'], { cwd: kit, env: quiet });
		const generated = readFileSync(join(kit, 'worker-configuration.d.ts'), 'utf8');
		expect(generated).toMatch(/WORKFLOW_RUNNER: DurableObjectNamespace<import\("\.\/src\/index"\)\.WorkflowRunner>/);
		expect(generated).toMatch(/interface DurableObjectNamespace/); // the runtime's types, generated too
		// skipLibCheck off: the package's declarations are checked in full. drizzle-orm's own declarations do not pass
		// without skipLibCheck (they reference mysql2, gel and Buffer), which every Worker template sets; those are left out.
		const tsc = await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.wrangler-types.json'], { cwd: kit, maxBuffer: 16 * 1024 * 1024 }).then(
			() => '',
			(error: { stdout?: string }) => error.stdout ?? String(error),
		);
		const errors = tsc.split('\n').filter((line) => /error TS\d+/.test(line) && !/(?:^|\/)node_modules\/drizzle-orm\//.test(line));
		expect(errors).toEqual([]);
	}, 120_000);

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
		// The typed client, the index client, the operation and role-call tables and the error classes:
		// 80.1 KiB unminified (82,009 bytes, measured after the bulk receipt and delete calls added 0.4 KiB;
		// zod alone was 764 KiB); 95.9 KiB once residency groups came (a caller routes an id to its group's
		// jurisdiction itself, with no lookup: the group id, placement and namespace code, ~10 KiB, and the
		// group-aware index client). A tripwire for growth; what must stay out is asserted on its own.
		expect(bytes).toBeLessThan(98 * 1024);
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

	it('serves its dashboard from the bundle under its own mount (/ops/dashboard): sign-in, a live list that shows a new instance, its page', async () => {
		server = await startDevServer({ cwd: project, persistTo, vars: {} });
		const browser = await launchBrowser();
		try {
			const page = await openPage(browser, `${server.url}/ops/dashboard/instances?type=greeter`);
			expect(new URL(page.url()).pathname).toBe('/ops/dashboard/login');
			await page.fill('input[name="token"]', 'ops-Token-7');
			await Promise.all([page.waitForURL(/\/ops\/dashboard\/instances\?type=greeter$/), page.click('button:text("Sign in")')]);
			expect(await page.locator('link[rel="stylesheet"]').evaluate((link) => (link as unknown as { sheet: { cssRules: { length: number } } | null }).sheet?.cssRules.length ?? 0)).toBeGreaterThan(10);
			await page.waitForSelector('#live[data-state="live"]');
			// Created over the API while the page is open: the row appears without a reload, then finishes.
			const created = await fetch(`${server.url}/ops/workflows`, {
				method: 'POST',
				headers: { authorization: 'Bearer ops-Token-7', 'content-type': 'application/json' },
				body: JSON.stringify({ type: 'greeter', id: 'live-1', payload: { name: 'Dashboard' } }),
			});
			expect(created.status).toBe(201);
			const row = page.locator('#instances tbody tr[data-id="live-1"]');
			await row.waitFor({ timeout: 10_000 });
			await page.waitForSelector('#instances tbody tr[data-id="live-1"][data-status="completed"]', { timeout: 15_000 });
			await screenshot(page, 'package-mounted-list');
			await Promise.all([page.waitForURL(/\/ops\/dashboard\/instances\/live-1$/), row.locator('a[data-field="link"]').click()]);
			expect(await page.textContent('h1')).toBe('live-1');
			expect(await page.locator('#instance-status').textContent()).toContain('completed');
			await page.waitForSelector('.tl-row');
			await screenshot(page, 'package-mounted-instance');
			const cookies = await page.context().cookies();
			expect(cookies).toEqual([expect.objectContaining({ name: 'shardflow_session', path: '/ops/dashboard' })]);
			expectNoPageErrors(page);
		} finally {
			await browser.close();
			await server.stop();
			server = undefined;
		}
	}, 120_000);

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

/**
 * `npx shardflow init` as a new user meets it, on this machine's own Node (20:
 * the repository's pinned Node is taken off PATH): the starter is written by the
 * bin of the packed tarball into an empty folder, installs (shardflow from that
 * tarball, everything else from npm's cache), passes its own `npm test`, and
 * serves an instance and the dashboard under `npm run dev`. (In this file: one
 * `npm pack` for both, as two packs at once would race on dist/ and package.json.)
 */
const app = join(work, 'My Signups');
/** PATH without this repository's node_modules/.bin (where its pinned Node 24 is): the user's own Node runs npm. */
const PATH = (process.env.PATH ?? '').split(delimiter).filter((dir) => !dir.startsWith(join(root, 'node_modules'))).join(delimiter);
const userEnv = { ...process.env, PATH, WRANGLER_SEND_METRICS: 'false', CI: 'true', npm_config_update_notifier: 'false' } as NodeJS.ProcessEnv;
// Nothing of this run's npm or vitest: the starter's commands run as if typed in a terminal.
for (const key of Object.keys(userEnv)) if (/^(?:npm_(?!config_update_notifier)|VITEST|INIT_CWD$)/i.test(key)) delete userEnv[key];
let init = { stdout: '', stderr: '' };
let install = { stdout: '', stderr: '' };
let dev: ChildProcess | undefined;

describe('npx shardflow init, from the tarball', () => {
	beforeAll(async () => {
		// `npx shardflow init <dir>`, with the package taken from the tarball instead of the registry.
		init = await run('npm', ['exec', '--yes', `--package=${tarball}`, '--', 'shardflow', 'init', 'My Signups'], { cwd: work, env: userEnv });
		// The starter depends on shardflow's published version; until then it installs the tarball.
		const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
		manifest.dependencies.shardflow = `file:${tarball}`;
		writeFileSync(join(app, 'package.json'), JSON.stringify(manifest, null, '\t'));
		install = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: app, env: userEnv, maxBuffer: 16 * 1024 * 1024 });
	}, 480_000);

	afterAll(() => {
		if (dev?.pid) {
			try {
				process.kill(-dev.pid, 'SIGKILL');
			} catch {}
		}
	});

	it('writes a Worker project: wrangler.jsonc with the binding and migration, a registry, a workflow, a Node test, a workerd test, the two commands', () => {
		expect(init.stdout).toContain('npm run dev');
		const files = (dir: string, prefix = ''): string[] =>
			readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.name === 'node_modules' ? [] : e.isDirectory() ? files(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`]));
		expect(files(app).filter((f) => f !== 'package-lock.json').sort()).toEqual(
			['.dev.vars', '.gitignore', 'README.md', 'package.json', 'src/env.d.ts', 'src/index.ts', 'src/registry.ts', 'src/workflows/signup.ts', 'test/signup.test.ts', 'test/signup.workerd.test.ts', 'test/worker.ts', 'tsconfig.json', 'vitest.config.ts', 'wrangler.jsonc'].sort(),
		);
		// A tarball installed from (the README's way until shardflow is on npm) is not committed.
		expect(readFileSync(join(app, '.gitignore'), 'utf8').split('\n')).toEqual(expect.arrayContaining(['node_modules', '.wrangler/', '.dev.vars', '*.tgz']));
		const wrangler = readFileSync(join(app, 'wrangler.jsonc'), 'utf8');
		expect(wrangler).toContain('"name": "my-signups"');
		expect(wrangler).toContain('{ "name": "WORKFLOW_RUNNER", "class_name": "WorkflowRunner" }');
		expect(wrangler).toContain('"new_sqlite_classes": ["WorkflowRunner"]');
		// A new project has no older build to roll back to: it writes the newest storage format (compact layout).
		expect(wrangler).toContain('"vars": { "SHARDFLOW_STORAGE_FORMAT": "5" }');
		// The compatibility date this repository runs and tests with.
		const date = /"compatibility_date": "([\d-]+)"/;
		expect(date.exec(wrangler)?.[1]).toBe(date.exec(readFileSync(join(root, 'wrangler.jsonc'), 'utf8'))?.[1]);
		const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as { name: string; scripts: Record<string, string>; devDependencies: Record<string, string> };
		const own = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
		expect(manifest.name).toBe('my-signups');
		expect(manifest.scripts).toMatchObject({ dev: 'wrangler dev', test: 'tsc --noEmit && vitest run' });
		// Its tools at the versions shardflow is tested with, Node pinned as this repository pins it.
		for (const tool of ['node', 'wrangler', 'vitest', '@cloudflare/vitest-plugin', 'typescript']) expect(manifest.devDependencies[tool], tool).toBe(own.devDependencies[tool]);
		expect(readFileSync(join(app, '.dev.vars'), 'utf8')).toBe('SHARDFLOW_ENV=development\n');
	});

	it('refuses to write into a folder that is not empty, and changes nothing there', async () => {
		const taken = join(work, 'taken');
		mkdirSync(taken);
		writeFileSync(join(taken, 'notes.txt'), 'mine');
		const refused = await run('npm', ['exec', '--yes', `--package=${tarball}`, '--', 'shardflow', 'init', 'taken'], { cwd: work, env: userEnv }).then(
			() => null,
			(error: { code?: number; stderr?: string }) => error,
		);
		expect(refused?.code).toBe(1);
		expect(refused?.stderr).toContain('taken is not empty (notes.txt)');
		expect(readdirSync(taken)).toEqual(['notes.txt']);
	}, 60_000);

	it('installs without install-script warnings, and its scripts run the pinned Node although this machine has an older one', async () => {
		// (npm still warns EBADENGINE for wrangler when the Node that runs npm itself is older than 22.12.)
		expect(`${install.stdout}\n${install.stderr}`).not.toMatch(/install-scripts|allowScripts/i);
		const { stdout } = await run('npm', ['exec', '--', 'node', '--version'], { cwd: app, env: userEnv });
		expect(stdout.trim()).toBe(`v${(JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as { devDependencies: { node: string } }).devDependencies.node}`);
	}, 60_000);

	it('passes its own npm test: the type-check, the Node kit tests and the workerd tests', async () => {
		const { stdout: colored } = await run('npm', ['test'], { cwd: app, env: userEnv, maxBuffer: 16 * 1024 * 1024 });
		const stdout = colored.replace(/\x1b\[[0-9;]*m/g, '');
		expect(stdout).toMatch(/node\W+test\/signup\.test\.ts \(3 tests\)/);
		expect(stdout).toMatch(/workers\W+test\/signup\.workerd\.test\.ts \(3 tests\)/);
		expect(stdout).toMatch(/Tests\W+6 passed \(6\)/);
	}, 300_000);

	it('serves the API and the dashboard under npm run dev: an instance created over HTTP runs to its end', async () => {
		const port = await freePort();
		const url = `http://127.0.0.1:${port}`;
		let log = '';
		dev = spawn('npm', ['run', 'dev', '--', '--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(await freePort()), '--show-interactive-dev-session=false'], { cwd: app, env: userEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
		dev.stdout!.on('data', (d) => (log += d));
		dev.stderr!.on('data', (d) => (log += d));
		for (const deadline = Date.now() + 90_000; ; await new Promise((r) => setTimeout(r, 200))) {
			if (Date.now() > deadline || dev.exitCode !== null) throw new Error(`npm run dev did not become ready:\n${log}`);
			if (/Ready on/.test(log) && (await fetch(`${url}/types`).then((r) => r.ok, () => false))) break;
		}
		const json = { 'content-type': 'application/json' };
		const created = await fetch(`${url}/workflows`, { method: 'POST', headers: json, body: JSON.stringify({ type: 'signup', id: 'signup-1', payload: { email: 'ada@example.com' } }) });
		expect(created.status).toBe(201);
		const sent = await fetch(`${url}/workflows/signup-1/events/email-verified`, { method: 'POST', headers: json, body: JSON.stringify({ verifiedAt: '2030-01-01T10:00:00Z' }) });
		expect(sent.status).toBe(202);
		let status: { status?: string; output?: unknown } = {};
		for (let i = 0; i < 100 && status.status !== 'completed'; i++) {
			await new Promise((r) => setTimeout(r, 100));
			status = (await (await fetch(`${url}/workflows/signup-1`)).json()) as typeof status;
		}
		expect(status).toMatchObject({ status: 'completed', output: { status: 'active', email: 'ada@example.com' } });
		const dashboard = await fetch(`${url}/dashboard`);
		expect(dashboard.status).toBe(200);
		expect(await dashboard.text()).toContain('data-type="signup"');
		expect((await fetch(`${url}/dashboard/list.js`)).status).toBe(200);
		process.kill(-dev.pid!, 'SIGTERM');
		dev = undefined;
		expect(existsSync(join(app, '.wrangler'))).toBe(true); // its local state, ignored by its .gitignore
	}, 150_000);
});
