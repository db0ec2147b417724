// scripts/trace-view.mjs: an OTLP export read in Jaeger UI with no Jaeger backend. What a reader
// depends on: each span shows as Jaeger's own backend would show it (the OTLP -> Jaeger mapping),
// and the query API Jaeger UI calls answers from the export. The UI itself is not here (it is built
// from Jaeger's source, docs/operations.md): a stand-in index.html takes its place.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../bench/lib/dev-server.mjs';
import { NotOtlpError, otlpToJaeger } from '../../scripts/trace-view/otlp-to-jaeger.mjs';
import { request as httpRequest } from 'node:http';
import { spawnSync } from 'node:child_process';

const root = resolve(import.meta.dirname, '../..');
const TRACE = '83a9efd15c1c98a977e0711cc93ee28b';
const OTHER = '0af7651916cd43dd8448eb211c80319c';
const str = (key: string, value: string) => ({ key, value: { stringValue: value } });
const resource = { attributes: [str('service.name', 'orders'), str('cloud.provider', 'cloudflare')] };

/** A pass, its failed attempt (an exception event and a link), and a span of another trace. */
const exported = {
	resourceSpans: [
		{
			resource,
			scopeSpans: [
				{
					scope: { name: 'workers', version: '' },
					spans: [
						{ traceId: TRACE, spanId: 'e127af99e3b3e074', name: 'shardflow.pass', kind: 1, startTimeUnixNano: '1706678909209712000', endTimeUnixNano: '1706678909219712000', attributes: [str('shardflow.instance.id', 'order-1')], status: {} },
						{
							traceId: TRACE,
							spanId: '26f5ef9dbb885479',
							parentSpanId: 'e127af99e3b3e074',
							name: 'shardflow.step',
							kind: 1,
							startTimeUnixNano: '1706678909210000000',
							endTimeUnixNano: '1706678909210123000',
							attributes: [str('shardflow.step.name', 'charge'), { key: 'shardflow.step.attempt', value: { intValue: '2' } }, { key: 'ratio', value: { doubleValue: 0.5 } }, { key: 'retried', value: { boolValue: true } }, { key: 'tags', value: { arrayValue: { values: [{ stringValue: 'a' }, { intValue: '1' }] } } }],
							events: [{ timeUnixNano: '1706678909210100000', name: 'exception', attributes: [str('exception.message', 'card network busy')] }],
							links: [{ traceId: OTHER, spanId: 'b7ad6b7169203331' }],
							status: { code: 2, message: 'Error: card network busy' },
						},
					],
				},
			],
		},
		// The same resource again (a second request of the exporter): one process, not two.
		{ resource, scopeSpans: [{ scope: { name: 'workers' }, spans: [{ traceId: OTHER, spanId: 'b7ad6b7169203331', name: 'POST', kind: 2, startTimeUnixNano: '1706678900000000000', endTimeUnixNano: '1706678900075000000', attributes: [], status: { code: 1 } }] }] },
		{ resource, scopeSpans: [{ scope: { name: 'workers' }, spans: [{ traceId: TRACE, spanId: '909541b92cf05311', parentSpanId: 'e127af99e3b3e074', name: 'jsRpcCall', kind: 3, startTimeUnixNano: '1706678909211000000', endTimeUnixNano: '1706678909212000000', status: {} }] }] },
	],
};

describe('an OTLP export as Jaeger UI reads it', () => {
	const traces = otlpToJaeger(exported);
	const trace = traces.find((t) => t.traceID === TRACE)!;
	const span = (id: string) => trace.spans.find((s) => s.spanID === id);

	it('groups spans by trace, in the order their first span comes, with one process per distinct resource', () => {
		expect(traces.map((t) => [t.traceID, t.spans.length])).toEqual([
			[TRACE, 3],
			[OTHER, 1],
		]);
		expect(trace.processes).toEqual({ p1: { serviceName: 'orders', tags: [{ key: 'cloud.provider', type: 'string', value: 'cloudflare' }] } });
		expect(trace.spans.every((s) => s.processID === 'p1')).toBe(true);
	});

	it('shows a failed attempt as an error span with its message, its attributes typed, its event and its link', () => {
		expect(span('26f5ef9dbb885479')).toEqual({
			traceID: TRACE,
			spanID: '26f5ef9dbb885479',
			operationName: 'shardflow.step',
			references: [
				{ refType: 'CHILD_OF', traceID: TRACE, spanID: 'e127af99e3b3e074' },
				{ refType: 'FOLLOWS_FROM', traceID: OTHER, spanID: 'b7ad6b7169203331' },
			],
			startTime: 1706678909210000,
			duration: 123,
			tags: [
				{ key: 'shardflow.step.name', type: 'string', value: 'charge' },
				{ key: 'shardflow.step.attempt', type: 'int64', value: 2 },
				{ key: 'ratio', type: 'float64', value: 0.5 },
				{ key: 'retried', type: 'bool', value: true },
				{ key: 'tags', type: 'string', value: '["a",1]' },
				{ key: 'otel.library.name', type: 'string', value: 'workers' },
				{ key: 'span.kind', type: 'string', value: 'internal' },
				{ key: 'error', type: 'bool', value: true },
				{ key: 'otel.status_code', type: 'string', value: 'ERROR' },
				{ key: 'otel.status_description', type: 'string', value: 'Error: card network busy' },
			],
			logs: [{ timestamp: 1706678909210100, fields: [{ key: 'event', type: 'string', value: 'exception' }, { key: 'exception.message', type: 'string', value: 'card network busy' }] }],
			processID: 'p1',
			warnings: null,
		});
	});

	it('names the kind of a request and of a call, and an OK status, as Jaeger does', () => {
		const post = traces[1]!.spans[0];
		expect(post.tags).toEqual([
			{ key: 'otel.library.name', type: 'string', value: 'workers' },
			{ key: 'span.kind', type: 'string', value: 'server' },
			{ key: 'otel.status_code', type: 'string', value: 'OK' },
		]);
		expect(post.duration).toBe(75_000);
		expect(span('909541b92cf05311').tags).toContainEqual({ key: 'span.kind', type: 'string', value: 'client' });
	});
});

describe('an export that is not OTLP/JSON, or writes its ids in upper case', () => {
	const upper = { resourceSpans: [{ resource, scopeSpans: [{ spans: [{ traceId: TRACE.toUpperCase(), spanId: 'E127AF99E3B3E074', name: 'a', startTimeUnixNano: '1', endTimeUnixNano: '2' }, { traceId: TRACE.toUpperCase(), spanId: '26F5EF9DBB885479', parentSpanId: 'E127AF99E3B3E074', name: 'b', startTimeUnixNano: '1', endTimeUnixNano: '2' }] }] }] };

	it('reads upper-case hex ids (valid OTLP/JSON) as the lower-case ids Jaeger lists and opens', () => {
		const [trace] = otlpToJaeger(upper);
		expect([trace!.traceID, trace!.spans.map((s: any) => s.spanID), trace!.spans[1].references[0]]).toEqual([TRACE, ['e127af99e3b3e074', '26f5ef9dbb885479'], { refType: 'CHILD_OF', traceID: TRACE, spanID: 'e127af99e3b3e074' }]);
	});

	it('refuses, naming what is wrong, what is not a request: null, resourceSpans not an array, a time or an id that is not one', () => {
		const span = (fields: object) => ({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: TRACE, spanId: 'e127af99e3b3e074', name: 'a', ...fields }] }] }] });
		for (const [input, message] of [
			[null, /not an OTLP ExportTraceServiceRequest/],
			[{ resourceSpans: 5 }, /resourceSpans is not an array/],
			[{ resourceSpans: [{ scopeSpans: {} }] }, /no scopeSpans array/],
			[span({ startTimeUnixNano: 'yesterday' }), /startTimeUnixNano is not a whole number of nanoseconds/],
			[span({ traceId: 'not-hex' }), /traceId is not a hex id/],
		] as const) {
			expect(() => otlpToJaeger(input as never)).toThrow(NotOtlpError);
			expect(() => otlpToJaeger(input as never)).toThrow(message);
		}
		expect(otlpToJaeger({})).toEqual([]);
	});
});

describe('node scripts/trace-view.mjs', () => {
	const dir = mkdtempSync(join(tmpdir(), 'shardflow-trace-view-'));
	let viewer: ChildProcess;
	let base = '';
	const json = async (path: string, init?: RequestInit) => {
		const res = await fetch(`${base}${path}`, init);
		return { status: res.status, body: (await res.json()) as any };
	};

	beforeAll(async () => {
		mkdirSync(join(dir, 'ui'));
		writeFileSync(join(dir, 'ui', 'index.html'), '<!doctype html><title>stand-in for Jaeger UI</title>');
		writeFileSync(join(dir, 'secret.txt'), 'not to be served');
		writeFileSync(join(dir, 'trace.otlp.json'), JSON.stringify(exported));
		const port = await freePort();
		viewer = spawn(process.execPath, [join(root, 'scripts/trace-view.mjs'), '--ui', join(dir, 'ui'), '--port', String(port), join(dir, 'trace.otlp.json')], { stdio: ['ignore', 'pipe', 'inherit'] });
		// It says where it listens once it does.
		await new Promise<void>((ready, failed) => {
			viewer.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('Jaeger UI on') && ready());
			viewer.on('exit', (code) => failed(new Error(`trace-view exited ${code}`)));
		});
		base = `http://127.0.0.1:${port}`;
	});
	afterAll(() => {
		viewer?.kill();
		rmSync(dir, { recursive: true, force: true });
	});

	it('lists the services and their operations, in both API versions the UI calls', async () => {
		expect((await json('/api/services')).body.data).toEqual(['orders']);
		expect((await json('/api/v3/services')).body).toEqual({ services: ['orders'] });
		expect((await json('/api/services/orders/operations')).body.data).toEqual(['jsRpcCall', 'POST', 'shardflow.pass', 'shardflow.step']);
		expect((await json('/api/v3/operations?service=orders')).body.operations).toContainEqual({ name: 'shardflow.step', spanKind: 'internal' });
	});

	it('finds the traces the search form asks for, whatever its time window', async () => {
		const ids = async (query: string) => (await json(`/api/traces?service=orders&start=1&end=2&${query}`)).body.data.map((t: { traceID: string }) => t.traceID);
		expect(await ids('limit=20')).toEqual([TRACE, OTHER]);
		expect(await ids('operation=POST')).toEqual([OTHER]);
		expect(await ids(`tags=${encodeURIComponent('{"shardflow.step.name":"charge"}')}`)).toEqual([TRACE]);
		expect(await ids(`tags=${encodeURIComponent('error=true')}`)).toEqual([TRACE]);
		expect(await ids('minDuration=50ms')).toEqual([OTHER]);
		expect(await ids('limit=1')).toEqual([TRACE]);
	});

	it('opens one trace by its id, and answers 404 for a trace the export does not hold', async () => {
		const one = await json(`/api/traces/${TRACE.toUpperCase()}`);
		expect([one.status, one.body.data[0].spans.length]).toEqual([200, 3]);
		expect((await json('/api/traces/0123456789abcdef0123456789abcdef')).status).toBe(404);
		expect((await json('/api/services/%zz/operations')).status).toBe(400);
	});

	it('converts an OTLP file uploaded from the search page, and refuses one that is not JSON with a 400', async () => {
		const uploaded = await json('/api/transform', { method: 'POST', body: JSON.stringify(exported) });
		expect(uploaded.body.data.map((t: { traceID: string }) => t.traceID)).toEqual([TRACE, OTHER]);
		const bad = await json('/api/transform', { method: 'POST', body: 'not json' });
		expect(bad.status).toBe(400);
		expect(bad.body.errors[0].msg).toMatch(/^not OTLP\/JSON/);
	});

	it("serves the UI's index.html for its routes and never a file outside the UI's folder", async () => {
		for (const path of ['/search', '/trace/abc', '/..%2fsecret.txt', '/%2e%2e/secret.txt', '/%zz']) {
			const res = await fetch(`${base}${path}`);
			expect([path, res.status, await res.text()]).toEqual([path, 200, '<!doctype html><title>stand-in for Jaeger UI</title>']);
		}
	});
	it('refuses an upload from a page of another origin (403), and one over 64 MiB before reading it (413)', async () => {
		const foreign = await json('/api/transform', { method: 'POST', body: JSON.stringify(exported), headers: { origin: 'https://evil.example' } });
		expect([foreign.status, foreign.body.errors[0].msg]).toEqual([403, "uploads are taken from this viewer's own page, not from https://evil.example"]);
		const own = await json('/api/transform', { method: 'POST', body: JSON.stringify(exported), headers: { origin: base } });
		expect(own.status).toBe(200);
		const declared = await new Promise<{ status: number; body: string }>((done, failed) => {
			const req = httpRequest(`${base}/api/transform`, { method: 'POST', headers: { 'content-length': String(3 * 2 ** 30) } }, (res) => {
				let body = '';
				res.on('data', (c) => (body += c));
				res.on('end', () => done({ status: res.statusCode!, body }));
			});
			req.on('error', failed);
			req.write('{');
		});
		expect([declared.status, JSON.parse(declared.body).errors[0].msg]).toEqual([413, 'an upload is at most 64 MiB']);
		const notOtlp = await json('/api/transform', { method: 'POST', body: '{"resourceSpans":5}' });
		expect([notOtlp.status, notOtlp.body.errors[0].msg]).toEqual([400, 'not OTLP/JSON: resourceSpans is not an array']);
	});

	it('answers a bad command line or file in one line naming it (exit 2, no stack), --help with the usage, a port in use with exit 1', async () => {
		const file = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));
		const run = (...args: string[]) => {
			const r = spawnSync(process.execPath, [join(root, 'scripts/trace-view.mjs'), ...args], { encoding: 'utf8', timeout: 20_000 });
			return { status: r.status, err: r.stderr.trim(), out: r.stdout };
		};
		const ui = join(dir, 'ui');
		for (const [args, said] of [
			[['--ui'], /^trace-view: Option '--ui <value>' argument missing/],
			[[], /^trace-view: --ui is required/],
			[['--ui', ui, '--port', 'abc'], /^trace-view: --port takes a port number, 1 to 65535 \(not "abc"\)$/],
			[['--ui', ui, join(dir, 'missing.json')], /^trace-view: cannot read .*missing\.json: ENOENT$/],
			[['--ui', ui, file('bad.json', '{"resourceSpans": [')], /^trace-view: .*bad\.json is not JSON: /],
			[['--ui', ui, file('null.json', 'null')], /^trace-view: .*null\.json is not OTLP\/JSON: not an OTLP ExportTraceServiceRequest/],
			[['--ui', ui, file('rs5.json', '{"resourceSpans":5}')], /^trace-view: .*rs5\.json is not OTLP\/JSON: resourceSpans is not an array$/],
		] as const) {
			const r = run(...args);
			expect([args, r.status]).toEqual([args, 2]);
			expect(r.err).toMatch(said);
			expect(r.err).not.toMatch(/\n\s+at /);
		}
		const help = run('--help');
		expect([help.status, help.out]).toEqual([0, expect.stringMatching(/^usage: node scripts\/trace-view\.mjs --ui/)]);
		const taken = run('--ui', ui, '--port', new URL(base).port, join(dir, 'trace.otlp.json'));
		expect([taken.status, taken.err]).toEqual([1, `trace-view: cannot listen on 127.0.0.1:${new URL(base).port}: the port is in use (pick another with --port)`]);
	});
});
