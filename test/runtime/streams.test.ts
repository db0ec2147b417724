import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { workflowClient } from '../../src/client/workflow-client';
import type { ShardflowEnv } from '../../src/client/instance-client';
import type { StreamEvent } from '../../src/engine/streams/stream';
import type { ProgressWorkflow } from '../../examples/demo/workflows/progress-workflow';
import { api } from '../api/helpers';
import { IndexClient } from '../../src/client/index-client';
import type { IndexEntry } from '../../src/engine/index/index-entry';
import { testRegistry } from '../worker/index';
import { evictDurableObject } from 'cloudflare:test';
import { settle, stub, uniqueId } from '../helpers';

const progress = () => workflowClient<typeof ProgressWorkflow>(env as unknown as ShardflowEnv, 'progress');
const worker = () => (exports as unknown as { default: Fetcher }).default;

async function collect<T>(iterator: AsyncIterable<T>): Promise<T[]> {
	const out: T[] = [];
	for await (const item of iterator) out.push(item);
	return out;
}

/** Server-Sent Events frames of a whole response body. */
function parseSse(text: string): { id?: string; event?: string; data: unknown }[] {
	return text
		.split('\n\n')
		.filter((block) => block.includes('data: '))
		.map((block) => {
			const fields = Object.fromEntries(block.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]));
			return { id: fields.id, event: fields.event, data: JSON.parse(fields.data!) };
		});
}

describe("a Worker iterating an instance's stream", () => {
	it('receives the run from its creation to its end: steps, progress messages in order, status changes, then end', async () => {
		const { id } = await progress().create({ payload: { parts: 5, partMs: 10 } });
		const events = await collect(progress().stream(id));
		expect(events[0]).toMatchObject({ kind: 'workflow.created' });
		expect(events.at(-2)).toMatchObject({ kind: 'workflow.completed' });
		expect(events.at(-1)).toEqual({ kind: 'end', seq: events.at(-2)!.seq, status: 'completed' });
		const messages = events.filter((e) => e.kind === 'stream.message');
		expect(messages.map((m) => m.data.percent)).toEqual([20, 40, 60, 80, 100]);
		expect(messages.map((m) => m.index)).toEqual([1, 2, 3, 4, 5]);
		// Each part's completion comes before its progress message: history order.
		const order = events.map((e) => (e.kind === 'step.completed' ? e.step : e.kind === 'stream.message' ? `progress ${e.data.done}` : e.kind));
		expect(order.slice(1, 11)).toEqual(['part-1', 'progress 1', 'part-2', 'progress 2', 'part-3', 'progress 3', 'part-4', 'progress 4', 'part-5', 'progress 5']);
		const seqs = events.slice(0, -1).map((e) => e.seq);
		expect(new Set(seqs).size).toBe(seqs.length);
		expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
	});

	it('resumes after a seq it was given: exactly the records after it, none twice', async () => {
		const { id } = await progress().create({ payload: { parts: 4, partMs: 0 } });
		const all = await collect(progress().stream(id));
		const third = all.filter((e) => e.kind === 'stream.message')[2]!;
		const rest = await collect(progress().stream(id, { after: third.seq }));
		expect(rest).toEqual(all.filter((e) => e.seq > third.seq || e.kind === 'end'));
	});

	it('refuses an after past the last record with 400 INVALID_CURSOR (SSE, WebSocket and the iterator alike), and ends at once after the last one', async () => {
		const { id } = await progress().create({ payload: { parts: 2, partMs: 0 } });
		const all = await collect(progress().stream(id));
		const last = all.at(-1)!.seq;
		const sse = await api('GET', `/workflows/${id}/stream?after=${last + 1}`);
		expect(sse.status).toBe(400);
		expect(sse.json.error).toMatchObject({ code: 'INVALID_CURSOR', message: expect.stringContaining(`seq ${last}`) });
		const ws = await worker().fetch(`http://shardflow.test/workflows/${id}/stream?after=${last + 100}`, { headers: { upgrade: 'websocket' } });
		expect(ws.status).toBe(400);
		expect(((await ws.json()) as { error: { code: string } }).error.code).toBe('INVALID_CURSOR');
		await expect(collect(progress().stream(id, { after: last + 1 }))).rejects.toMatchObject({ code: 'INVALID_CURSOR' });
		expect(await collect(progress().stream(id, { after: last }))).toEqual([{ kind: 'end', seq: last, status: 'completed' }]);
	});

	it('throws NOT_FOUND for an instance that does not exist', async () => {
		await expect(collect(progress().stream(uniqueId('no-such')))).rejects.toMatchObject({ code: 'NOT_FOUND' });
	});
});

describe('GET /workflows/:id/stream', () => {
	it('answers Server-Sent Events whose ids are the seqs, ending with an end event', async () => {
		const { id } = await progress().create({ payload: { parts: 3, partMs: 0 } });
		const response = await worker().fetch(`http://shardflow.test/workflows/${id}/stream`);
		expect(response.status).toBe(200);
		expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
		const frames = parseSse(await response.text());
		expect(frames.at(-1)).toMatchObject({ event: 'end', data: { kind: 'end', status: 'completed' } });
		expect(frames.slice(0, -1).map((f) => Number(f.id))).toEqual(frames.slice(0, -1).map((f) => (f.data as StreamEvent).seq));
		expect(frames.filter((f) => (f.data as StreamEvent).kind === 'stream.message').map((f) => (f.data as { data: { done: number } }).data.done)).toEqual([1, 2, 3]);
	});

	it('resumes from Last-Event-ID, as a reconnecting EventSource sends it', async () => {
		const { id } = await progress().create({ payload: { parts: 3, partMs: 0 } });
		await settle(id);
		const all = parseSse(await (await worker().fetch(`http://shardflow.test/workflows/${id}/stream`)).text());
		const cut = all[2]!.id!;
		const rest = parseSse(await (await worker().fetch(`http://shardflow.test/workflows/${id}/stream`, { headers: { 'last-event-id': cut } })).text());
		expect(rest).toEqual(all.slice(3));
	});

	it('resumes from Last-Event-ID over the after of the URL it opened, as a reconnecting EventSource sends both', async () => {
		const { id } = await progress().create({ payload: { parts: 3, partMs: 0 } });
		await settle(id);
		const all = parseSse(await (await worker().fetch(`http://shardflow.test/workflows/${id}/stream`)).text());
		const opened = all[0]!.id!;
		const cut = all[3]!.id!;
		const rest = parseSse(await (await worker().fetch(`http://shardflow.test/workflows/${id}/stream?after=${opened}`, { headers: { 'last-event-id': cut } })).text());
		expect(rest).toEqual(all.slice(4));
	});

	it("refuses an empty status filter on a type's stream with 400 INVALID_QUERY instead of following every status", async () => {
		const response = await worker().fetch('http://shardflow.test/types/progress/stream?status=');
		expect(response.status).toBe(400);
		expect(((await response.json()) as { error: { code: string } }).error.code).toBe('INVALID_QUERY');
	});

	it('accepts a WebSocket upgrade and sends the records as JSON messages', async () => {
		const { id } = await progress().create({ payload: { parts: 2, partMs: 0 } });
		await settle(id);
		const response = await worker().fetch(`http://shardflow.test/workflows/${id}/stream?after=0`, { headers: { upgrade: 'websocket' } });
		expect(response.status).toBe(101);
		const ws = response.webSocket!;
		const received: StreamEvent[] = [];
		const closed = new Promise<number>((resolve) => ws.addEventListener('close', (e) => resolve(e.code)));
		ws.addEventListener('message', (e) => {
			received.push(JSON.parse(String(e.data)));
		});
		ws.accept();
		expect(await closed).toBe(1000);
		expect(received.at(-1)).toMatchObject({ kind: 'end', status: 'completed' });
		expect(received.filter((e) => e.kind === 'stream.message')).toHaveLength(2);
	});

	it.for([
		['an unknown instance', (): string => `/workflows/${uniqueId('none')}/stream`, 404, 'NOT_FOUND'],
		['a malformed after', (): string => '/workflows/some-id/stream?after=abc', 400, 'INVALID_CURSOR'],
		['a reserved id', (): string => '/workflows/__index:progress:0/stream', 400, 'RESERVED_ID'],
		['after given twice (which one counts?)', (): string => '/workflows/some-id/stream?after=1&after=2', 400, 'INVALID_QUERY'],
		['a parameter a stream does not take', (): string => '/workflows/some-id/stream?from=1', 400, 'INVALID_QUERY'],
	] as const)('refuses %s with a JSON error', async ([, path, status, code]) => {
		const res = await api('GET', path());
		expect(res.status).toBe(status);
		expect(res.json.error.code).toBe(code);
	});
});

describe('what following a stream costs', () => {
	it("writes a subscriber's socket attachment when it subscribes and once more when it is in step, not for each message", async () => {
		const writes: unknown[] = [];
		const serialize = WebSocket.prototype.serializeAttachment;
		WebSocket.prototype.serializeAttachment = function (this: WebSocket, value: unknown) {
			writes.push(value);
			return serialize.call(this, value);
		};
		try {
			const { id } = await progress().create({ payload: { parts: 12, partMs: 5 } });
			const subscribers = 3;
			const ended = await Promise.all(
				Array.from({ length: subscribers }, async () => {
					const ws = (await worker().fetch(`http://shardflow.test/workflows/${id}/stream?after=0`, { headers: { upgrade: 'websocket' } })).webSocket!;
					const received: StreamEvent[] = [];
					ws.addEventListener('message', (e) => received.push(JSON.parse(String(e.data))));
					const closed = new Promise<void>((resolve) => ws.addEventListener('close', () => resolve()));
					ws.accept();
					await closed;
					return received;
				}),
			);
			for (const received of ended) {
				expect(received.filter((e) => e.kind === 'stream.message')).toHaveLength(12);
				expect(received.at(-1)).toMatchObject({ kind: 'end', status: 'completed' });
			}
			// One when each subscribes; at most one more each, when it reaches the head (12 parts are ~28 records).
			expect(writes.length).toBeGreaterThanOrEqual(subscribers);
			expect(writes.length).toBeLessThanOrEqual(2 * subscribers);
		} finally {
			WebSocket.prototype.serializeAttachment = serialize;
		}
	});
});

describe('a subscriber across the eviction of the instance (what hibernation does)', () => {
	it('keeps its socket and its place: records after the eviction arrive once, none sent again', async () => {
		const id = uniqueId('evicted');
		await api('POST', '/workflows', { type: 'payment', id, payload: { amount: 5, currency: 'EUR' } });
		await settle(id);
		const response = await worker().fetch(`http://shardflow.test/workflows/${id}/stream`, { headers: { upgrade: 'websocket' } });
		const ws = response.webSocket!;
		const received: StreamEvent[] = [];
		let arrived: () => void = () => {};
		ws.addEventListener('message', (e) => {
			received.push(JSON.parse(String(e.data)));
			arrived();
		});
		const closed = new Promise<number>((resolve) => ws.addEventListener('close', (e) => resolve(e.code)));
		ws.accept();
		const until = async (ok: () => boolean) => {
			while (!ok()) await new Promise<void>((resolve) => (arrived = resolve));
		};
		await until(() => received.some((e) => e.kind === 'step.completed'));
		const before = received.length;
		await evictDurableObject(stub(id)); // the object goes; its hibernatable socket stays
		await api('POST', `/workflows/${id}/events/approval`, { approved: true, reviewer: 'eve' });
		expect(await closed).toBe(1000);
		expect(received.length).toBeGreaterThan(before);
		const seqs = received.filter((e) => e.kind !== 'end').map((e) => e.seq);
		expect(new Set(seqs).size).toBe(seqs.length);
		expect(received.map((e) => (e.kind === 'step.completed' ? e.step : e.kind))).toEqual(['workflow.created', 'reserve-funds', 'charge-card', 'workflow.completed', 'end']);
	});
});

describe('a query subscription (status changes of the instances of a type that match)', () => {
	it('yields the entries of matching instances as they reach the index, and none in other statuses', async () => {
		const index = new IndexClient(env as unknown as ShardflowEnv, testRegistry);
		const abort = new AbortController();
		const watching = await index.watch({ type: 'progress', status: ['completed'], signal: abort.signal });
		const { id } = await progress().create({ payload: { parts: 2, partMs: 0 } });
		const seen: IndexEntry[] = [];
		for (let next = await watching.next(); !next.done; next = await watching.next()) {
			if (next.value.kind === 'entries') seen.push(...next.value.entries);
			if (seen.some((e) => e.id === id)) break;
		}
		abort.abort();
		await watching.return();
		expect(seen.find((e) => e.id === id)).toMatchObject({ id, type: 'progress', status: 'completed' });
		expect(seen.every((e) => e.status === 'completed')).toBe(true);
	});

	it('is served as Server-Sent Events at GET /types/:type/stream, behind the API', async () => {
		const response = await worker().fetch('http://shardflow.test/types/progress/stream?status=completed');
		expect(response.status).toBe(200);
		expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
		const { id } = await progress().create({ payload: { parts: 1, partMs: 0 } });
		const reader = response.body!.getReader();
		const decoder = new TextDecoder();
		let text = '';
		while (!text.includes(`"id":"${id}"`)) {
			const { value, done } = await reader.read();
			if (done) break;
			text += decoder.decode(value, { stream: true });
		}
		await reader.cancel();
		const frames = parseSse(text);
		const entries = frames.filter((f) => f.event === 'entries').flatMap((f) => (f.data as { entries: IndexEntry[] }).entries);
		expect(entries.find((e) => e.id === id)).toMatchObject({ status: 'completed' });
	});

	it.for([
		['an unknown status', '/types/progress/stream?status=done', 400, 'INVALID_QUERY'],
		['an unknown type', '/types/nope/stream', 400, 'UNKNOWN_TYPE'],
		['a parameter it does not take', '/types/progress/stream?stauts=running', 400, 'INVALID_QUERY'],
		['status given twice', '/types/progress/stream?status=running&status=completed', 400, 'INVALID_QUERY'],
	] as const)('refuses %s with a JSON error', async ([, path, status, code]) => {
		const res = await api('GET', path);
		expect(res.status).toBe(status);
		expect(res.json.error.code).toBe(code);
	});
});
