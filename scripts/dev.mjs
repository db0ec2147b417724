// `npm run dev`: wrangler dev with the example workflows, open to local requests (SHARDFLOW_ENV=development).
// wrangler's experimental local trace collector (X_LOCAL_OBSERVABILITY, on by default in wrangler 4.16x)
// is off unless you ask for it: it records a span per storage statement and writes them to SQLite on the
// thread that runs the workflows, which makes a long run 1.4-2x slower and multiplies what an unrelated request
// waits during it (docs/decisions.md "wrangler's local trace collector"). X_LOCAL_OBSERVABILITY=true turns it on.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const child = spawn(process.execPath, [join(root, 'node_modules/wrangler/bin/wrangler.js'), 'dev', '--var', 'SHARDFLOW_ENV:development', ...process.argv.slice(2)], {
	stdio: 'inherit',
	env: { ...process.env, X_LOCAL_OBSERVABILITY: process.env.X_LOCAL_OBSERVABILITY || 'false' },
});
// Ctrl-C reaches wrangler through the terminal's process group. A SIGTERM sent to npm alone stops
// npm's shell but is not passed on to this script, so this script also stops wrangler when its
// parent goes away (a process manager or a test harness stopping `npm run dev`).
process.on('SIGINT', () => {});
process.on('SIGTERM', () => child.kill('SIGTERM'));
const parent = process.ppid;
setInterval(() => {
	if (process.ppid !== parent) child.kill('SIGTERM');
}, 250).unref();
child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 0)));
