import { errorFromBody, ErrorCode, ShardflowError } from '../engine/support/errors';
import { assertValidWorkflowId } from '../engine/support/ids';
import type { StreamEvent } from '../engine/streams/stream';
import { namespace, type ShardflowEnv } from './instance-client';

/** Messages one iterator holds that its consumer has not taken yet; past this it lets go of the socket and resumes later. */
export const STREAM_CLIENT_BUFFER = 1_000;
/** Reconnects in a row without a message before the iterator gives up (the instance's object keeps failing). */
const MAX_RECONNECTS = 5;

export interface StreamOptions {
	/** Resume after this record (a `seq` the previous iterator yielded); default: the start of the instance's current run. */
	after?: number;
	/** Stops the iterator (it returns, closing its socket). */
	signal?: AbortSignal;
	/**
	 * The most bytes of records the instance sends ahead of what this iterator's consumer took (its
	 * window, docs/streams.md "Slow subscribers"): 16 KiB to 1 MiB, default 1 MiB. A smaller one
	 * holds less in this isolate per iterator, for more acknowledgements.
	 */
	window?: number;
}

type Socket = {
	accept(): void;
	send(message: string): void;
	close(code?: number, reason?: string): void;
	addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
	addEventListener(type: 'close' | 'error', listener: () => void): void;
};
/** The instance asks for an acknowledgement once the consumer took every event before it (engine/streams/stream-window.ts). */
type AckRequest = { kind: 'ack'; seq: number; token: string };
type StreamStub = { fetch(request: Request): Promise<Response & { webSocket?: Socket | null }> };

/**
 * An instance's stream as an async iterator, for a Worker bound to the
 * `WorkflowRunner` namespace (docs/streams.md): status changes, step
 * completions and custom messages in history order, then `end` once the
 * instance has finished, after which the iterator is done. It talks to the
 * instance's object over a hibernatable WebSocket and, if that drops (an
 * eviction, a deploy, a consumer slower than `STREAM_CLIENT_BUFFER` messages),
 * reconnects after the last record it yielded: no gap, no duplicate.
 *
 * @example
 * for await (const event of imports.stream(id)) {
 *   if (event.kind === 'stream.message' && event.topic === 'progress') console.log(event.data.percent);
 * }
 */
export async function* instanceStream<M extends Record<string, unknown> = Record<string, unknown>>(
	env: ShardflowEnv,
	id: string,
	options: StreamOptions = {},
): AsyncGenerator<StreamEvent<M>, void, undefined> {
	yield* await openInstanceStream<M>(env, id, options);
}

/**
 * `instanceStream`, connected: resolves once the instance accepted the subscription, and
 * throws its refusal (NOT_FOUND, STREAM_SUBSCRIBERS_FULL, INVALID_CURSOR) instead of a
 * later first step. The SSE route uses it to answer a refusal with its HTTP status.
 */
export async function openInstanceStream<M extends Record<string, unknown> = Record<string, unknown>>(
	env: ShardflowEnv,
	id: string,
	options: StreamOptions = {},
): Promise<AsyncGenerator<StreamEvent<M>, void, undefined>> {
	assertValidWorkflowId(id);
	const first = await connect(env, id, options.after, options.signal, options.window);
	return follow<M>(env, id, options, first);
}

async function* follow<M extends Record<string, unknown>>(
	env: ShardflowEnv,
	id: string,
	options: StreamOptions,
	first: Connection,
): AsyncGenerator<StreamEvent<M>, void, undefined> {
	let after = options.after;
	let reconnects = 0;
	let connection: Connection | undefined = first;
	while (!options.signal?.aborted) {
		connection ??= await connect(env, id, after, options.signal, options.window);
		try {
			for (;;) {
				const event = await connection.next();
				if (event === undefined) break; // the socket dropped (or let go of a slow consumer): resume
				reconnects = 0;
				yield event as StreamEvent<M>;
				if (event.kind === 'end') return;
				after = event.seq;
			}
		} finally {
			connection.close();
		}
		connection = undefined;
		if (options.signal?.aborted) return;
		if (++reconnects > MAX_RECONNECTS) {
			throw new ShardflowError(ErrorCode.Internal, `the stream of workflow "${id}" dropped ${MAX_RECONNECTS} times in a row without a message; resume with after=${after ?? 'unset'}`);
		}
		await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** reconnects));
	}
}

type Connection = Awaited<ReturnType<typeof connect>>;

/** One WebSocket to the instance, as a bounded queue of events. */
async function connect(env: ShardflowEnv, id: string, after: number | undefined, signal: AbortSignal | undefined, window?: number) {
	const stub = namespace(env).getByName(id) as StreamStub;
	// ack=1: this subscriber acknowledges what its consumer took (engine/streams/stream-window.ts), so the
	// instance paces it by its window instead of sending whether or not it was read.
	const query = `?${after === undefined ? '' : `after=${after}&`}${window === undefined ? '' : `window=${Math.floor(window)}&`}ack=1`;
	const response = await stub.fetch(new Request(`https://instance/stream${query}`, { headers: { upgrade: 'websocket' } }));
	const ws = response.webSocket;
	if (response.status !== 101 || !ws) {
		const body = (await response.json().catch(() => null)) as { error?: { code: string; message: string } } | null;
		throw errorFromBody(body?.error ?? { code: ErrorCode.Internal, message: `the stream of workflow "${id}" answered ${response.status}` });
	}
	ws.accept();
	/** Events not yet taken, and the instance's requests for an acknowledgement where they came. */
	const queue: (StreamEvent | AckRequest)[] = [];
	let done = false;
	let wake: (() => void) | undefined;
	const finish = () => {
		done = true;
		wake?.();
	};
	ws.addEventListener('message', ({ data }) => {
		if (done) return;
		queue.push(JSON.parse(String(data)) as StreamEvent | AckRequest);
		// A consumer this far behind: let go of the socket, so the runtime buffers nothing more for it.
		// The iterator drains what it holds and reconnects after the last record it yielded.
		if (queue.length >= STREAM_CLIENT_BUFFER && queue.at(-1)?.kind !== 'end') {
			done = true;
			ws.close(1000, 'slow consumer');
		}
		wake?.();
	});
	ws.addEventListener('close', finish);
	ws.addEventListener('error', finish);
	// Stopped from outside: close the socket at once, whether or not the iterator is ever asked for
	// its next event again (a generator paused at its yield runs no `finally`), so the instance
	// stops sending and frees the subscriber, and nothing queued is held.
	const stopped = () => {
		finish();
		queue.length = 0;
		try {
			ws.close(1000, 'stopped');
		} catch {
			// Already closed.
		}
	};
	// Stopped while the socket was being opened: the listener would never fire.
	if (signal?.aborted) stopped();
	else signal?.addEventListener('abort', stopped);
	return {
		async next(): Promise<StreamEvent | undefined> {
			for (;;) {
				while (queue.length === 0 && !done) await new Promise<void>((resolve) => (wake = resolve));
				wake = undefined;
				if (signal?.aborted) return undefined;
				const event = queue.shift();
				if (event?.kind !== 'ack') return event;
				// The consumer asks for more, so it took every event before this request: say so.
				try {
					ws.send(JSON.stringify({ ack: event.seq, token: event.token }));
				} catch {
					// The socket is closing: the iterator reconnects after the last record it yielded.
				}
			}
		},
		close() {
			done = true;
			try {
				ws.close(1000, 'done');
			} catch {
				// Already closed.
			}
		},
	};
}
