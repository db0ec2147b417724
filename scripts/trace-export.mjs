// `npm run trace:export [-- [--slow <ms>] <out-dir>]`: runs one workflow with retries, a sleep, a child in its own
// object and a rollback (scripts/trace-export/worker.ts) under `wrangler dev` with wrangler's local
// trace collector on (X_LOCAL_OBSERVABILITY=true), reads back every span of the traces that name
// the run, and writes them as OpenTelemetry:
//   <out>/trace.otlp.json   an OTLP/JSON ExportTraceServiceRequest (what an OTLP/HTTP collector takes)
//   <out>/trace.otlp.pb     the same request as OTLP protobuf
//   <out>/waterfall.html    the spans drawn as a waterfall, one section per trace
// Both OTLP files are written by the OpenTelemetry JS OTLP transformer (`JsonTraceSerializer`,
// `ProtobufTraceSerializer` of @opentelemetry/otlp-transformer), which is not a dependency of this
// repository: `npm install --no-save @opentelemetry/otlp-transformer` once before running this.
// docs/operations.md "Reading a trace locally" says how the export was checked.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startDevServer } from '../bench/lib/dev-server.mjs';

const root = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const slowAt = args.indexOf('--slow');
// `--slow <ms>`: the create's first step and a step after the sleep each take that long (a slow fetch).
const slowMs = slowAt >= 0 ? Number(args.splice(slowAt, 2)[1]) : 0;
if (!Number.isInteger(slowMs) || slowMs < 0 || slowMs > 60_000) {
	console.error('--slow takes a whole number of milliseconds, 0 to 60000');
	process.exit(2);
}
const out = resolve(args[0] ?? join(root, 'trace-export-out'));

/** The resource of each service (the transformer groups spans by resource object). */
const resources = new Map();
let transformer;
try {
	transformer = await import('@opentelemetry/otlp-transformer');
} catch {
	console.error('This script writes OTLP with the OpenTelemetry JS OTLP transformer: run `npm install --no-save @opentelemetry/otlp-transformer` first.');
	process.exit(2);
}

process.env.X_LOCAL_OBSERVABILITY = 'true';
const server = await startDevServer({ configs: ['scripts/trace-export/wrangler.jsonc'] });
try {
	const id = `order-${Date.now().toString(36)}`;
	const call = async (method, path, body) => {
		const res = await fetch(`${server.url}${path}`, { method, ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}) });
		return { status: res.status, json: await res.json() };
	};
	const created = await call('POST', '/workflows', { type: 'traced-order', id, payload: { order: 'A-17', ...(slowMs ? { slowMs } : {}) } });
	if (created.status !== 201) throw new Error(`create answered ${created.status}: ${JSON.stringify(created.json)}`);
	// A 2 s sleep and two 1 s retries: about 5 s of real time, then the rollback.
	const deadline = Date.now() + 60_000 + 4 * slowMs;
	// Polled through the index (the listing), not `GET /workflows/:id`: reading an instance runs a pass that is due
	// (a retry whose alarm has not fired yet), which would move the run's last attempt from its alarm's trace into the poll's.
	for (;;) {
		const { json } = await call('GET', `/workflows?type=traced-order&status=errored&limit=10`);
		if (json.items?.some((item) => item.id === id)) break;
		if (Date.now() > deadline) throw new Error(`the run did not end: ${JSON.stringify((await call('GET', `/workflows/${id}`)).json)}`);
		await new Promise((r) => setTimeout(r, 250));
	}

	const query = async (sql, params) => {
		const res = await fetch(`${server.url}/cdn-cgi/local/explorer/api/local/observability/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql, params }) });
		const body = await res.json();
		if (!body.success) throw new Error(`the local collector refused the query: ${JSON.stringify(body.errors ?? body)}`);
		return body.result.rows.map((row) => Object.fromEntries(body.result.columns.map((c, i) => [c, row[i]])));
	};
	// Every span of every trace in which a shardflow span names the instance or its child (but the status reads polled above).
	const read = () => query(
		`SELECT trace_id, span_id, parent_id, service, name, kind, start_ms, duration_ms, outcome, error, json(attributes) AS attributes FROM spans
		 WHERE trace_id IN (SELECT trace_id FROM spans WHERE name <> 'shardflow.describe' AND json_extract(json(attributes), '$."shardflow.instance.id"') LIKE ?)
		 ORDER BY start_ms`,
		[`${id}%`],
	);
	// The collector writes an invocation's spans in batches, and a span's attributes as they come: read until two readings a second apart agree.
	let rows = await read();
	for (let last = ''; ; ) {
		const now = JSON.stringify(rows);
		if (now === last && rows.length) break;
		last = now;
		await new Promise((r) => setTimeout(r, 1000));
		rows = await read();
	}
	if (!rows.length) throw new Error('the local collector holds no span of the run (is this wrangler one with X_LOCAL_OBSERVABILITY?)');

	const spans = rows.map(readableSpan);
	mkdirSync(out, { recursive: true });
	const json = transformer.JsonTraceSerializer.serializeRequest(spans);
	const pb = transformer.ProtobufTraceSerializer.serializeRequest(spans);
	writeFileSync(join(out, 'trace.otlp.json'), Buffer.from(json));
	writeFileSync(join(out, 'trace.otlp.pb'), Buffer.from(pb));
	writeFileSync(join(out, 'waterfall.html'), waterfall(JSON.parse(Buffer.from(json).toString('utf8'))));
	const traces = new Set(rows.map((r) => r.trace_id));
	const ours = rows.filter((r) => r.name.startsWith('shardflow.'));
	console.log(`${rows.length} spans in ${traces.size} traces (${ours.length} of them shardflow's) -> ${out}/trace.otlp.json (${json.length} B), trace.otlp.pb (${pb.length} B), waterfall.html`);
} finally {
	await server.stop();
}

/** A row of wrangler's local collector as the OpenTelemetry SDK's ReadableSpan, which the OTLP transformer takes. */
function readableSpan(row) {
	const attributes = JSON.parse(row.attributes ?? '{}') ?? {};
	const start = row.start_ms;
	const end = start + (row.duration_ms ?? 0);
	const hr = (ms) => [Math.floor(ms / 1000), (ms % 1000) * 1e6];
	const failed = row.outcome && row.outcome !== 'ok';
	return {
		name: row.parent_id === null && attributes['http.request.method'] ? `${row.name} ${attributes['url.path'] ?? ''}`.trim() : row.name,
		// SpanKind: 1 SERVER for an invocation's root (a request, an alarm), 0 INTERNAL otherwise.
		kind: row.parent_id === null ? 1 : 0,
		spanContext: () => ({ traceId: row.trace_id, spanId: row.span_id, traceFlags: 1 }),
		...(row.parent_id ? { parentSpanContext: { traceId: row.trace_id, spanId: row.parent_id, traceFlags: 1 } } : {}),
		startTime: hr(start),
		endTime: hr(end),
		duration: hr(end - start),
		ended: true,
		// SpanStatusCode: 2 ERROR for a span the runtime or shardflow marked failed (an outcome other than ok, or `shardflow.outcome` failed).
		status: failed || attributes['shardflow.outcome'] === 'failed' ? { code: 2, message: row.error ?? row.outcome ?? undefined } : { code: 0 },
		attributes,
		links: [],
		events: [],
		resource: resourceOf(row.service),
		instrumentationScope: { name: 'workers', version: '' },
		droppedAttributesCount: 0,
		droppedEventsCount: 0,
		droppedLinksCount: 0,
	};
}

/** One resource object per service: the transformer groups spans by resource identity. */
function resourceOf(service) {
	if (!resources.has(service)) resources.set(service, { attributes: { 'service.name': service ?? 'unknown', 'cloud.provider': 'cloudflare', 'cloud.platform': 'cloudflare.workers' } });
	return resources.get(service);
}

/** The OTLP/JSON request drawn as a waterfall: a section per trace, a row per span, indented by depth. */
function waterfall(request) {
	const spans = request.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
	const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
	const ms = (nanos) => Number(BigInt(nanos) / 1000n) / 1000;
	const byTrace = new Map();
	for (const s of spans) byTrace.set(s.traceId, [...(byTrace.get(s.traceId) ?? []), s]);
	const sections = [...byTrace.entries()].map(([traceId, list]) => {
		const t0 = Math.min(...list.map((s) => ms(s.startTimeUnixNano)));
		const t1 = Math.max(...list.map((s) => ms(s.endTimeUnixNano)));
		const width = Math.max(1, t1 - t0);
		const children = new Map();
		for (const s of list) children.set(s.parentSpanId ?? '', [...(children.get(s.parentSpanId ?? '') ?? []), s]);
		const ids = new Set(list.map((s) => s.spanId));
		const rows = [];
		const walk = (s, depth) => {
			const attrs = Object.fromEntries(s.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
			const label = Object.entries(attrs).filter(([k]) => k.startsWith('shardflow.') && !['shardflow.workflow.type'].includes(k)).map(([k, v]) => `${k.replace(/^shardflow\.(step\.|instance\.)?/, '')}=${v}`).join(' ');
			const left = ((ms(s.startTimeUnixNano) - t0) / width) * 100;
			const w = Math.max(0.3, ((ms(s.endTimeUnixNano) - ms(s.startTimeUnixNano)) / width) * 100);
			const kind = s.name.startsWith('shardflow.') ? 'ours' : s.name.startsWith('durable_object_storage') ? 'storage' : 'platform';
			rows.push(`<tr class="${kind}${s.status?.code === 2 ? ' error' : ''}"><td style="padding-left:${depth * 14 + 4}px">${esc(s.name)}<span class="attrs">${esc(label)}</span></td><td class="bar"><i style="left:${left}%;width:${w}%"></i></td><td class="num">${(ms(s.endTimeUnixNano) - ms(s.startTimeUnixNano)).toFixed(0)} ms</td></tr>`);
			for (const c of (children.get(s.spanId) ?? []).sort((a, b) => ms(a.startTimeUnixNano) - ms(b.startTimeUnixNano))) walk(c, depth + 1);
		};
		for (const s of list.filter((s) => !s.parentSpanId || !ids.has(s.parentSpanId))) walk(s, 0);
		const storage = list.filter((s) => s.name.startsWith('durable_object_storage')).length;
		return `<section><h2>trace ${esc(traceId)} <small>${list.length} spans (${storage} storage calls, hidden: tick to show), ${width.toFixed(0)} ms</small></h2><table>${rows.join('')}</table></section>`;
	});
	return `<!doctype html><meta charset="utf-8"><title>shardflow trace export</title><style>
body{font:13px system-ui,sans-serif;margin:16px;color:#1c2430} h1{font-size:16px} h2{font-size:13px;margin:18px 0 4px;font-family:monospace} small{color:#677284;font-family:system-ui}
table{border-collapse:collapse;width:100%} td{padding:1px 4px;white-space:nowrap} td:first-child{width:46%;overflow:hidden;text-overflow:ellipsis;max-width:0}
.attrs{color:#677284;margin-left:8px;font-size:12px} .bar{position:relative;width:46%} .bar i{position:absolute;top:3px;height:11px;background:#adb5bd;border-radius:2px}
.ours .bar i{background:#3b5bdb} .ours td:first-child{font-weight:600} .error .bar i{background:#e03131} .num{text-align:right;color:#677284;width:8%}
body:not(.storage) tr.storage{display:none}</style>
<h1>shardflow: one run with retries, a sleep, a child and a rollback, as Workers tracing recorded it under wrangler dev (${spans.length} spans)</h1>
<label><input type="checkbox" onchange="document.body.classList.toggle('storage', this.checked)"> show storage calls</label>
${sections.join('\n')}`;
}
