import { errorFromBody, ErrorCode, ValidationError } from '../engine/support/errors';
import type { IndexEntry } from '../engine/index/index-entry';
import type { IndexLayout } from '../engine/definition/registry';
import { shardName } from '../engine/object-names';
import { WORKFLOW_STATUSES, type WorkflowStatus } from '../engine/support/statuses';
import { readShards } from '../engine/index/shard';
import { namespace, type ShardflowEnv } from './instance-client';

/** What one query subscription asks for: the instances of one type, in some statuses (none: every status). */
export interface WatchQuery {
	type: string;
	status?: WorkflowStatus[];
	/** Stops the iterator (it returns, closing its sockets). */
	signal?: AbortSignal;
}

/**
 * What a query subscription yields:
 * - `entries`: instances whose index entry changed and now match (their newest entry each);
 * - `resync`: the subscription may have missed changes (a shard's socket dropped and came
 *   back, or a burst was larger than one message): read the listing again
 *   (`IndexClient.list`) if you keep state. Index changes are live notices, not a durable
 *   log: there is no `after` to resume from.
 */
export type WatchEvent = { kind: 'entries'; entries: IndexEntry[] } | { kind: 'resync'; reason: 'reconnected' | 'overflow' };

/** Changes one iterator holds that its consumer has not taken yet; past this it drops them and yields `resync`. */
export const WATCH_CLIENT_BUFFER = 1_000;

type Socket = {
	accept(): void;
	close(code?: number, reason?: string): void;
	addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
	addEventListener(type: 'close' | 'error', listener: () => void): void;
};
type ShardStub = { fetch(request: Request): Promise<Response & { webSocket?: Socket | null }> };

/**
 * Status changes of every instance of a type that match a filter, as they reach
 * the index (docs/streams.md): one hibernatable WebSocket per index shard of the
 * type (the shards' live feed, the one the dashboard's list uses), merged into one
 * async iterator. Each change arrives a moment (~100 ms) after the shard stores it.
 * A shard socket that drops is opened again, and the iterator yields `resync`.
 *
 * @example
 * for await (const event of watchIndex(env, layout, { type: 'payment', status: ['errored'] })) {
 *   if (event.kind === 'entries') for (const entry of event.entries) alert(entry.id);
 * }
 */
export async function* watchIndex(env: ShardflowEnv, layout: IndexLayout, query: WatchQuery): AsyncGenerator<WatchEvent, void, undefined> {
	yield* await openIndexWatch(env, layout, query);
}

/**
 * `watchIndex`, connected: resolves once every shard accepted the subscription, and throws a
 * refusal (unknown type or status, too many watchers) instead of a later first step.
 */
export async function openIndexWatch(env: ShardflowEnv, layout: IndexLayout, query: WatchQuery): Promise<AsyncGenerator<WatchEvent, void, undefined>> {
	const config = layout.get(query.type);
	const unknown = query.status?.find((s) => !WORKFLOW_STATUSES.includes(s));
	if (unknown !== undefined) throw new ValidationError(ErrorCode.InvalidQuery, `unknown status ${JSON.stringify(unknown)}; statuses: ${WORKFLOW_STATUSES.join(', ')}`);
	const search = query.status?.length ? `?status=${query.status.join(',')}` : '';
	const queue: WatchEvent[] = [];
	let wake: (() => void) | undefined;
	let failure: unknown;
	let stopped = false;
	const push = (event: WatchEvent) => {
		if (queue.length >= WATCH_CLIENT_BUFFER) {
			// A consumer this far behind: what it holds is stale anyway; tell it to read the listing.
			queue.length = 0;
			queue.push({ kind: 'resync', reason: 'overflow' });
		} else queue.push(event);
		wake?.();
	};
	const sockets = new Map<number, Socket>();
	const open = async (n: number, again: boolean): Promise<void> => {
		const stub = namespace(env).getByName(shardName(config.type, n)) as ShardStub;
		const response = await stub.fetch(new Request(`https://index-shard/live${search}`, { headers: { upgrade: 'websocket' } }));
		const ws = response.webSocket;
		if (response.status !== 101 || !ws) {
			const body = (await response.json().catch(() => null)) as { error?: { code: string; message: string } } | null;
			throw errorFromBody(body?.error ?? { code: ErrorCode.Internal, message: `index shard ${n} of "${config.type}" answered ${response.status}` });
		}
		ws.accept();
		sockets.set(n, ws);
		if (again) push({ kind: 'resync', reason: 'reconnected' });
		ws.addEventListener('message', ({ data }) => {
			const message = JSON.parse(String(data)) as { kind: string; entries?: IndexEntry[] };
			if (message.kind === 'entries' && message.entries?.length) push({ kind: 'entries', entries: message.entries });
			else if (message.kind === 'overflow') push({ kind: 'resync', reason: 'overflow' });
		});
		let reopened = false;
		const reopen = () => {
			if (stopped || reopened) return;
			reopened = true;
			sockets.delete(n);
			setTimeout(() => void open(n, true).catch((error) => ((failure = error), wake?.())), 200);
		};
		ws.addEventListener('close', reopen);
		ws.addEventListener('error', reopen);
	};
	const stop = () => {
		stopped = true;
		wake?.();
	};
	query.signal?.addEventListener('abort', stop);
	const closeAll = () => {
		stopped = true;
		query.signal?.removeEventListener('abort', stop);
		for (const ws of sockets.values()) {
			try {
				ws.close(1000, 'done');
			} catch {
				// Already closed.
			}
		}
	};
	try {
		await Promise.all(readShards(config).map((n) => open(n, false)));
	} catch (error) {
		closeAll();
		throw error;
	}
	return (async function* () {
		try {
			while (!stopped) {
				if (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
				wake = undefined;
				if (failure) throw failure;
				while (queue.length && !stopped) yield queue.shift()!;
			}
		} finally {
			closeAll();
		}
	})();
}
