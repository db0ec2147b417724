// The deploy-rollback check of a storage change (docs/decisions.md "A step is one SQLite row"):
// instances mid-run (sleeping, waiting for an event, retrying, a saga, a run() that catches) go
// through OLD -> NEW -> OLD -> NEW builds on one persisted state under `wrangler dev`, and must all
// end as if nothing had happened: completed, with the outputs their code gives, no compensation run,
// no fallback taken, every event consumed.
//
//   node scripts/rollback-check.mjs --old <checkout of the previous build, npm ci done> [--storage-format N]
//
// `--storage-format N`: the new build runs with SHARDFLOW_STORAGE_FORMAT=N (src/runtime/storage-format.ts):
// 3 makes set B's instances compact ones, 4 writes compact format 2 and keeps a finished inline child in one row,
// 5 folds a compact instance's sleeps, retries and waits into the writes around them.
// `--old-storage-format N`: the previous build runs with SHARDFLOW_STORAGE_FORMAT=N too (set A at that level).
// `--forward`: no rollback (OLD -> NEW -> NEW): for a level the previous build cannot read, whether what the previous
// build wrote keeps running on the new one (set B is woken on the new build instead).
// The older flags below set the old switches one by one (each wins over the level for its own part).
// `--layout compact`: the new build runs with SHARDFLOW_STORAGE_LAYOUT=compact, so set B's instances are
// compact ones (docs/decisions.md "The compact instance layout"): what a rollback to a build that cannot
// read them does to them. `--format 2` (with `--layout compact`): they write the compact layout's format 2.
//
// The check's Worker (scripts/rollback-check/) is copied into the old checkout, so each build serves
// the same workflows over its own src/. Set A is created on OLD (its objects at the old schema, then
// migrated by NEW); set B on NEW. Both are woken during the second OLD phase, where a build that
// cannot write the new layout must fail the pass and retry it, never end the run.
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startDevServer } from '../bench/lib/dev-server.mjs';

const root = resolve(import.meta.dirname, '..');
const oldAt = process.argv.includes('--old') ? resolve(process.argv[process.argv.indexOf('--old') + 1]) : undefined;
if (!oldAt || !existsSync(join(oldAt, 'node_modules'))) {
	console.error('usage: node scripts/rollback-check.mjs --old <checkout of the previous build with node_modules> [--storage-format N [--old-storage-format N] [--forward] | --layout compact [--one-row] [--format 2]]');
	process.exit(2);
}
cpSync(join(root, 'scripts/rollback-check'), join(oldAt, 'scripts/rollback-check'), { recursive: true });

const layout = process.argv.includes('--layout') ? process.argv[process.argv.indexOf('--layout') + 1] : undefined;
if (layout !== undefined && layout !== 'compact' && layout !== 'table') {
	console.error('--layout takes "compact" or "table"');
	process.exit(2);
}
// `--one-row`: the new build keeps a child that finished inside its parent in one row (SHARDFLOW_INLINE_ONE_ROW=true).
const oneRow = process.argv.includes('--one-row');
// `--format 2`: the new build's compact instances write format 2 (src/runtime/compact-format.ts).
const format = process.argv.includes('--format') ? process.argv[process.argv.indexOf('--format') + 1] : undefined;
const storageFormat = process.argv.includes('--storage-format') ? process.argv[process.argv.indexOf('--storage-format') + 1] : undefined;
const oldStorageFormat = process.argv.includes('--old-storage-format') ? process.argv[process.argv.indexOf('--old-storage-format') + 1] : undefined;
for (const level of [storageFormat, oldStorageFormat]) {
	if (level !== undefined && !/^[1-5]$/.test(level)) {
		console.error('--storage-format and --old-storage-format take 1 to 5');
		process.exit(2);
	}
}
const forward = process.argv.includes('--forward');
/** The previous build's settings (its own level, when asked). */
const oldVars = { SHARDFLOW_ENV: 'development', ...(oldStorageFormat ? { SHARDFLOW_STORAGE_FORMAT: oldStorageFormat } : {}) };
/** The new build's settings (the old build ignores a setting it does not know). */
const newVars = {
	SHARDFLOW_ENV: 'development',
	...(storageFormat ? { SHARDFLOW_STORAGE_FORMAT: storageFormat } : {}),
	...(layout ? { SHARDFLOW_STORAGE_LAYOUT: layout } : {}),
	...(oneRow ? { SHARDFLOW_INLINE_ONE_ROW: 'true' } : {}),
	...(format ? { SHARDFLOW_COMPACT_FORMAT: format } : {}),
};
const persistTo = mkdtempSync(join(tmpdir(), 'shardflow-rollback-'));
const config = ['scripts/rollback-check/wrangler.jsonc'];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const failures = [];
const check = (ok, what) => {
	console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
	if (!ok) failures.push(what);
};

let server;
async function serve(build) {
	const t0 = Date.now();
	server = await startDevServer({ configs: config, persistTo, cwd: build === 'old' ? oldAt : root, timeoutMs: 120_000, ...(build === 'new' ? { vars: newVars } : oldStorageFormat ? { vars: oldVars } : {}) });
	console.log(`-- ${build} build up in ${Date.now() - t0} ms`);
	return server.url;
}
async function stop() {
	const log = server.output();
	await server.stop();
	server = undefined;
	return log;
}
const json = async (url, init) => {
	const res = await fetch(url, init);
	return { status: res.status, body: await res.json().catch(() => null) };
};
const post = (url, body) => json(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function createSet(url, set, wakeAt) {
	const ids = {};
	for (const [type, payload] of [['rc-sleeper', { wakeAt }], ['rc-waiter', {}], ['rc-retrier', {}], ['rc-saga', { wakeAt }], ['rc-catcher', { wakeAt }], ['rc-parent', { wakeAt }]]) {
		const id = `${set}-${type}`;
		const res = await post(`${url}/workflows`, { type, id, payload });
		check(res.status === 201, `${set}: created ${id} (${res.status})`);
		ids[type] = id;
	}
	return ids;
}
async function statuses(url, ids) {
	const out = {};
	for (const id of ids.flatMap((set) => Object.values(set))) out[id] = (await json(`${url}/workflows/${id}`)).body?.status ?? 'unreadable';
	return out;
}
async function history(url, id) {
	const events = [];
	let cursor = null;
	do {
		const page = (await json(`${url}/workflows/${id}/history?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)).body;
		events.push(...page.events);
		cursor = page.nextCursor;
	} while (cursor);
	return events;
}
// Every live status listed (no status filter), by pages of 2 in both orders: each instance exactly once, with the
// status its own object reports. drizzle/0018 dropped the status-less listing indexes, which an older build
// used for this listing: it must still answer it (by a scan and sort), and the new build by one walk per status.
// Instances still running may change status during a walk (the index follows within moments): a walk is retried
// until the statuses before and after it agree, up to 10 times.
async function listsEveryInstance(url, build, ids) {
	const want = ids.flatMap((set) => Object.values(set));
	for (const order of ['created', 'updated']) {
		let ok = false;
		let told = '';
		for (let attempt = 0; attempt < 10 && !ok; attempt++) {
			if (attempt > 0) await sleep(1000);
			const known = await statuses(url, ids);
			const seen = {};
			let cursor = null;
			let pages = 0;
			do {
				const page = (await json(`${url}/workflows?limit=2&order=${order}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)).body;
				// The parents' children are checked apart (at the end), each listed with its parent.
				for (const item of page?.items ?? []) if (!item.id.includes('::')) seen[item.id] = [...(seen[item.id] ?? []), item.status];
				cursor = page?.nextCursor ?? null;
			} while (cursor && ++pages < 100);
			const after = await statuses(url, ids);
			if (want.some((id) => known[id] !== after[id])) continue;
			const once = want.every((id) => seen[id]?.length === 1) && Object.keys(seen).length === want.length;
			ok = once && want.every((id) => seen[id]?.[0] === known[id]);
			told = JSON.stringify(seen);
		}
		check(ok, `${build}: lists every instance once with its status, every live status by ${order}${ok ? '' : ` (${told})`}`);
	}
}

try {
	// OLD 1: set A is created by the previous build; each reaches its sleep, wait or retry.
	let url = await serve('old');
	const wakeA = Date.now() + 45_000;
	const a = await createSet(url, 'A', wakeA);
	// Set C: a sleeper of the old build that the new one never starts: it finishes on the rolled-back build, whose
	// index delivery then writes the run metrics the old way on a shard the new build migrated.
	const c = `C-rc-sleeper`;
	check((await post(`${url}/workflows`, { type: 'rc-sleeper', id: c, payload: { wakeAt: wakeA } })).status === 201, `C: created ${c}`);
	await sleep(1500);
	console.log('   A on old:', await statuses(url, [a]));
	await stop();

	// NEW 1: the new build migrates set A's objects when they next start; set B is created at the new layout.
	url = await serve('new');
	const wakeB = Date.now() + 5_000;
	const b = await createSet(url, 'B', wakeB);
	await sleep(1500);
	const onNew = await statuses(url, [a, b]);
	console.log('   A, B on new:', onNew);
	check(Object.values(onNew).every((s) => s !== 'errored' && s !== 'terminated'), 'nothing errored on the new build');
	await stop();

	// OLD 2: the deploy rolled back with every instance mid-run: sleeps end, retries fall due, events come.
	if (!forward) {
	url = await serve('old');
	const until = Math.max(wakeA, Date.now()) + 8_000;
	for (const [set, ids] of [['A', a], ['B', b]]) {
		const res = await post(`${url}/workflows/${ids['rc-waiter']}/events/go`, { value: set });
		check(res.status === 202, `${set}: the event was accepted on the rolled-back build (${res.status})`);
	}
	let seen = {};
	while (Date.now() < until) {
		seen = await statuses(url, [a, b]);
		if (Object.values(seen).some((s) => s === 'errored' || s === 'terminated')) break;
		await sleep(1000);
	}
	seen[c] = (await json(`${url}/workflows/${c}`)).body?.status;
	console.log('   A, B, C on old again:', seen);
	check(seen[c] === 'completed', 'C: the old build finished its own sleeper');
	check(Object.values(seen).every((s) => s !== 'errored' && s !== 'terminated'), 'nothing errored on the rolled-back build');
	await sleep(1500);
	await listsEveryInstance(url, 'old build after the rollback', [a, b, { c }]);
	const oldLog = await stop();
	const failedPasses = (oldLog.match(/pass\.failed/g) ?? []).length;
	console.log(`   the rolled-back build logged ${failedPasses} failed passes (retried with backoff)`);
	}

	// NEW 2: rolled forward, every instance finishes as its code says.
	url = await serve('new');
	if (forward) {
		// No rollback: the events come on the new build.
		for (const [set, ids] of [['A', a], ['B', b]]) {
			const res = await post(`${url}/workflows/${ids['rc-waiter']}/events/go`, { value: set });
			check(res.status === 202, `${set}: the event was accepted on the new build (${res.status})`);
		}
	}
	const all = [a, b];
	const deadline = Date.now() + 120_000;
	let final = {};
	while (Date.now() < deadline) {
		final = await statuses(url, all);
		if (Object.values(final).every((s) => s === 'completed' || s === 'errored' || s === 'terminated')) break;
		await sleep(1000);
	}
	console.log('   final:', final);
	await sleep(1500);
	await listsEveryInstance(url, 'new build', [a, b, { c }]);
	for (const [set, ids] of [['A', a], ['B', b]]) {
		const output = async (type) => (await json(`${url}/workflows/${ids[type]}`)).body?.output;
		check(final[ids['rc-sleeper']] === 'completed' && JSON.stringify(await output('rc-sleeper')) === '["a","b","c"]', `${set}: the sleeper completed with every step`);
		check(final[ids['rc-waiter']] === 'completed' && (await output('rc-waiter')) === `got ${set}`, `${set}: the waiter consumed the event sent on the rolled-back build`);
		const retried = await output('rc-retrier');
		check(final[ids['rc-retrier']] === 'completed' && /^ok at attempt \d+$/.test(retried ?? ''), `${set}: the retrier completed (${retried})`);
		const sagaHistory = await history(url, ids['rc-saga']);
		check(final[ids['rc-saga']] === 'completed' && (await output('rc-saga')) === 'booked', `${set}: the saga completed`);
		check(!sagaHistory.some((e) => e.kind.startsWith('rollback.')), `${set}: no compensation ran`);
		const catcherHistory = await history(url, ids['rc-catcher']);
		check(final[ids['rc-catcher']] === 'completed' && (await output('rc-catcher')) === 'primary', `${set}: the catcher took its primary path`);
		check(!catcherHistory.some((e) => e.step === 'fallback'), `${set}: no fallback step ran`);
		const parentId = ids['rc-parent'];
		check(final[parentId] === 'completed' && JSON.stringify(await output('rc-parent')) === '[2,"ab",6]', `${set}: the parent completed with its children's outputs (${JSON.stringify(await output('rc-parent'))})`);
		const children = ['first', 'napper', 'last'].map((name) => `${parentId}::${name}`);
		const listedChildren = async () => ((await json(`${url}/workflows?parent=${encodeURIComponent(parentId)}&limit=10`)).body?.items ?? []).map((item) => `${item.id} ${item.status}`).sort();
		let listed = await listedChildren();
		for (let i = 0; i < 15 && listed.length < 3; i++) listed = (await sleep(1000), await listedChildren());
		check(JSON.stringify(listed) === JSON.stringify(children.map((id) => `${id} completed`).sort()), `${set}: its three children listed with it, completed (${JSON.stringify(listed)})`);
		for (const child of children) {
			const read = (await json(`${url}/workflows/${child}`)).body;
			const steps = (await json(`${url}/workflows/${child}/steps`)).body?.items ?? [];
			check(read?.status === 'completed' && steps.length > 0 && steps.every((s) => s.status === 'completed'), `${set}: ${child} reads completed by its id, with its steps (${read?.status}, ${steps.length} steps)`);
		}
	}
	// The run metrics of each type (the index shards went through the same deploys): every run started and
	// completed, and every duration in the histogram, whichever build recorded it (C's: the old build, the old way).
	for (const type of [...Object.keys(a), 'rc-leaf', 'rc-nap-child']) {
		const metrics = (await json(`${url}/types/${type}/metrics`)).body;
		const runs = type === 'rc-sleeper' ? 3 : type === 'rc-leaf' ? 4 : 2;
		check(metrics?.hour?.started === runs && metrics?.hour?.completed === runs && metrics?.hour?.durationMs?.runs === runs, `${type}: metrics count its ${runs} runs, with their durations (${JSON.stringify({ started: metrics?.hour?.started, completed: metrics?.hour?.completed, durations: metrics?.hour?.durationMs?.runs })})`);
	}
	await stop();
} catch (error) {
	failures.push(String(error?.stack ?? error));
	console.error(error);
	if (server) await server.stop();
} finally {
	rmSync(persistTo, { recursive: true, force: true });
}
console.log(failures.length === 0 ? 'rollback check: every instance came through' : `rollback check: ${failures.length} failure(s)`);
process.exit(failures.length === 0 ? 0 : 1);
