// `node scripts/trace-view.mjs --ui <jaeger-ui build dir> [--port 16686] [<trace.otlp.json> ...]`:
// opens OTLP/JSON trace files (the files named, or else trace-export-out/trace.otlp.json, what `npm run
// trace:export` writes) in Jaeger UI, the Jaeger project's own web UI, with no Jaeger backend.
//
// Jaeger UI is a static web app that reads Jaeger's query API; this serves the app's built files
// and answers that API from the files, converted the way Jaeger's backend converts OTLP
// (scripts/trace-view/otlp-to-jaeger.mjs): the service and operation lists, the trace search
// (service, operation, tags, durations and limit; every trace of the files whatever the time window
// asked, so an old export still shows), one trace by id, and the upload of an OTLP file from the
// search page (`POST /api/transform`). Jaeger UI is on neither the npm registry nor Debian: build it
// from its source (docs/operations.md "Reading a trace in Jaeger UI" says how). Loopback only.
import { createServer } from 'node:http';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import { NotOtlpError, otlpToJaeger } from './trace-view/otlp-to-jaeger.mjs';

const root = resolve(import.meta.dirname, '..');
const USAGE = 'usage: node scripts/trace-view.mjs --ui <jaeger-ui build dir, the one with index.html> [--port 16686] [<trace.otlp.json> ...]\n' +
	'  Serves Jaeger UI over the given OTLP/JSON files (trace-export-out/trace.otlp.json by default: what `npm run trace:export` writes); the files replace the default.';
/** A usage or input error: said in one line (no stack), exit 2. */
function refuse(message) {
	console.error(`trace-view: ${message}`);
	process.exit(2);
}
let values, positionals;
try {
	({ values, positionals } = parseArgs({ allowPositionals: true, options: { ui: { type: 'string' }, port: { type: 'string', default: '16686' }, help: { type: 'boolean', short: 'h' } } }));
} catch (error) {
	refuse(`${error.message}\n${USAGE}`);
}
if (values.help) {
	console.log(USAGE);
	process.exit(0);
}
if (!values.ui || !existsSync(join(values.ui, 'index.html'))) refuse(`${values.ui ? `no index.html in ${values.ui}` : '--ui is required'}\n${USAGE}`);
const port = /^\d{1,5}$/.test(values.port) ? Number(values.port) : NaN;
if (!(port >= 1 && port <= 65535)) refuse(`--port takes a port number, 1 to 65535 (not ${JSON.stringify(values.port)})`);
const ui = resolve(values.ui);
const files = positionals.length > 0 ? positionals : [join(root, 'trace-export-out', 'trace.otlp.json')];
const traces = otlpToJaeger(files.map(readExport));
if (traces.length === 0) console.error(`trace-view: warning: ${files.join(', ')} hold no span`);

/** One OTLP/JSON file, or a one-line refusal naming the file and what is wrong with it. */
function readExport(file) {
	let text;
	try {
		text = readFileSync(file, 'utf8');
	} catch (error) {
		refuse(`cannot read ${file}: ${error.code ?? error.message}${positionals.length === 0 ? ' (run `npm run trace:export` first, or name the files)' : ''}`);
	}
	let request;
	try {
		request = JSON.parse(text);
	} catch (error) {
		refuse(`${file} is not JSON: ${error.message}`);
	}
	try {
		otlpToJaeger(request);
	} catch (error) {
		if (error instanceof NotOtlpError) refuse(`${file} is not OTLP/JSON: ${error.message}`);
		throw error;
	}
	return request;
}

/** The Jaeger query API's envelope. */
const envelope = (data) => ({ data, total: Array.isArray(data) ? data.length : 0, limit: 0, offset: 0, errors: null });
const tagOf = (span, key) => span.tags.find((t) => t.key === key);
const serviceOf = (trace, span) => trace.processes[span.processID].serviceName;
const spansOf = (service) => traces.flatMap((trace) => trace.spans.filter((span) => serviceOf(trace, span) === service));
const services = () => [...new Set(traces.flatMap((trace) => Object.values(trace.processes).map((p) => p.serviceName)))].sort();
function operations(service) {
	const byName = new Map();
	for (const span of spansOf(service)) byName.set(span.operationName, tagOf(span, 'span.kind')?.value ?? '');
	return [...byName].sort(([a], [b]) => a.localeCompare(b)).map(([name, spanKind]) => ({ name, spanKind }));
}

/** Jaeger's duration strings: `1.5s`, `300ms`, `20us` (µs). */
function micros(text) {
	const match = /^(\d+(?:\.\d+)?)(us|µs|ms|s|m|h)$/.exec(text ?? '');
	if (!match) return undefined;
	return Number(match[1]) * { us: 1, µs: 1, ms: 1e3, s: 1e6, m: 60e6, h: 3600e6 }[match[2]];
}

/** The search form's query: a trace matches when one span of it matches every part asked. */
function search(params) {
	const service = params.get('service');
	const operation = params.get('operation');
	// The form sends a JSON object; a hand-written URL may say `key=value key2=value2`.
	let tags;
	try {
		tags = JSON.parse(params.get('tags') || '{}');
	} catch {}
	if (!tags || typeof tags !== 'object' || Array.isArray(tags)) {
		tags = Object.fromEntries((params.get('tags') ?? '').split(/\s+/).filter(Boolean).map((pair) => pair.split('=')));
	}
	const min = micros(params.get('minDuration'));
	const max = micros(params.get('maxDuration'));
	const limit = Number(params.get('limit')) || 20;
	return traces
		.filter((trace) =>
			trace.spans.some(
				(span) =>
					(!service || serviceOf(trace, span) === service) &&
					(!operation || span.operationName === operation) &&
					(min === undefined || span.duration >= min) &&
					(max === undefined || span.duration <= max) &&
					Object.entries(tags).every(([key, value]) => String(tagOf(span, key)?.value) === String(value)),
			),
		)
		.slice(0, limit);
}

/** The largest upload `/api/transform` parses: an export of a run is ~200 KB; JSON.parse holds several times a body's size. */
const UPLOAD_LIMIT_BYTES = 64 * 2 ** 20;

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.json': 'application/json', '.woff2': 'font/woff2', '.woff': 'font/woff', '.ttf': 'font/ttf' };

function api(url) {
	const path = url.pathname;
	if (path === '/api/services') return [200, envelope(services())];
	if (path === '/api/v3/services') return [200, { services: services() }];
	const ops = /^\/api\/services\/([^/]+)\/operations$/.exec(path);
	if (ops) return [200, envelope(operations(decodeURIComponent(ops[1])).map((o) => o.name))];
	if (path === '/api/operations') return [200, envelope(operations(url.searchParams.get('service') ?? ''))];
	if (path === '/api/v3/operations') return [200, { operations: operations(url.searchParams.get('service') ?? '') }];
	if (path === '/api/traces') return [200, envelope(search(url.searchParams))];
	const one = /^\/api\/traces\/([0-9a-fA-F]+)$/.exec(path);
	if (one) {
		const trace = traces.find((t) => t.traceID === one[1].toLowerCase());
		return trace ? [200, envelope([trace])] : [404, { data: null, errors: [{ code: 404, msg: 'trace not found' }] }];
	}
	if (path === '/api/dependencies') return [200, envelope([])];
	return [404, { data: null, errors: [{ code: 404, msg: `${path} is not served by this viewer` }] }];
}

const server = createServer((req, res) => {
	const url = new URL(req.url ?? '/', 'http://localhost');
	const send = (status, type, body) => {
		res.writeHead(status, { 'content-type': type });
		res.end(body);
	};
	if (url.pathname === '/api/transform' && req.method === 'POST') {
		// Jaeger UI posts from its own page: a page of another origin (any site the browser has open) may not
		// make this process parse its body.
		const origin = req.headers.origin;
		if (origin !== undefined && origin !== `http://127.0.0.1:${port}` && origin !== `http://localhost:${port}`) {
			return send(403, 'application/json', JSON.stringify({ data: null, errors: [{ code: 403, msg: `uploads are taken from this viewer's own page, not from ${origin}` }] }));
		}
		const tooLarge = () => {
			res.setHeader('connection', 'close');
			send(413, 'application/json', JSON.stringify({ data: null, errors: [{ code: 413, msg: `an upload is at most ${UPLOAD_LIMIT_BYTES / 2 ** 20} MiB` }] }));
			req.destroy();
		};
		if (Number(req.headers['content-length']) > UPLOAD_LIMIT_BYTES) return tooLarge();
		const chunks = [];
		let size = 0;
		req.on('data', (chunk) => {
			size += chunk.length;
			if (size > UPLOAD_LIMIT_BYTES) {
				chunks.length = 0;
				if (!res.headersSent) tooLarge();
				return;
			}
			chunks.push(chunk);
		});
		req.on('end', () => {
			if (res.headersSent) return;
			try {
				send(200, 'application/json', JSON.stringify(envelope(otlpToJaeger(JSON.parse(Buffer.concat(chunks).toString('utf8'))))));
			} catch (error) {
				send(400, 'application/json', JSON.stringify({ data: null, errors: [{ code: 400, msg: `not OTLP/JSON: ${error.message}` }] }));
			}
		});
		return;
	}
	if (url.pathname.startsWith('/api/')) {
		let answer;
		try {
			answer = api(url);
		} catch (error) {
			answer = [400, { data: null, errors: [{ code: 400, msg: error.message }] }];
		}
		return send(answer[0], 'application/json', JSON.stringify(answer[1]));
	}
	// The app's files; any other path is one of its routes (/search, /trace/<id>): its index.html.
	let asked = '';
	try {
		asked = decodeURIComponent(url.pathname);
	} catch {} // a malformed escape names no file
	const file = normalize(join(ui, asked));
	const inside = file.startsWith(ui + sep) && existsSync(file) && statSync(file).isFile();
	const path = inside ? file : join(ui, 'index.html');
	send(200, TYPES[extname(path)] ?? 'application/octet-stream', readFileSync(path));
});
server.on('error', (error) => {
	console.error(`trace-view: cannot listen on 127.0.0.1:${port}: ${error.code === 'EADDRINUSE' ? 'the port is in use (pick another with --port)' : (error.code ?? error.message)}`);
	process.exit(1);
});
server.listen(port, '127.0.0.1', () => {
	const spans = traces.reduce((n, t) => n + t.spans.length, 0);
	console.log(`Jaeger UI on http://127.0.0.1:${port}/search: ${traces.length} traces, ${spans} spans, services ${services().join(', ')}`);
});
