#!/usr/bin/env node
// `npm run replay -- --url <deployment> [--token T] [--type payment[,test]]
//   [--status running,sleeping,waiting,paused] [--registry examples/demo/workflows/registry.ts]`
//
// Replays the history of every matching instance of a deployment against the
// local code (the registry's workflow classes) and exits 1 on any divergence,
// so CI can run it before `wrangler deploy`; 2 when it cannot check (bad
// arguments, an unreachable deployment, a refused request). See README
// "Changing workflow code safely".
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const root = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
	options: {
		url: { type: 'string' },
		token: { type: 'string', default: process.env.API_TOKEN },
		type: { type: 'string' },
		status: { type: 'string' },
		registry: { type: 'string', default: 'examples/demo/workflows/registry.ts' },
		json: { type: 'boolean', default: false },
	},
});
if (!values.url) {
	console.error('usage: npm run replay -- --url <deployment> [--token T] [--type a,b] [--status s1,s2] [--registry path] [--json]');
	process.exit(2);
}

// The workflow code is TypeScript with extensionless imports: bundle it for Node first.
const dir = mkdtempSync(join(tmpdir(), 'shardflow-replay-'));
try {
	await check();
} catch (error) {
	// Not a verdict: the check could not run. Exit 2, so a pipeline tells "cannot check" from "unsafe".
	console.error(`replay check could not run: ${error instanceof Error ? error.message : String(error)}`);
	process.exitCode = 2;
} finally {
	rmSync(dir, { recursive: true, force: true });
}

async function check() {
	const out = join(dir, 'replay.mjs');
	const registryPath = resolve(values.registry);
	await build({
		stdin: {
			contents: `export { registry } from ${JSON.stringify(registryPath)};\nexport * from ${JSON.stringify(join(root, 'scripts/replay-check.ts'))};`,
			resolveDir: root,
			loader: 'ts',
		},
		bundle: true,
		platform: 'node',
		format: 'esm',
		outfile: out,
		logLevel: 'error',
	});
	const { registry, replayCheck, formatReplayTable } = await import(pathToFileURL(out).href);
	const list = (s) => (s ? s.split(',').map((x) => x.trim()).filter(Boolean) : undefined);
	const { rows, divergent } = await replayCheck({ url: values.url, token: values.token, registry, types: list(values.type), statuses: list(values.status) });
	if (values.json) console.log(JSON.stringify({ rows, divergent }, null, 2));
	else {
		console.log(rows.length ? formatReplayTable(rows) : 'no matching instances');
		console.log(`\n${rows.length} instance(s) replayed, ${divergent} divergent`);
	}
	process.exitCode = divergent > 0 ? 1 : 0;
}
