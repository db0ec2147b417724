#!/usr/bin/env node
// `npx shardflow init [dir]`: a Worker project with shardflow ready to run and test
// (templates/starter): wrangler.jsonc with the binding and the migration, a registry,
// one workflow, a test on plain Node with the test kit and one inside workerd, and
// package.json with `npm run dev` and `npm test`. The versions of its tools are the
// ones this package is built and tested with (its own devDependencies).
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';

const here = dirname(new URL(import.meta.url).pathname);
const templates = join(here, '..', 'templates', 'starter');
const own = JSON.parse(readFileSync(join(here, '..', 'package.json'), 'utf8'));

/** Template files whose names npm would drop from a tarball (dotfiles), and the names they are written as. */
const RENAMED = { gitignore: '.gitignore', 'dev.vars': '.dev.vars' };
/** The dev tools the project needs, at the versions shardflow itself uses. `node` pins the Node that npm scripts run (wrangler needs 22.12 or later). */
const DEV_TOOLS = ['@cloudflare/vitest-plugin', '@cloudflare/workers-types', 'node', 'typescript', 'vitest', 'wrangler'];

const USAGE = `Usage: npx shardflow init [dir]

Writes a Cloudflare Worker project that runs shardflow workflows into dir
(default: the current folder), which must be empty or not exist yet. Then:
  cd dir && npm install && npm run dev     # or: npm test`;

function fail(message, code = 1) {
	console.error(`shardflow: ${message}`);
	process.exit(code);
}

/** A Worker and npm package name from the folder's name: lowercase letters, digits and dashes. */
export function projectName(dir) {
	const name = basename(resolve(dir)).toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 63);
	return name || 'workflows';
}

function templateFiles(dir, prefix = '') {
	return readdirSync(dir).flatMap((entry) => {
		const path = join(dir, entry);
		return statSync(path).isDirectory() ? templateFiles(path, `${prefix}${entry}/`) : [`${prefix}${entry}`];
	});
}

function packageJson(name) {
	const pick = (from, names) => Object.fromEntries(names.map((n) => [n, from?.[n]]).filter(([, v]) => v));
	return {
		name,
		version: '0.0.0',
		private: true,
		type: 'module',
		scripts: {
			dev: 'wrangler dev',
			test: 'tsc --noEmit && vitest run',
			deploy: 'wrangler deploy --minify',
			'cf-typegen': 'wrangler types',
		},
		dependencies: { shardflow: `^${own.version}`, ...pick(own.dependencies, ['zod']) },
		devDependencies: pick(own.devDependencies, DEV_TOOLS),
		// npm 11 runs only the install scripts a project allows: the pinned Node, wrangler's esbuild and workerd.
		allowScripts: { esbuild: true, node: true, workerd: true },
	};
}

export function init(dir) {
	const target = resolve(dir);
	if (existsSync(target)) {
		if (!statSync(target).isDirectory()) fail(`${dir} is a file, not a folder`);
		const present = readdirSync(target).filter((entry) => entry !== '.git');
		if (present.length) fail(`${dir} is not empty (${present.slice(0, 5).join(', ')}${present.length > 5 ? ', …' : ''}): choose a new or empty folder`);
	}
	const name = projectName(dir);
	const written = [];
	const write = (path, text) => {
		mkdirSync(dirname(join(target, path)), { recursive: true });
		writeFileSync(join(target, path), text);
		written.push(path);
	};
	write('package.json', `${JSON.stringify(packageJson(name), null, '\t')}\n`);
	for (const file of templateFiles(templates)) {
		const out = RENAMED[file] ?? file;
		write(out, readFileSync(join(templates, file), 'utf8').replaceAll('{{name}}', name));
	}
	return { target, name, written };
}

const [command, ...rest] = process.argv.slice(2);
if (command === 'init' && rest.length <= 1 && !rest.some((a) => a.startsWith('-'))) {
	const dir = rest[0] ?? '.';
	const { target, name, written } = init(dir);
	const cd = relative(process.cwd(), target).replace(/^(.*[\s'"].*)$/, (path) => JSON.stringify(path));
	console.log(`Created ${name} in ${target}:\n${written.map((f) => `  ${f}`).join('\n')}\n`);
	console.log(`Next:\n${cd ? `  cd ${cd}\n` : ''}  npm install     # shardflow is not on the npm registry yet: first npm install <path to shardflow-${own.version}.tgz> (docs/installing.md)\n  npm run dev     # the API at http://localhost:8787/workflows, the dashboard at /dashboard\n  npm test        # the workflow's tests, on Node and inside workerd`);
} else if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
	console.log(USAGE);
} else {
	fail(`unknown command: ${process.argv.slice(2).join(' ')}\n\n${USAGE}`, 2);
}
