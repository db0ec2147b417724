import { exports } from 'cloudflare:workers';
import { evictDurableObject, runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../src/engine/streams/stream';
import { STREAM_BEHIND_CLOSE, STREAM_SUBSCRIBER_WINDOW } from '../../src/engine/streams/stream-window';
import { SSE_RESPONSE_BYTES } from '../../src/engine/streams/sse-budget';
import { SSE_BUSY_RETRY_MS, SSE_RELAY_WINDOW, SSE_RELAYS_PER_ADDRESS, takeRelayPlace } from '../../src/api/sse-relays';
import { api } from '../api/helpers';
import { settle, stub, uniqueId, until } from '../helpers';

// A subscriber's window (docs/streams.md "Slow subscribers"): what an instance sends one subscriber
// that has not taken it is bounded, whether it acknowledges (paced) or not (dropped with where to resume).

const worker = () => (exports as unknown as { default: Fetcher }).default;
/** 200 messages of 16,000 bytes (one burst: published at once), about 3 windows. */
const MESSAGES = 200;

type Received = { kind: string; seq: number; token?: string; data?: { i: number }; status?: string };

/** A WebSocket to an instance's stream that records every message and close, and lets the test wait for either. */
async function subscribe(id: string, query = '') {
	const response = await worker().fetch(`http://shardflow.test/workflows/${id}/stream${query}`, { headers: { upgrade: 'websocket' } });
	expect(response.status).toBe(101);
	const ws = response.webSocket!;
	const messages: Received[] = [];
	let bytes = 0;
	let closed: { code: number; reason: string } | undefined;
	let changed: () => void = () => {};
	ws.addEventListener('message', (e) => {
		bytes += new TextEncoder().encode(String(e.data)).byteLength;
		messages.push(JSON.parse(String(e.data)));
		changed();
	});
	ws.addEventListener('close', (e) => {
		closed = { code: e.code, reason: e.reason };
		changed();
	});
	ws.accept();
	const until = async (ok: () => boolean) => {
		while (!ok()) await new Promise<void>((resolve) => (changed = resolve));
	};
	/** Waits until nothing more came for a few turns of the object (it has sent all it would). */
	const quiet = async () => {
		for (let seen = -1; seen !== messages.length; ) {
			seen = messages.length;
			await settle(id);
			await new Promise((resolve) => setTimeout(resolve, 50));
		}
	};
	return {
		ws,
		messages,
		records: () => messages.filter((m) => m.kind !== 'ack'),
		indexes: () => messages.filter((m) => m.kind === 'stream.message').map((m) => m.data!.i),
		bytes: () => bytes,
		closed: () => closed,
		until,
		quiet,
	};
}

async function bigStream(): Promise<string> {
	const id = uniqueId('big');
	const created = await api('POST', '/workflows', { type: 'big-stream', id, payload: { messages: MESSAGES, bytes: 16_000 } });
	expect(created.status).toBe(201);
	await settle(id);
	return id;
}

const every = Array.from({ length: MESSAGES }, (_, i) => i + 1);

describe("an instance's stream to a subscriber that acknowledges (ack=1)", () => {
	it('sends no more than its window until it answers, asks for an answer, and then sends the rest: every record once, in order', async () => {
		const id = await bigStream();
		const sub = await subscribe(id, '?after=0&ack=1');
		await sub.until(() => sub.messages.some((m) => m.kind === 'ack'));
		await sub.quiet();
		// Paced, not dropped: open, a window's worth at most, and a request to answer.
		expect(sub.closed()).toBeUndefined();
		expect(sub.bytes()).toBeLessThanOrEqual(STREAM_SUBSCRIBER_WINDOW + 64);
		expect(sub.indexes().length).toBeLessThan(MESSAGES);
		const paused = sub.indexes().length;
		// The answers free the window, request by request, until the end.
		let answered = 0;
		while (!sub.messages.some((m) => m.kind === 'end')) {
			const requests = sub.messages.filter((m) => m.kind === 'ack');
			if (requests.length > answered) { const request = requests[answered++]!; sub.ws.send(JSON.stringify({ ack: request.seq, token: request.token })); }
			else await sub.until(() => sub.messages.filter((m) => m.kind === 'ack').length > answered || sub.messages.some((m) => m.kind === 'end'));
		}
		expect(sub.indexes().length).toBeGreaterThan(paused);
		expect(sub.indexes()).toEqual(every);
		const seqs = sub.records().map((m) => m.seq);
		expect(seqs.slice(0, -1)).toEqual([...seqs.slice(0, -1)].sort((a, b) => a - b));
		expect(new Set(seqs.slice(0, -1)).size).toBe(seqs.length - 1);
		expect(sub.messages.at(-1)).toMatchObject({ kind: 'end', status: 'completed' });
	});

	it('frees nothing for an answer to a request it was not sent, nor for the right seq without the request\'s token', async () => {
		const id = await bigStream();
		const sub = await subscribe(id, '?after=0&ack=1');
		await sub.until(() => sub.messages.some((m) => m.kind === 'ack'));
		await sub.quiet();
		const before = sub.messages.length;
		sub.ws.send(JSON.stringify({ ack: 999_999 }));
		sub.ws.send('not an ack');
		// The right seq without the request's token: what a subscriber that never read the request sends (found from outside).
		const request = sub.messages.find((m) => m.kind === 'ack')!;
		sub.ws.send(JSON.stringify({ ack: request.seq }));
		sub.ws.send(JSON.stringify({ ack: request.seq, token: '0000000000000000' }));
		await sub.quiet();
		expect(sub.messages.length).toBe(before);
		expect(sub.closed()).toBeUndefined();
	});

	it('keeps its window across an eviction of the instance: no more is sent for the wake, and the answer still counts', async () => {
		const id = await bigStream();
		const sub = await subscribe(id, '?after=0&ack=1');
		await sub.until(() => sub.messages.some((m) => m.kind === 'ack'));
		await sub.quiet();
		const before = sub.bytes();
		await evictDurableObject(stub(id));
		// A request to the woken object (a second subscriber that finishes) makes it flush again.
		const other = await subscribe(id, `?after=${sub.records().at(-1)!.seq}&ack=1`);
		await other.quiet();
		expect(sub.bytes()).toBe(before);
		// Answering every request (the one from before the eviction first) brings the rest.
		let answered = 0;
		while (!sub.messages.some((m) => m.kind === 'end')) {
			const requests = sub.messages.filter((m) => m.kind === 'ack');
			if (requests.length > answered) { const request = requests[answered++]!; sub.ws.send(JSON.stringify({ ack: request.seq, token: request.token })); }
			else await sub.until(() => sub.messages.filter((m) => m.kind === 'ack').length > answered || sub.messages.some((m) => m.kind === 'end'));
		}
		expect(sub.indexes()).toEqual(every);
		other.ws.close();
	});
});

describe("an instance's stream to a WebSocket that does not acknowledge", () => {
	it('closes it with 4008 once it is a window behind, saying where to resume; resuming there misses nothing', async () => {
		const id = await bigStream();
		const first = await subscribe(id, '?after=0');
		await first.until(() => first.closed() !== undefined);
		expect(first.closed()!.code).toBe(STREAM_BEHIND_CLOSE);
		expect(first.bytes()).toBeLessThanOrEqual(STREAM_SUBSCRIBER_WINDOW);
		const after = Number(/after=(\d+)/.exec(first.closed()!.reason)?.[1]);
		expect(after).toBe(first.records().at(-1)!.seq);
		// Resumed as often as it takes: the whole stream, once and in order.
		const indexes = [...first.indexes()];
		let from = after;
		for (;;) {
			const next = await subscribe(id, `?after=${from}`);
			await next.until(() => next.closed() !== undefined);
			indexes.push(...next.indexes());
			if (next.closed()!.code === 1000) break;
			expect(next.closed()!.code).toBe(STREAM_BEHIND_CLOSE);
			from = next.records().at(-1)!.seq;
		}
		expect(indexes).toEqual(every);
	});
});

describe("an instance's stream over Server-Sent Events", () => {
	/** The frames of one whole SSE response, and its size in bytes. */
	async function sse(id: string, lastEventId?: string) {
		const response = await worker().fetch(`http://shardflow.test/workflows/${id}/stream`, { headers: lastEventId ? { 'last-event-id': lastEventId } : {} });
		expect(response.status).toBe(200);
		const body = new Uint8Array(await response.arrayBuffer());
		const frames = new TextDecoder()
			.decode(body)
			.split('\n\n')
			.filter((block) => block.includes('data: '))
			.map((block) => {
				const fields = Object.fromEntries(block.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]));
				return { id: fields.id, event: fields.event, data: JSON.parse(fields.data!) as Received };
			});
		return { frames, bytes: body.byteLength };
	}

	it('ends a response with event: behind once it relayed a window, naming where to resume; resuming from Last-Event-ID misses nothing and repeats nothing', async () => {
		const id = await bigStream();
		const first = await sse(id);
		const behind = first.frames.at(-1)!;
		expect(behind.event).toBe('behind');
		expect(behind.data).toMatchObject({ kind: 'behind', seq: first.frames.at(-2)!.data.seq, bytes: SSE_RESPONSE_BYTES });
		expect(behind.id).toBe(String(behind.data.seq));
		// What the response handed to its body never passes the budget by more than the behind frame.
		expect(first.bytes).toBeLessThanOrEqual(SSE_RESPONSE_BYTES + 200);
		const indexes = first.frames.filter((f) => f.data.kind === 'stream.message').map((f) => f.data.data!.i);
		let from = behind.id!;
		for (let responses = 1; ; responses++) {
			expect(responses).toBeLessThan(10);
			const next = await sse(id, from);
			indexes.push(...next.frames.filter((f) => f.data.kind === 'stream.message').map((f) => f.data.data!.i));
			const last = next.frames.at(-1)!;
			if (last.event === 'end') break;
			expect(last.event).toBe('behind');
			from = last.id!;
		}
		expect(indexes).toEqual(every);
	});
});

/** The WebSockets the instance holds open: one per subscriber it still sends to. */
async function openSubscribers(id: string): Promise<number> {
	return runInDurableObject(stub(id), (_instance, state) => state.getWebSockets().filter((ws) => ws.readyState === WebSocket.OPEN).length);
}

describe('an SSE response that ends (found from outside: each left a subscriber behind for good)', () => {
	it('leaves no subscriber at the instance once it ended with event: behind, so 2,000 such responses do not fill its subscribers', async () => {
		const id = await bigStream();
		for (let i = 0; i < 3; i++) {
			const response = await worker().fetch(`http://shardflow.test/workflows/${id}/stream`);
			expect(response.status).toBe(200);
			expect(await response.text()).toContain('event: behind');
		}
		await until(async () => (await openSubscribers(id)) === 0, 'the relays to let go of their subscriptions');
	});

	it('leaves no subscriber at the instance once its client went away mid-stream', async () => {
		const id = await bigStream();
		const response = await worker().fetch(`http://shardflow.test/workflows/${id}/stream`);
		const reader = response.body!.getReader();
		for (let read = 0; read < 3; read++) await reader.read();
		await reader.cancel();
		await until(async () => (await openSubscribers(id)) === 0, 'the relay to let go of its subscription');
	});
});

describe("an isolate's SSE relays (found from outside: 1,500 catch-ups at once held 1 MiB each in the relaying isolate and ran it out of heap)", () => {
	it('subscribe with a 64 KiB window, so a relay whose client does not read holds 64 KiB here, not 1 MiB', async () => {
		const id = await bigStream();
		const response = await worker().fetch(`http://shardflow.test/workflows/${id}/stream`);
		const reader = response.body!.getReader();
		await reader.read();
		const windows = await runInDurableObject(stub(id), (_instance, state) => state.getWebSockets().map((ws) => (ws.deserializeAttachment() as { w?: { s?: number } }).w?.s));
		expect(windows).toEqual([SSE_RELAY_WINDOW]);
		expect(SSE_RELAY_WINDOW).toBe(64 * 1024);
		await reader.cancel();
	});

	it('give one client address at most its share, so one client holding quiet streams cannot turn every other away (found from outside)', async () => {
		const id = await bigStream();
		const held: (() => void)[] = [];
		for (let place = takeRelayPlace('198.51.100.9'); place; place = takeRelayPlace('198.51.100.9')) held.push(place);
		try {
			expect(held).toHaveLength(SSE_RELAYS_PER_ADDRESS);
			const refused = await worker().fetch(`http://shardflow.test/workflows/${id}/stream`, { headers: { 'cf-connecting-ip': '198.51.100.9' } });
			expect(await refused.text()).toContain('event: busy');
			const other = await worker().fetch(`http://shardflow.test/workflows/${id}/stream`, { headers: { 'cf-connecting-ip': '203.0.113.4' } });
			expect(await other.text()).toContain('event: behind');
		} finally {
			for (const release of held) release();
		}
	});

	it('turn a request away with event: busy and a retry once every place is taken, and relay again once one is free', async () => {
		const id = await bigStream();
		const held: (() => void)[] = [];
		for (let n = 0, place = takeRelayPlace(`10.0.0.${n}`); place; place = takeRelayPlace(`10.0.${++n % 256}.${n >> 8}`)) held.push(place);
		try {
			const busy = await worker().fetch(`http://shardflow.test/workflows/${id}/stream`, { headers: { 'last-event-id': '5', 'cf-connecting-ip': '192.0.2.7' } });
			expect(busy.status).toBe(200);
			const text = await busy.text();
			expect(text.startsWith(`retry: ${SSE_BUSY_RETRY_MS}\n\n`)).toBe(true);
			expect(text).toContain('event: busy');
			expect(text).not.toContain('id:'); // the client keeps the Last-Event-ID it had
			expect(await openSubscribers(id)).toBe(0);
		} finally {
			for (const release of held) release();
		}
		const again = await worker().fetch(`http://shardflow.test/workflows/${id}/stream`);
		expect(await again.text()).toContain('event: behind');
	});
});

describe('a second subscriber joining', () => {
	it('sends the first nothing again: not the record it stands at, nor any before', async () => {
		const id = uniqueId('joined');
		await api('POST', '/workflows', { type: 'payment', id, payload: { amount: 5, currency: 'EUR' } });
		await settle(id);
		const first = await subscribe(id);
		await first.until(() => first.messages.some((m) => m.kind === 'step.completed'));
		await first.quiet();
		const before = first.messages.length;
		// The second starts from the beginning: the object reads the history from there for it.
		const second = await subscribe(id, '?after=0');
		await second.until(() => second.messages.some((m) => m.kind === 'step.completed'));
		await second.quiet();
		expect(first.messages.length).toBe(before);
		await api('POST', `/workflows/${id}/events/approval`, { approved: true, reviewer: 'eve' });
		await first.until(() => first.closed() !== undefined);
		await second.until(() => second.closed() !== undefined);
		const seqs = first.messages.filter((m) => m.kind !== 'end').map((m) => m.seq);
		expect(new Set(seqs).size).toBe(seqs.length);
		expect(first.messages.map((m) => m.kind)).toEqual(second.messages.map((m) => m.kind));
	});
});
