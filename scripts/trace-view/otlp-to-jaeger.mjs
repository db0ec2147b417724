// OTLP/JSON trace data -> the Jaeger query API's trace JSON (what Jaeger UI draws).
//
// Jaeger's own backend does this when it stores OTLP and when its UI uploads an OTLP file
// (`POST /api/transform`): the mapping below is that one (OpenTelemetry's Jaeger translator), so
// Jaeger UI shows an exported trace here the way it would after a real Jaeger ingested it:
// - a span's resource becomes its process: `service.name` is the service, the other attributes its tags;
// - a span's attributes become tags (typed string, bool, int64, float64, binary; arrays and maps as
//   JSON text), then `otel.library.name`/`version` of its scope, `span.kind`, and for an error
//   status `error` = true, `otel.status_code` = ERROR and `otel.status_description` = its message;
// - the parent is a CHILD_OF reference, each link a FOLLOWS_FROM; each event a log whose fields are
//   `event` = its name, then its attributes; times in microseconds.
// No I/O here: scripts/trace-view.mjs serves the result.

const KINDS = { 1: 'internal', 2: 'server', 3: 'client', 4: 'producer', 5: 'consumer' };
const STATUS_ERROR = 2;
const STATUS_OK = 1;

/** What is wrong with an input that is not an OTLP/JSON request: the viewer answers it as a 400 or a usage error. */
export class NotOtlpError extends Error {
	code = 'NOT_OTLP';
}

/** OTLP/JSON writes 64-bit numbers as decimal strings (proto3 JSON): microseconds fit a Number. */
function micros(nanos, what = 'a time') {
	if (nanos === undefined || nanos === null) return 0;
	if ((typeof nanos !== 'string' || !/^\d{1,20}$/.test(nanos)) && !(Number.isSafeInteger(nanos) && nanos >= 0)) {
		throw new NotOtlpError(`${what} is not a whole number of nanoseconds: ${JSON.stringify(nanos)?.slice(0, 40)}`);
	}
	return Number(BigInt(nanos) / 1000n);
}

/** Trace and span ids are hex (OTLP/JSON, either case); Jaeger and its URLs use lower case. */
function hexId(id, what) {
	if (id === undefined || id === null || id === '') return undefined;
	if (typeof id !== 'string' || !/^[0-9a-fA-F]{1,32}$/.test(id)) throw new NotOtlpError(`${what} is not a hex id: ${JSON.stringify(id)?.slice(0, 40)}`);
	return id.toLowerCase();
}

/** The `resourceSpans` of a request, or why it is not one. */
function resourceSpansOf(request) {
	if (!request || typeof request !== 'object' || Array.isArray(request)) throw new NotOtlpError('not an OTLP ExportTraceServiceRequest (a JSON object with resourceSpans)');
	if (request.resourceSpans === undefined) return [];
	if (!Array.isArray(request.resourceSpans)) throw new NotOtlpError('resourceSpans is not an array');
	for (const rs of request.resourceSpans) {
		if (!rs || typeof rs !== 'object' || (rs.scopeSpans !== undefined && !Array.isArray(rs.scopeSpans))) throw new NotOtlpError('a resourceSpans item has no scopeSpans array');
		for (const ss of rs.scopeSpans ?? []) {
			if (!ss || typeof ss !== 'object' || (ss.spans !== undefined && !Array.isArray(ss.spans))) throw new NotOtlpError('a scopeSpans item has no spans array');
			for (const span of ss.spans ?? []) if (!span || typeof span !== 'object') throw new NotOtlpError('a span is not an object');
		}
	}
	return request.resourceSpans;
}

/** An OTLP AnyValue as its plain JavaScript value (arrays and maps included). */
function plain(value) {
	if (!value) return null;
	if ('stringValue' in value) return value.stringValue;
	if ('boolValue' in value) return value.boolValue;
	if ('intValue' in value) return Number(value.intValue);
	if ('doubleValue' in value) return value.doubleValue;
	if ('bytesValue' in value) return value.bytesValue;
	if ('arrayValue' in value) return (value.arrayValue.values ?? []).map(plain);
	if ('kvlistValue' in value) return Object.fromEntries((value.kvlistValue.values ?? []).map((kv) => [kv.key, plain(kv.value)]));
	return null;
}

/** An OTLP KeyValue as a Jaeger tag `{ key, type, value }`. */
export function tag({ key, value = {} }) {
	if ('stringValue' in value) return { key, type: 'string', value: value.stringValue };
	if ('boolValue' in value) return { key, type: 'bool', value: value.boolValue };
	if ('intValue' in value) return { key, type: 'int64', value: Number(value.intValue) };
	if ('doubleValue' in value) return { key, type: 'float64', value: value.doubleValue };
	if ('bytesValue' in value) return { key, type: 'binary', value: value.bytesValue };
	return { key, type: 'string', value: JSON.stringify(plain(value)) };
}

const text = (key, value) => ({ key, type: 'string', value });

function spanTags(span, scope) {
	const tags = (span.attributes ?? []).map(tag);
	if (scope?.name) tags.push(text('otel.library.name', scope.name));
	if (scope?.version) tags.push(text('otel.library.version', scope.version));
	if (KINDS[span.kind]) tags.push(text('span.kind', KINDS[span.kind]));
	const status = span.status ?? {};
	if (status.code === STATUS_ERROR) {
		tags.push({ key: 'error', type: 'bool', value: true }, text('otel.status_code', 'ERROR'));
		if (status.message) tags.push(text('otel.status_description', status.message));
	} else if (status.code === STATUS_OK) {
		tags.push(text('otel.status_code', 'OK'));
	}
	if (span.traceState) tags.push(text('w3c.tracestate', span.traceState));
	return tags;
}

function references(span) {
	const refs = [];
	const parent = hexId(span.parentSpanId, 'a parentSpanId');
	if (parent) refs.push({ refType: 'CHILD_OF', traceID: hexId(span.traceId, 'a traceId'), spanID: parent });
	for (const link of span.links ?? []) refs.push({ refType: 'FOLLOWS_FROM', traceID: hexId(link.traceId, 'a link traceId'), spanID: hexId(link.spanId, 'a link spanId') });
	return refs;
}

const logs = (span) =>
	(span.events ?? []).map((event) => ({
		timestamp: micros(event.timeUnixNano, 'an event time'),
		fields: [text('event', event.name), ...(event.attributes ?? []).map(tag)],
	}));

/**
 * Every trace of an OTLP/JSON `ExportTraceServiceRequest` (or of several: an array of them), as
 * Jaeger traces `{ traceID, spans, processes, warnings }` in the order their first span comes.
 * @param {{ resourceSpans?: any[] } | { resourceSpans?: any[] }[]} request
 * @returns {{ traceID: string, spans: any[], processes: Record<string, { serviceName: string, tags: object[] }>, warnings: null }[]}
 */
export function otlpToJaeger(request) {
	const resourceSpans = (Array.isArray(request) ? request : [request]).flatMap(resourceSpansOf);
	/** @type {Map<string, { traceID: string, spans: object[], processes: Record<string, object>, processIds: Map<string, string>, warnings: null }>} */
	const traces = new Map();
	for (const { resource = {}, scopeSpans = [] } of resourceSpans) {
		const attributes = resource.attributes ?? [];
		const service = attributes.find((a) => a.key === 'service.name');
		const process = {
			serviceName: service ? String(plain(service.value)) : 'OTLP_EMPTY_SERVICE_NAME',
			tags: attributes.filter((a) => a.key !== 'service.name').map(tag),
		};
		const processKey = JSON.stringify(process);
		for (const { scope, spans = [] } of scopeSpans) {
			for (const span of spans) {
				const traceID = hexId(span.traceId, 'a traceId');
				const spanID = hexId(span.spanId, 'a spanId');
				if (!traceID || !spanID) throw new NotOtlpError('a span has no traceId or spanId');
				let trace = traces.get(traceID);
				if (!trace) traces.set(traceID, (trace = { traceID, spans: [], processes: {}, processIds: new Map(), warnings: null }));
				// One process per distinct resource in a trace (equal ones are one, as Jaeger's query
				// service deduplicates them), numbered p1, p2... in the order they come.
				let processID = trace.processIds.get(processKey);
				if (!processID) {
					processID = `p${trace.processIds.size + 1}`;
					trace.processIds.set(processKey, processID);
					trace.processes[processID] = process;
				}
				const start = micros(span.startTimeUnixNano, 'a startTimeUnixNano');
				trace.spans.push({
					traceID,
					spanID,
					operationName: span.name,
					references: references(span),
					startTime: start,
					duration: micros(span.endTimeUnixNano, 'an endTimeUnixNano') - start,
					tags: spanTags(span, scope),
					logs: logs(span),
					processID,
					warnings: null,
				});
			}
		}
	}
	return [...traces.values()].map(({ processIds, ...trace }) => trace);
}
