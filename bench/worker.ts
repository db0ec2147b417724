import { DurableObject, tracing, WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from 'cloudflare:workers';
import { Hono } from 'hono';
import { IndexClient, routeIndexEntry } from '../src/client/index-client';
import { instances, instanceStub } from '../src/client/instance-client';
import type { IndexEntry } from '../src/engine/index/index-entry';
import type { ShardListQuery } from '../src/engine/index/index-query';
import type { WorkflowStatus } from '../src/engine/support/statuses';
import type { IndexShardStore } from '../src/runtime/index-shard-store';
import { defineRegistry } from '../src/engine/definition/registry';
import { asInvocation, invocations } from '../test/harness/invocations';
import { shardIndex } from '../src/engine/index/shard';
import { OUTBOX_GRACE_MS } from '../src/engine/support/timing';
import { createWorkflowRunner } from '../src/runtime/workflow-runner';
import { tracerOf } from '../src/runtime/runtime-tracer';
import { createApp } from '../src/host';
import { AlarmMeter, SqlMeter, totalAlarmReading, totalKvWrites, totalMetricsRows, totalSqlReading, type SqlMeterReading } from './sql-meter';
import {
	BenchWorkflow,
	BenchWorkflow16,
	ExpiringWorkflow,
	FetchHoldWorkflow,
	HoldWorkflow,
	IndexOnly1,
	IndexOnly16,
	IndexOnly4,
	InvokeParentWorkflow,
	manualChildren,
	ManualParentWorkflow,
	NotifyingChildWorkflow,
	BigHistoryWorkflow,
	FetcherWorkflow,
	BurstWorkflow,
	StreamerWorkflow,
	BigStreamWorkflow,
	CostedWorkflow,
	CostedFetchWorkflow,
	CostedSleepWorkflow,
	CostedChildrenWorkflow,
	CostedEventWorkflow,
	CostedRetryWorkflow,
	InlineParentWorkflow,
	CapacityRun,
	CapacityHotKey,
	CapacityTick,
	CapacityList1,
	CapacityList64,
	CapacityList256,
	CapacityWrites,
	type BenchParams,
	type RoundTrip,
} from './workflows';
import { callRole, roleStub } from '../src/client/stubs';
import { unwrap } from '../src/client/rpc';
import { limiterInfo } from '../src/client/limiter-client';
import { schedules } from '../src/client/schedule-client';

const registry = defineRegistry({
	// Long runs (the hard-crash test's 20,000 steps) need more than the default 10,000 steps.
	bench: { workflow: BenchWorkflow, limits: { steps: 25_000 } },
	bench16: { workflow: BenchWorkflow16, shards: 16 },
	ix1: { workflow: IndexOnly1, shards: 1 },
	ix4: { workflow: IndexOnly4, shards: 4 },
	ix16: { workflow: IndexOnly16, shards: 16 },
	hold: { workflow: HoldWorkflow },
	'fetch-hold': { workflow: FetchHoldWorkflow },
	expiring: { workflow: ExpiringWorkflow, retention: { completed: '1 second' } },
	'invoke-parent': { workflow: InvokeParentWorkflow },
	'manual-parent': { workflow: ManualParentWorkflow },
	'notifying-child': { workflow: NotifyingChildWorkflow },
	// Room for ~1 GiB of history: the production-limits rows replay 10-100 MiB.
	'big-history': { workflow: BigHistoryWorkflow, limits: { historyBytes: 1024 * 1024 * 1024 } },
	// Steps that each call an outside API once (answered in the Worker): subrequests per invocation.
	fetcher: { workflow: FetcherWorkflow },
	// Thousands of parallel fetch steps started in one turn: responsiveness while they start.
	burst: { workflow: BurstWorkflow },
	// Live streams: fan-out to many subscribers of one instance, emit-to-receive latency.
	streamer: { workflow: StreamerWorkflow },
	// Slow subscribers of a large stream (test/tooling/stream-backpressure.test.ts): its history is tens of MB.
	'big-stream': { workflow: BigStreamWorkflow, limits: { historyBytes: 256 * 1024 * 1024 } },
	// The cost figures (bench/run.mjs "cost"): their instances ("q-...") and index shards count their SQL and requests.
	costed: { workflow: CostedWorkflow },
	'costed-fetch': { workflow: CostedFetchWorkflow },
	'costed-sleep': { workflow: CostedSleepWorkflow },
	'costed-children': { workflow: CostedChildrenWorkflow },
	'costed-event': { workflow: CostedEventWorkflow },
	'costed-retry': { workflow: CostedRetryWorkflow },
	// Children run inline in their parent, under kill -9 (test/tooling/hard-crash.test.ts).
	'inline-parent': { workflow: InlineParentWorkflow },
	// Capacity (bench/capacity.mjs): a type on one shard overloaded, a hot key, a per-second schedule, listing at scale.
	cap1: { workflow: CapacityRun, shards: 1 },
	'cap-hot': { workflow: CapacityHotKey, shards: 1 },
	'cap-tick': { workflow: CapacityTick, shards: 1 },
	'cap-list1': { workflow: CapacityList1, shards: 1 },
	'cap-list64': { workflow: CapacityList64, shards: 64 },
	'cap-list256': { workflow: CapacityList256, shards: 256 },
	'cap-writes': { workflow: CapacityWrites, shards: 1 },
	// The eu group: the cost runs with SHARDFLOW_BENCH_GROUP=eu (docs/residency.md "Cost").
}, { groups: { groups: { eu: { jurisdiction: 'eu' } } } });

/** Objects whose SQL and requests the cost figures count: their instances ("q-...") and the costed types' index shards. */
const metered = (full: string | undefined) => {
	if (full === undefined) return false;
	// In a group (SHARDFLOW_BENCH_GROUP), the same objects with the group's part before their names.
	const name = full.startsWith('eu.eu~') ? full.slice('eu.eu~'.length) : full;
	return name.startsWith('q-') || name.startsWith('__index:costed') || name.startsWith('__index:cap-writes:');
};
/**
 * Objects whose invocations count their subrequests (the production-limits rows' fetch runs, ids "lim-..."): only
 * they run inside the counter's AsyncLocalStorage context, which every other figure (a create's latency) would pay for.
 */
const countsInvocations = (name: string) => name.startsWith('lim-');
/** Requests (RPC calls and alarms) that reached a metered object, as Cloudflare bills them; the bench's own hooks, status polls and the internal `call` router left out. */
let meteredRequests = 0;
const meteredByMethod = new Map<string, number>();
const UNBILLED = new Set(['constructor', 'settle', 'sqlReading', 'historyRows', 'databaseSize', 'schemaObjects', 'subrequests', 'describe', 'steps', 'history', 'fetch', 'webSocketClose', 'call', 'capacitySeed', 'capacityFinished', 'capacityWrites', 'capacityReadCost']);

manualChildren.create = (env, type, id, payload) => instances.create(env as Env, { type, id, payload });
manualChildren.sendEvent = (env, id, event, payload) => instances.sendEvent(env as Env, { id, event, payload });

/** Our engine, with one extra read for the storage-cost figures. */
export class WorkflowRunner extends createWorkflowRunner(registry) {
	private readonly sqlMeter: SqlMeter | undefined;

	constructor(ctx: DurableObjectState, env: Env) {
		// Only the instances of the SQL-cost rows (ids "q-..."), so no other figure pays for the counting. Installed
		// before the storage layer captures `exec`: every statement of the engine is counted.
		const sqlMeter = metered(ctx.id.name) ? new SqlMeter(ctx.storage.sql, ctx.storage) : undefined;
		// Their alarm writes too: each setAlarm() is billed as a row written (bench/sql-meter.ts AlarmMeter).
		if (sqlMeter) new AlarmMeter(ctx.storage, ctx.id.name!.startsWith('__index:') ? 'index' : 'instance');
		// The cost runs measure both storage layouts in one bench run: "q-c-…" instances (and their children) compact, "q-t-…" in tables.
		// In the eu group (SHARDFLOW_BENCH_GROUP=eu) the same names follow the group's part.
		const local = ctx.id.name?.startsWith('eu.eu~') ? ctx.id.name.slice('eu.eu~'.length) : ctx.id.name;
		const layout = local?.startsWith('q-c-') ? 'compact' : local?.startsWith('q-t-') ? 'table' : undefined;
		// Compact as a new project runs it (wrangler.jsonc's SHARDFLOW_STORAGE_FORMAT=5: format 2, a finished inline child
		// in one row and sleeps folded, unless the bench's env sets an old switch: src/runtime/storage-format.ts); the table layout
		// as an upgraded deployment does (its old switch wins over the level: the outbox as the bench's env says).
		super(ctx, (layout ? { ...env, SHARDFLOW_STORAGE_LAYOUT: layout, ...(layout === 'compact' ? { SHARDFLOW_STORAGE_FORMAT: env.SHARDFLOW_STORAGE_FORMAT ?? '5' } : {}) } : env) as never);
		this.sqlMeter = sqlMeter;
	}

	/** Statements, rows read and rows written by this object's SQLite so far (bench/sql-meter.ts; "q-" instances only). */
	sqlReading(): SqlMeterReading {
		if (!this.sqlMeter) throw new Error('only instances whose id starts with "q-" count their SQL');
		return this.sqlMeter.reading();
	}

	/** Rows in the object's history table (a step's records kept in its own row are not among them: drizzle/0013). */
	historyRows(): number {
		return Number([...this.ctx.storage.sql.exec('SELECT count(*) AS n FROM history')][0]?.n ?? 0);
	}

	/** Benchmark hook (this Worker only): resolves once the replay loop (and index delivery, unless `index: false`) is idle. */
	settle(options?: { index?: boolean }): Promise<void> {
		return this.role?.kind === 'instance' ? this.role.idle(options) : Promise.resolve();
	}

	databaseSize(): number {
		return this.ctx.storage.sql.databaseSize;
	}

	/** Tables, indexes and other schema objects in the object's SQLite database, the runtime's own `_cf_` ones included. */
	schemaObjects(): number {
		return [...this.ctx.storage.sql.exec('SELECT name FROM sqlite_master')].length;
	}

	/** The subrequests of each invocation of this object so far (test/harness/invocations.ts). */
	subrequests(): number[] {
		return (invocations.get(this.ctx.id.name ?? '') ?? []).map((inv) => inv.subrequests);
	}

	// ---- capacity hooks (bench/capacity.mjs), on an index shard: seeding by direct SQL, what the shard holds, write cost ----

	/**
	 * Inserts entries `<prefix><from>` .. `<prefix><from + count - 1>` (numbers zero-padded to 8) straight into this
	 * shard's table in one statement: statuses cycle completed x3, waiting, running, errored; createdAt `base` + n (1.7e12 by default).
	 * No metrics, no attributes: the listing rows only read them. Far faster than a million deliveries.
	 */
	async capacitySeed({ type, prefix, from, count, base = 1_700_000_000_000 }: { type: string; prefix: string; from: number; count: number; base?: number }): Promise<number> {
		await this.indexWrite([]); // the shard's tables
		return this.ctx.storage.sql.exec(
			`WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
			INSERT INTO index_entries (id, type, status, created_at, updated_at, version)
			SELECT ? || substr('0000000' || i, -8, 8), ?, CASE i % 6 WHEN 3 THEN 'waiting' WHEN 4 THEN 'running' WHEN 5 THEN 'errored' ELSE 'completed' END,
				? + i, ? + i, 1 FROM n`,
			from, from + count - 1, prefix, type, base, base,
		).rowsWritten;
	}

	/** The finished entries of this shard with ids in [from, to), as it holds them now, and its clock: the overload row's index lag. */
	async capacityFinished({ from, to }: { from: string; to: string }): Promise<{ now: number; rows: [string, number, number][] }> {
		await this.indexWrite([]); // polled before the first delivery came: the shard's tables
		const rows = [...this.ctx.storage.sql.exec(`SELECT id, created_at, updated_at FROM index_entries WHERE id >= ? AND id < ? AND status IN ('completed', 'errored', 'terminated')`, from, to)];
		return { now: Date.now(), rows: rows.map((r) => [String(r.id), Number(r.created_at), Number(r.updated_at)]) };
	}

	/**
	 * `count` index writes of one new entry each (a short run's one delivery: final status, so the metrics count a start
	 * and a finish), each in its own transaction as deliveries are, in process (no RPC): `current` is the shard's write
	 * path (point read, upsert with RETURNING, metric counters), `uncounted` the same without the counters (a rebalance's
	 * copies), `plain` one upsert statement. The caller times the call; the SQL counts are this shard's meter.
	 */
	async capacityWrites({ count, path, tag }: { count: number; path: 'current' | 'uncounted' | 'plain'; tag: string }): Promise<SqlMeterReading> {
		await this.indexWrite([]);
		const before = this.sqlMeter!.reading();
		const at = Date.now();
		const shard = this.role as unknown as { write(entries: IndexEntry[], options?: { moved?: boolean }): Promise<void> };
		for (let i = 0; i < count; i++) {
			const e: IndexEntry = { id: `cw-${tag}-${path}-${i}`, type: 'cap-writes', status: 'completed', createdAt: at, updatedAt: at + 5, version: 3 };
			if (path === 'plain') {
				this.ctx.storage.transactionSync(() =>
					this.ctx.storage.sql.exec(
						`INSERT INTO index_entries (id, type, status, created_at, updated_at, version) VALUES (?, ?, ?, ?, ?, ?)
						ON CONFLICT (id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at, version = excluded.version WHERE excluded.version > index_entries.version`,
						e.id, e.type, e.status, e.createdAt, e.updatedAt, e.version,
					),
				);
			} else await shard.write([e], path === 'uncounted' ? { moved: true } : {});
		}
		const after = this.sqlMeter!.reading();
		return { statements: after.statements - before.statements, rowsRead: after.rowsRead - before.rowsRead, rowsWritten: after.rowsWritten - before.rowsWritten };
	}

	/**
	 * One read of this shard in process, and the rows it read, from this shard's meter (bench/listing-cost.mjs: a listing in
	 * updatedAt order, the retention's walks, the metrics rollup's scan after the object starts; `noop` reads nothing, what
	 * the caller's timing subtracts). The caller times the call: the clock inside an object does not move while it computes.
	 */
	async capacityReadCost({ op, query }: { op: 'noop' | 'list' | 'oldestUpdated' | 'updatedBy' | 'metrics' | 'writeLong'; query?: ShardListQuery & { status?: WorkflowStatus[] } }): Promise<{ rowsRead: number; answer: number }> {
		await this.indexWrite([]);
		const store = (this.role as unknown as { shard(): IndexShardStore }).shard();
		const run = (): number => {
			if (op === 'list') return store.list(query!).length;
			if (op === 'oldestUpdated') return store.oldestUpdated('completed') ?? -1;
			if (op === 'updatedBy') return store.updatedBy('completed', query!.updatedBefore!, 100).length;
			if (op === 'metrics') return store.metrics.read(Date.now()).day.completed;
			// A run created a week ago that finished now: the longest age a page in updatedAt order must allow for.
			if (op === 'writeLong') store.write([{ id: 'LC-long', type: 'cap-writes', status: 'completed', createdAt: Date.now() - 7 * 86_400_000, updatedAt: Date.now(), version: 3 }]);
			return 0;
		};
		const before = this.sqlMeter!.reading().rowsRead;
		const answer = run();
		return { rowsRead: this.sqlMeter!.reading().rowsRead - before, answer };
	}

	override async alarm(info?: AlarmInvocationInfo) {
		const name = this.ctx.id.name ?? '';
		return countsInvocations(name) ? asInvocation(name, 'alarm', () => super.alarm(info)) : super.alarm(info);
	}
}

// Every RPC method and the alarm of a metered object count one request (the bench's own hooks excepted).
for (let proto = WorkflowRunner.prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
	for (const key of Object.getOwnPropertyNames(proto)) {
		const method = Object.getOwnPropertyDescriptor(proto, key)?.value;
		if (UNBILLED.has(key) || typeof method !== 'function' || Object.prototype.hasOwnProperty.call(WorkflowRunner.prototype, `__counted_${key}`)) continue;
		Object.defineProperty(WorkflowRunner.prototype, `__counted_${key}`, { value: true });
		Object.defineProperty(WorkflowRunner.prototype, key, {
			value(this: { ctx: DurableObjectState }, ...args: unknown[]) {
				if (metered(this.ctx.id.name)) {
					meteredRequests++;
					meteredByMethod.set(key, (meteredByMethod.get(key) ?? 0) + 1);
				}
				return method.apply(this, args);
			},
			writable: true,
			configurable: true,
		});
	}
}

// The create's invocation runs the first pass: its subrequests count too.
const create = (WorkflowRunner.prototype as unknown as Record<string, (input: unknown) => Promise<unknown>>).create!;
Object.defineProperty(WorkflowRunner.prototype, 'create', {
	value(this: { ctx: DurableObjectState }, input: unknown) {
		const name = this.ctx.id.name ?? '';
		return countsInvocations(name) ? asInvocation(name, 'create', () => create.call(this, input)) : create.call(this, input);
	},
	writable: true,
	configurable: true,
});

/** The floor: what one step must do at minimum, one SQLite write, and nothing else. */
export class FloorObject extends DurableObject {
	run(steps: number): { steps: number; rowsWritten: number } {
		const sql = this.ctx.storage.sql;
		sql.exec('CREATE TABLE IF NOT EXISTS steps (name TEXT PRIMARY KEY, result TEXT, status TEXT)');
		let rowsWritten = 0;
		for (let i = 0; i < steps; i++) rowsWritten += sql.exec('INSERT OR REPLACE INTO steps VALUES (?, ?, ?)', `s${i}`, JSON.stringify(i), 'completed').rowsWritten;
		return { steps, rowsWritten };
	}
	databaseSize(): number {
		return this.ctx.storage.sql.databaseSize;
	}
}

/** The peer: the same workload on Cloudflare Workflows. */
export class BenchCfWorkflow extends WorkflowEntrypoint<Env, BenchParams> {
	override async run(event: Readonly<WorkflowEvent<BenchParams>>, step: WorkflowStep) {
		const { steps, sleepEvery = 0, wait = false, stamp = false } = event.payload;
		if (stamp) {
			const stamps: number[] = [];
			for (let i = 0; i < steps; i++) stamps.push(await step.do(`s${i}`, async () => Date.now()));
			return stamps;
		}
		let total = 0;
		for (let i = 0; i < steps; i++) {
			total += await step.do(`s${i}`, async () => i);
			if (sleepEvery > 0 && (i + 1) % sleepEvery === 0) await step.sleep(`z${i}`, 1);
		}
		if (wait) total += (await step.waitForEvent<{ n: number }>('go', { type: 'go', timeout: '1 hour' })).payload.n;
		return total;
	}
}

interface Env {
	WORKFLOW_RUNNER: DurableObjectNamespace<WorkflowRunner>;
	FLOOR: DurableObjectNamespace<FloorObject>;
	CF_WORKFLOW: Workflow<BenchParams>;
	/** The compact cost runs' storage format (`--var SHARDFLOW_STORAGE_FORMAT=4` for the one before sleeps were folded); 5 when unset. */
	SHARDFLOW_STORAGE_FORMAT?: string;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const FINISHED = new Set(['completed', 'errored', 'terminated']);
const CF_FINISHED = new Set(['complete', 'errored', 'terminated']);

const POLL_LIMIT_MS = 120_000;

async function oursDone(env: Env, id: string, until: (status: string) => boolean = (s) => FINISHED.has(s), pollMs = 1) {
	const stub = instanceStub(env, id) as unknown as { settle(options: { index: boolean }): Promise<void> };
	for (const deadline = Date.now() + POLL_LIMIT_MS; Date.now() < deadline; ) {
		await stub.settle({ index: false }); // the workflow's own progress, not its index delivery
		const { status } = await instances.status(env, { id });
		if (until(status)) return status;
		await pause(pollMs);
	}
	throw new Error(`instance ${id} did not reach the expected status in time`);
}

type CfStatus = InstanceStatus & { __LOCAL_DEV_STEP_OUTPUTS?: unknown[] };

async function cfDone(env: Env, id: string, until: (status: CfStatus) => boolean = (s) => CF_FINISHED.has(s.status)) {
	const instance = await env.CF_WORKFLOW.get(id);
	let last = '';
	for (const deadline = Date.now() + POLL_LIMIT_MS; Date.now() < deadline; ) {
		const status = (await instance.status()) as CfStatus;
		last = status.status;
		if (until(status)) return status.status;
		await pause(2);
	}
	throw new Error(`workflow ${id} stayed "${last}"`);
}

const app = new Hono<{ Bindings: Env }>();
let seq = 0;
const newId = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${(seq++).toString(36)}`;

app.get('/__health', (c) => c.text('ok'));
// What bench/tracing-ab.mjs compares: whether the engine is lent a tracer (SHARDFLOW_TRACING=off: none), and whether this invocation is sampled.
app.get('/tracing', (c) => c.json({ tracer: tracerOf(c.env) !== undefined, sampled: tracing.getActiveSpan()?.isTraced === true }));

// Live streams: a streamer instance (waiting for "go"), a subscriber's WebSocket to it, and its "go".
app.post('/streams/create', async (c) => {
	const params = await c.req.json<{ messages: number; gapMs: number }>();
	const { id } = await instances.create(c.env, { type: 'streamer', id: newId('s'), payload: params });
	return c.json({ id });
});
app.get('/streams/subscribe/:id', (c) => {
	const stub = c.env.WORKFLOW_RUNNER.get(c.env.WORKFLOW_RUNNER.idFromName(c.req.param('id')));
	return stub.fetch(new Request('https://instance/stream', { headers: { upgrade: 'websocket' } }));
});
// The API's stream route as a user gets it (SSE, or a WebSocket with Upgrade), for the slow-subscriber test.
const api = createApp(registry);
app.get('/workflows/:id/stream', (c) => api.fetch(c.req.raw, c.env, c.executionCtx));
app.post('/streams/go/:id', async (c) => {
	await instances.sendEvent(c.env, { id: c.req.param('id'), event: 'go', payload: { n: 1 } });
	return c.json({ ok: true });
});

app.post('/ours/create', async (c) => {
	const { type = 'bench', params } = await c.req.json<{
		type?: 'bench' | 'bench16' | 'hold' | 'fetch-hold' | 'big-history' | 'fetcher' | 'burst' | 'inline-parent';
		params: BenchParams | { holdMs: number; napMs?: number } | { url: string } | { results: number; bytes: number; sleepMs: number } | { n: number } | { n: number; steps: number; awaitMs: number };
	}>();
	const { id } = await instances.create(c.env, { type, id: newId(type === 'fetcher' ? 'lim' : 'o'), payload: params });
	return c.json({ id });
});
app.post('/cf/create', async (c) => {
	const { params } = await c.req.json<{ params: BenchParams }>();
	const instance = await c.env.CF_WORKFLOW.create({ id: newId('c'), params });
	return c.json({ id: instance.id });
});

app.post('/ours/run', async (c) => {
	const { params } = await c.req.json<{ params: BenchParams }>();
	const { id } = await instances.create(c.env, { type: 'bench', id: newId('o'), payload: params });
	return c.json({ id, status: await oursDone(c.env, id) });
});
app.post('/cf/run', async (c) => {
	const { params } = await c.req.json<{ params: BenchParams }>();
	const instance = await c.env.CF_WORKFLOW.create({ id: newId('c'), params });
	return c.json({ id: instance.id, status: await cfDone(c.env, instance.id) });
});
app.post('/floor/run', async (c) => {
	const { params } = await c.req.json<{ params: BenchParams }>();
	const stub = c.env.FLOOR.get(c.env.FLOOR.idFromName(newId('f')));
	const { steps, rowsWritten } = await stub.run(params.steps);
	return c.json({ steps, rowsWritten });
});

// Event round trip: /prepare leaves an instance waiting; /event sends and waits for completion.
app.post('/ours/prepare-wait', async (c) => {
	const { id } = await instances.create(c.env, { type: 'bench', id: newId('o'), payload: { steps: 1, wait: true } });
	await oursDone(c.env, id, (s) => s === 'waiting');
	return c.json({ id });
});
app.post('/ours/event', async (c) => {
	const { id } = await c.req.json<{ id: string }>();
	await instances.sendEvent(c.env, { id, event: 'go', payload: { n: 1 } });
	return c.json({ status: await oursDone(c.env, id) });
});
app.post('/cf/prepare-wait', async (c) => {
	const instance = await c.env.CF_WORKFLOW.create({ id: newId('c'), params: { steps: 1, wait: true } });
	// The local engine reports a waiting instance as "running": wait until its one step has an output.
	await cfDone(c.env, instance.id, (s) => s.status === 'waiting' || (s.__LOCAL_DEV_STEP_OUTPUTS?.length ?? 0) >= 1);
	return c.json({ id: instance.id });
});
app.post('/cf/event', async (c) => {
	const { id } = await c.req.json<{ id: string }>();
	await (await c.env.CF_WORKFLOW.get(id)).sendEvent({ type: 'go', payload: { n: 1 } });
	return c.json({ status: await cfDone(c.env, id) });
});

// Child round trip: a parent that starts a one-step child and returns its result, run to completion.
app.post('/ours/child-round-trip', async (c) => {
	const { how } = await c.req.json<{ how: 'invoke' | 'manual' }>();
	const { id } = await instances.create(c.env, { type: how === 'invoke' ? 'invoke-parent' : 'manual-parent', id: newId(how === 'invoke' ? 'i' : 'm'), payload: {} });
	const status = await oursDone(c.env, id);
	// The round trip as the parent saw it (see RoundTrip), beside the whole life the caller times.
	const { output } = await instances.status(c.env, { id });
	const trip = output as RoundTrip | null;
	return c.json({ id, status, inParentMs: trip ? trip.heldAt - trip.startedAt : null });
});

// Rows written and statements per step: an instance run to completion, then its object's SQL meter and history rows.
// `awaitMs`: each step awaits a timer that long (a step awaiting I/O) instead of returning at once.
app.post('/ours/sql-cost', async (c) => {
	const { steps, awaitMs = 0 } = await c.req.json<{ steps: number; awaitMs?: number }>();
	const { id } = await instances.create(c.env, { type: 'bench', id: newId('q'), payload: { steps, awaitMs } });
	await oursDone(c.env, id);
	const stub = instanceStub(c.env, id) as unknown as { settle(): Promise<void>; sqlReading(): Promise<SqlMeterReading>; historyRows(): Promise<number> };
	await stub.settle(); // index delivery included: every write of the run
	return c.json({ id, awaitMs, ...(await stub.sqlReading()), historyRows: await stub.historyRows() });
});

/**
 * The index shards' run-metrics rows so far (docs/cost.md): their minute rows (the rollups', which carry the
 * watermark, and the few written at once), and the first watermark of each shard (with its first mark, once in its life).
 */
const metricsReading = () => {
	const first = totalKvWrites().get('put metrics:') ?? 0;
	return { metricsRows: totalMetricsRows() + first, metricsFirstWatermarks: first };
};

/**
 * The rollup each costed type's shards owe once the minute of their last runs has closed (the bench asks after the cost
 * runs, past the rollup's margin): an empty index write, which writes nothing but the rollup. What it wrote, apart.
 */
app.post('/cost/metrics-rollup', async (c) => {
	const before = metricsReading();
	for (const type of ['costed', 'costed-fetch', 'costed-sleep', 'costed-children', 'costed-event', 'costed-retry']) {
		for (let n = 0; n < registry.get(type).shards; n++) await callRole(c.env, 'indexWrite', [type, n], []);
	}
	const after = metricsReading();
	return c.json({ rows: after.metricsRows - before.metricsRows, firstWatermarks: after.metricsFirstWatermarks - before.metricsFirstWatermarks });
});

/**
 * The sleep scenario's sleep: past the index delivery's grace (`OUTBOX_GRACE_MS`), as a 7-day sleep is, so that its `sleeping`
 * is delivered at once as that one's is (a sleep that ends within the grace is not delivered alone: 2 index rows fewer,
 * docs/decisions.md "A status that ends before its delivery is due is not sent alone"). Beyond it the rows and requests do
 * not depend on the length.
 */
const COSTED_SLEEP_MS = OUTBOX_GRACE_MS + 1_000;

// Cost figures: one run of a scenario on the metered types, to completion (index delivery included); what it cost in
// statements, rows (SQL, and alarm writes beside them), requests to objects, wall time, the time it spent idle (asleep,
// waiting for its event or for a retry, an alarm due: no duration billed), and the bytes its instance keeps.
app.post('/cost/run', async (c) => {
	const { scenario, sleepMs = COSTED_SLEEP_MS, retryDelayMs = 1000, layout = 'compact', group } = await c.req.json<{
		scenario: 'trivial' | 'fetch' | 'sleep' | 'children' | 'event' | 'retry';
		sleepMs?: number;
		retryDelayMs?: number;
		/** The storage layout of the run's instances (runtime/storage-layout.ts). */
		layout?: 'compact' | 'table';
		/** The group of the run's instances (SHARDFLOW_BENCH_GROUP=eu, docs/residency.md "Cost"). */
		group?: 'eu';
	}>();
	const plan = {
		trivial: { type: 'costed', payload: { steps: 10 } },
		fetch: { type: 'costed-fetch', payload: { n: 10, ms: 200 } },
		sleep: { type: 'costed-sleep', payload: { sleepMs } },
		children: { type: 'costed-children', payload: { n: 10 } },
		event: { type: 'costed-event', payload: {} },
		retry: { type: 'costed-retry', payload: { delayMs: retryDelayMs } },
	}[scenario];
	const reading = () => {
		const sql = totalSqlReading();
		const alarms = totalAlarmReading();
		const onIndex = totalAlarmReading('index');
		return { ...sql, alarmsSet: alarms.set, alarmsDeleted: alarms.deleted, indexAlarmsSet: onIndex.set, indexAlarmsDeleted: onIndex.deleted, requests: meteredRequests, ...metricsReading() };
	};
	const before = reading();
	const kvBefore = totalKvWrites();
	const startedAt = Date.now();
	const local = newId(layout === 'table' ? 'q-t' : 'q-c');
	const { id } = await instances.create(c.env, { type: plan.type as never, id: group === 'eu' ? `eu.eu~${local}` : local, payload: plan.payload });
	let bytesWhileSleeping: number | undefined;
	let idleMs = 0;
	const stub = instanceStub(c.env, id) as unknown as { settle(options?: { index: boolean }): Promise<void>; databaseSize(): Promise<number> };
	if (scenario === 'sleep') {
		await oursDone(c.env, id, (s) => s === 'sleeping' || FINISHED.has(s), 100);
		bytesWhileSleeping = await stub.databaseSize();
		idleMs = sleepMs;
		// Not polled while it sleeps (a status read is rows read, the bench's, not the run's): from shortly before it wakes.
		await pause(Math.max(0, sleepMs - 500));
	}
	if (scenario === 'event') {
		// Waiting, the object is idle until the event: from the moment the bench sees it waiting to the event sent.
		await oursDone(c.env, id, (s) => s === 'waiting' || FINISHED.has(s), 100);
		const waitingAt = Date.now();
		await pause(100);
		idleMs = Date.now() - waitingAt;
		await instances.sendEvent(c.env, { id, event: 'go', payload: { n: 1 } });
	}
	if (scenario === 'retry') idleMs = 2 * retryDelayMs;
	// Polled every 100 ms: a status read costs rows read too, and the polls are the bench's, not the run's.
	const status = await oursDone(c.env, id, undefined, 100);
	const wallMs = Date.now() - startedAt;
	if (status !== 'completed') throw new Error(`cost run ${id} ended ${status}`);
	await stub.settle(); // index delivery included
	// The children's index deliveries too: a child that answered its parent delivers its entry after the parent may have finished.
	if (scenario === 'children') {
		for (let i = 0; i < 10; i++) await (instanceStub(c.env, `${id}::child-${i}`) as unknown as typeof stub).settle();
	}
	const after = reading();
	const diff = (key: keyof typeof after) => after[key] - before[key];
	// Where the key-value rows went ("put i": 3, "put s:": 10, ...): docs/cost.md's breakdown of each scenario.
	const kvWrites = Object.fromEntries([...totalKvWrites()].map(([what, n]) => [what, n - (kvBefore.get(what) ?? 0)] as const).filter(([, n]) => n > 0));
	return c.json({
		id,
		wallMs,
		idleMs,
		statements: diff('statements'),
		rowsRead: diff('rowsRead'),
		// The SQL cursors' rows (its meaning before alarms were metered, so an A/B against an older build compares like with like).
		rowsWritten: diff('rowsWritten'),
		alarmsSet: diff('alarmsSet'),
		alarmsDeleted: diff('alarmsDeleted'),
		// Of those, the index shard's (the rest are the instance's and its children's).
		indexAlarmsSet: diff('indexAlarmsSet'),
		indexAlarmsDeleted: diff('indexAlarmsDeleted'),
		// Of the rows written (SQL and key-value), the index shard's run metrics: its minute rows, written by a rollup once
		// per shard per minute in which runs counted, at whichever delivery (or shard alarm) comes first after the minute
		// closed: it falls in a later run's window, or in none (docs/cost.md); and a shard's first watermark.
		metricsRows: diff('metricsRows'),
		metricsFirstWatermarks: diff('metricsFirstWatermarks'),
		// The run's index shard and the minute it finished in: the shards roll their metrics up once per such minute.
		shardMinute: `${plan.type}:${shardIndex(local, registry.get(plan.type).shards)}:${Math.floor(Date.now() / 60_000)}`,
		requests: diff('requests'),
		bytes: await stub.databaseSize(),
		bytesWhileSleeping,
		byMethod: Object.fromEntries(meteredByMethod),
		kvWrites,
	});
});

// Time between steps (after Vercel Workflow's CI benchmark): a run of `steps` trivial steps that each return Date.now()
// as they start; answers when the create was sent and the stamps (workerd's clock: milliseconds, frozen while code runs).
app.post('/ours/stamps', async (c) => {
	const { steps } = await c.req.json<{ steps: number }>();
	const sentAt = Date.now();
	const { id } = await instances.create(c.env, { type: 'bench', id: newId('o'), payload: { steps, stamp: true } });
	const status = await oursDone(c.env, id);
	if (status !== 'completed') throw new Error(`stamps run ${id} ended ${status}`);
	const { output } = (await instances.status(c.env, { id })) as { output?: unknown };
	return c.json({ sentAt, doneAt: Date.now(), stamps: output });
});
app.post('/cf/stamps', async (c) => {
	const { steps } = await c.req.json<{ steps: number }>();
	const sentAt = Date.now();
	const instance = await c.env.CF_WORKFLOW.create({ id: newId('c'), params: { steps, stamp: true } });
	const status = await cfDone(c.env, instance.id);
	if (status !== 'complete') throw new Error(`stamps run ${instance.id} ended ${status}`);
	const { output } = await instance.status();
	return c.json({ sentAt, doneAt: Date.now(), stamps: output });
});

// Waits until an instance has finished (responsiveness rows: the next measurement starts on a quiet isolate).
app.post('/ours/done/:id', async (c) => c.json({ status: await oursDone(c.env, c.req.param('id')) }));
app.post('/cf/done/:id', async (c) => c.json({ status: await cfDone(c.env, c.req.param('id')) }));
// An unrelated read, for responsiveness while a long run holds the isolate.
app.get('/ours/subrequests/:id', async (c) => {
	const stub = c.env.WORKFLOW_RUNNER.get(c.env.WORKFLOW_RUNNER.idFromName(c.req.param('id'))) as unknown as { subrequests(): Promise<number[]> };
	return c.json({ perInvocation: await stub.subrequests() });
});
app.get('/ours/status/:id', async (c) => c.json(await instances.status(c.env, { id: c.req.param('id') })));
app.post('/ours/terminate/:id', async (c) => c.json({ status: await instances.terminate(c.env, { id: c.req.param('id') }) }));
// A status shows the latest 100 steps; this pages the whole history for the hard-crash test.
app.get('/ours/steps-summary/:id', async (c) => {
	let cursor: string | null = null;
	let total = 0;
	let retried = 0;
	do {
		const page = await instances.steps(c.env, { id: c.req.param('id'), cursor, limit: 100 });
		total += page.items.length;
		retried += page.items.filter((s) => s.attempts > 1).length;
		cursor = page.nextCursor;
	} while (cursor);
	return c.json({ total, retried });
});
app.get('/ours/list/:type', async (c) => c.json(await new IndexClient(c.env, registry).list({ type: c.req.param('type'), limit: 50 })));
app.get('/cf/status/:id', async (c) => c.json(await (await c.env.CF_WORKFLOW.get(c.req.param('id'))).status()));

// Index: seed entries straight into shards, list with a status filter, write throughput.
app.post('/index/seed', async (c) => {
	const { type, count, offset = 0 } = await c.req.json<{ type: 'ix1' | 'ix4' | 'ix16'; count: number; offset?: number }>();
	const { shards } = registry.get(type);
	const byShard = new Map<number, IndexEntry[]>();
	const statuses = ['completed', 'completed', 'completed', 'waiting', 'running', 'errored'] as const;
	for (let i = offset; i < offset + count; i++) {
		const id = `${type}-${i}`;
		const entry: IndexEntry = { id, type, status: statuses[i % statuses.length]!, createdAt: 1_700_000_000_000 + i, updatedAt: 1_700_000_000_000 + i, version: 1 };
		// ix1 carries search attributes: 1,000 customers (an equality matches 0.1%), amounts 0-999, a third vip.
		if (type === 'ix1') entry.attributes = { customerId: `c${(i * 7919) % 1000}`, amount: (i * 104_729) % 1000, vip: i % 3 === 0 };
		const n = shardIndex(id, shards);
		const group = byShard.get(n);
		if (group) group.push(entry);
		else byShard.set(n, [entry]);
	}
	await Promise.all(
		[...byShard].map(async ([n, entries]) => {
			for (let i = 0; i < entries.length; i += 500) await callRole(c.env, 'indexWrite', [type, n], entries.slice(i, i + 500));
		}),
	);
	return c.json({ seeded: count });
});
app.get('/index/list/:type', async (c) => {
	const page = await new IndexClient(c.env, registry).list({ type: c.req.param('type'), status: ['waiting'], limit: 50 });
	return c.json({ items: page.items.length });
});
// Run metrics (docs/dashboard.md): a day of runs seeded through the counting write path, spread over
// the last 24 hours, so every minute of every shard has counters and a duration histogram (the most a read sums).
app.post('/index/seed-recent', async (c) => {
	const { type, count } = await c.req.json<{ type: 'ix4'; count: number }>();
	const { shards } = registry.get(type);
	const now = Date.now();
	const byShard = new Map<number, IndexEntry[]>();
	for (let i = 0; i < count; i++) {
		const id = `${type}-recent-${now}-${i}`;
		const createdAt = now - Math.floor(((i * 7919) % count) * (86_400_000 / count));
		const finished = i % 5 !== 0;
		const durationMs = 50 + ((i * 104_729) % 3_600_000);
		const status = finished ? (i % 17 === 0 ? 'errored' : 'completed') : 'waiting';
		const entry: IndexEntry = { id, type, status, createdAt, updatedAt: finished ? Math.min(now, createdAt + durationMs) : createdAt, version: 3 };
		const n = shardIndex(id, shards);
		const group = byShard.get(n);
		if (group) group.push(entry);
		else byShard.set(n, [entry]);
	}
	await Promise.all(
		[...byShard].map(async ([n, entries]) => {
			for (let i = 0; i < entries.length; i += 500) await callRole(c.env, 'indexWrite', [type, n], entries.slice(i, i + 500));
		}),
	);
	return c.json({ seeded: count });
});
app.get('/index/metrics/:type', async (c) => c.json(await new IndexClient(c.env, registry).metrics(c.req.param('type'), Date.now())));
app.get('/index/list-all/:type', async (c) => {
	const page = await new IndexClient(c.env, registry).list({ type: c.req.param('type'), limit: 50 });
	return c.json({ items: page.items.length });
});
// The index write path with its run metrics (ours) and without (`moved`: a rebalance's copies, which count nothing).
app.post('/index/write-metrics-cost', async (c) => {
	const { type, count, counted } = await c.req.json<{ type: 'ix1'; count: number; counted: boolean }>();
	const started = Date.now();
	const base = Date.now() * 1000;
	for (let i = 0; i < count; i++) {
		const entry: IndexEntry = { id: `m-${counted ? 'c' : 'u'}-${base + i}`, type, status: 'completed', createdAt: started, updatedAt: started + 5, version: 1 };
		await callRole(c.env, 'indexWrite', [type, 0], [entry], counted ? {} : { moved: true });
	}
	return c.json({ ms: Date.now() - started });
});
/** The listing shapes of search attributes measured on ix1 (one shard); `status` is the baseline of the same run. */
const ATTRIBUTE_SHAPES = {
	status: { status: ['waiting'] },
	customer: { attributes: { customerId: 'c42' } },
	'customer+status': { attributes: { customerId: 'c42' }, status: ['waiting'] },
	'vip+status': { attributes: { vip: true }, status: ['waiting'] },
	'in-list': { attributes: { customerId: ['c1', 'c2', 'c3', 'c4', 'c5'] } },
	'range-by-amount': { attributes: { amount: { gte: 900 } }, order: 'attr:amount:desc' },
	'range-by-created': { attributes: { amount: { gte: 900 } } },
	'order-by-amount': { order: 'attr:amount:asc' },
} as const;
app.get('/index/list-attr/:shape', async (c) => {
	const shape = ATTRIBUTE_SHAPES[c.req.param('shape') as keyof typeof ATTRIBUTE_SHAPES];
	if (!shape) return c.json({ error: 'unknown shape' }, 400);
	const page = await new IndexClient(c.env, registry).list({ type: 'ix1', limit: 50, ...(shape as object) });
	return c.json({ items: page.items.length });
});
app.get('/index/count-attr', async (c) => {
	const { groups } = await new IndexClient(c.env, registry).countBy({ type: 'ix1', attribute: 'vip', status: ['waiting'] });
	return c.json({ groups: groups.length });
});
app.post('/index/write-throughput', async (c) => {
	const { type, count } = await c.req.json<{ type: 'ix1' | 'ix16'; count: number }>();
	const started = Date.now();
	const base = Date.now() * 1000;
	await Promise.all(
		Array.from({ length: count }, (_, i) =>
			routeIndexEntry(c.env, registry, { id: `w-${base + i}`, type, status: 'running', createdAt: started, updatedAt: started, version: 1 }),
		),
	);
	return c.json({ ms: Date.now() - started });
});

// Storage cost: bytes per completed step (ours vs floor) and per index entry.
app.post('/size/ours', async (c) => {
	const { steps } = await c.req.json<{ steps: number }>();
	const empty = await instances.create(c.env, { type: 'bench', id: newId('o'), payload: { steps: 0 } });
	await oursDone(c.env, empty.id);
	const full = await instances.create(c.env, { type: 'bench', id: newId('o'), payload: { steps } });
	await oursDone(c.env, full.id);
	const size = (id: string) => (instanceStub(c.env, id) as unknown as { databaseSize(): Promise<number> }).databaseSize();
	return c.json({ emptyBytes: await size(empty.id), fullBytes: await size(full.id) });
});
// Storage left after retention: an instance of `steps` steps, completed, then deleted by its own
// retention alarm (1 second; the real alarm, no test clock), measured before and after.
app.post('/size/after-retention', async (c) => {
	const { steps } = await c.req.json<{ steps: number }>();
	const { id } = await instances.create(c.env, { type: 'expiring', id: newId('r'), payload: { steps } });
	await oursDone(c.env, id);
	const stub = instanceStub(c.env, id) as unknown as { databaseSize(): Promise<number>; schemaObjects(): Promise<number> };
	const fullBytes = await stub.databaseSize();
	// NOT_FOUND comes as soon as the deletion is durable; the storage goes once the index acknowledged.
	for (const deadline = Date.now() + 30_000; Date.now() < deadline; await pause(200)) {
		const gone = await instances.status(c.env, { id }).then(() => false, (error: { code?: string }) => error.code === 'NOT_FOUND');
		if (gone && !(await callRole(c.env, 'indexVersions', ['expiring', 0], [id]))[id]) {
			await pause(200);
			// An object that was never written, for comparison: the SQLite file's floor.
			const fresh = instanceStub(c.env, newId('never')) as unknown as { databaseSize(): Promise<number> };
			return c.json({ fullBytes, leftBytes: await stub.databaseSize(), leftSchemaObjects: await stub.schemaObjects(), neverWrittenBytes: await fresh.databaseSize() });
		}
	}
	throw new Error(`instance ${id} was not deleted by its retention in time`);
});
app.post('/size/floor', async (c) => {
	const { steps } = await c.req.json<{ steps: number }>();
	const empty = c.env.FLOOR.get(c.env.FLOOR.idFromName(newId('f')));
	await empty.run(0);
	const full = c.env.FLOOR.get(c.env.FLOOR.idFromName(newId('f')));
	await full.run(steps);
	return c.json({ emptyBytes: await empty.databaseSize(), fullBytes: await full.databaseSize() });
});
app.post('/size/index', async (c) => {
	const { type } = await c.req.json<{ type: 'ix1' }>();
	const stub = roleStub(c.env, 'index', type, 0) as unknown as { databaseSize(): Promise<number> };
	const counts = await callRole(c.env, 'indexCounts', [type, 0]);
	return c.json({ bytes: await stub.databaseSize(), entries: Object.values(counts).reduce((a, b) => a + b, 0) });
});

// ---- Capacity (bench/capacity.mjs, docs/capacity.md) ----
type CapacityShard = { capacitySeed(r: { type: string; prefix: string; from: number; count: number; base?: number }): Promise<number>; capacityFinished(r: { from: string; to: string }): Promise<{ now: number; rows: [string, number, number][] }>; capacityWrites(r: { count: number; path: 'current' | 'uncounted' | 'plain'; tag: string }): Promise<SqlMeterReading> };
type CapacityReadShard = { capacityReadCost(r: { op: 'noop' | 'list' | 'oldestUpdated' | 'updatedBy' | 'metrics' | 'writeLong'; query?: ShardListQuery & { status?: WorkflowStatus[] } }): Promise<{ rowsRead: number; answer: number }> };
const capacityShard = (env: Env, type: string, n: number) => roleStub(env, 'index', type, n) as unknown as CapacityShard;
// `n` creates at once of a one-step run, ids `<prefix><i>` (zero-padded to 6): the overloaded shard, the hot key.
app.post('/capacity/create-many', async (c) => {
	const { type, prefix, n } = await c.req.json<{ type: 'cap1' | 'cap-hot'; prefix: string; n: number }>();
	const started = Date.now();
	const settled = await Promise.allSettled(Array.from({ length: n }, (_, i) => instances.create(c.env, { type, id: `${prefix}${String(i).padStart(6, '0')}`, payload: {} })));
	const failed = settled.filter((r) => r.status === 'rejected');
	return c.json({ ms: Date.now() - started, created: n - failed.length, failed: failed.length, firstError: failed[0] ? String((failed[0] as PromiseRejectedResult).reason).slice(0, 300) : null });
});
app.post('/capacity/finished', async (c) => {
	const { type, from, to } = await c.req.json<{ type: string; from: string; to: string }>();
	return c.json(await capacityShard(c.env, type, 0).capacityFinished({ from, to }));
});
app.post('/capacity/seed', async (c) => {
	const { type, shard, prefix, from, count, base } = await c.req.json<{ type: string; shard: number; prefix: string; from: number; count: number; base?: number }>();
	return c.json({ rowsWritten: await capacityShard(c.env, type, shard).capacitySeed({ type, prefix, from, count, ...(base !== undefined ? { base } : {}) }) });
});
app.post('/capacity/list', async (c) => {
	const { type, status } = await c.req.json<{ type: string; status?: 'waiting' }>();
	const page = await new IndexClient(c.env, registry).list({ type, limit: 50, ...(status ? { status: [status] } : {}) });
	return c.json({ items: page.items.length });
});
// One shard's page after a keyset position (what a cursor deep in the list asks every shard).
app.post('/capacity/shard-page', async (c) => {
	const { type, after, status } = await c.req.json<{ type: string; after: { at: number; id: string }; status?: 'waiting' }>();
	const rows = await unwrap(roleStub(c.env, 'index', type, 0).indexList({ order: 'createdAt', limit: 50, after, ...(status ? { status: [status] } : {}) }));
	return c.json({ items: rows.length, first: rows[0]?.id ?? null });
});
app.post('/capacity/read-cost', async (c) => {
	const request = await c.req.json<Parameters<CapacityReadShard['capacityReadCost']>[0]>();
	return c.json(await (roleStub(c.env, 'index', 'cap-writes', 0) as unknown as CapacityReadShard).capacityReadCost(request));
});
app.post('/capacity/writes', async (c) => {
	const request = await c.req.json<{ count: number; path: 'current' | 'uncounted' | 'plain'; tag: string }>();
	return c.json(await capacityShard(c.env, 'cap-writes', 0).capacityWrites(request));
});
app.get('/capacity/counts/:type', async (c) => c.json(await unwrap(roleStub(c.env, 'index', c.req.param('type'), 0).indexCounts())));
app.get('/capacity/limiter', async (c) => c.json(await limiterInfo(c.env, 'cap-hot', 'hot')));
app.post('/capacity/schedule/:action', async (c) => {
	const action = c.req.param('action');
	if (action !== 'wake' && action !== 'pause') return c.json({ error: 'wake or pause' }, 400);
	return c.json(await (action === 'wake' ? schedules.wake(c.env, 'cap-tick') : schedules.pause(c.env, 'cap-tick')));
});

export default app;
