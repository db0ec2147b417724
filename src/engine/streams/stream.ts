import { ErrorCode, StreamMessageTooLargeError, StreamRateLimitedError, ValidationError } from '../support/errors';
import { toHistoryEvent, type HistoryEvent, type HistoryKind, type HistoryRow } from '../history/history';
import { FINISHED_STATUSES, type WorkflowStatus } from '../support/statuses';

/**
 * An instance's live stream (docs/streams.md): the records of its history that a
 * subscriber cares about (status changes, step completions and failures, and the
 * custom messages `step.emit` publishes), in history order, each with its history
 * `seq`, so a subscriber that reconnects with `after=<seq>` misses nothing and
 * sees nothing twice. Custom messages are history records (`stream.message`):
 * durable, kept as long as the instance's history, counted in its history limit.
 */

/** Largest `data` of one `step.emit`, as UTF-8 JSON. Small enough that a subscriber's catch-up page stays bounded. */
export const STREAM_MESSAGE_MAX_BYTES = 16 * 1024;
/** Messages an instance may publish per second, sustained (a token bucket refilled at this rate). */
export const STREAM_MESSAGES_PER_SECOND = 50;
/** Messages an instance may publish in a burst (the bucket's size). */
export const STREAM_MESSAGE_BURST = 200;
/** Subscribers one instance accepts at once (WebSockets, SSE relays and client iterators alike). */
export const STREAM_SUBSCRIBERS_MAX = 2_000;
/**
 * Records one subscriber receives per catch-up read; a subscriber further behind gets the next
 * page on a later turn, as far as its window allows (engine/streams/stream-window.ts).
 */
export const STREAM_CATCH_UP_PAGE = 100;

/** The history kinds a stream carries. */
export const STREAM_KINDS: readonly HistoryKind[] = [
	'workflow.created',
	'workflow.queued',
	'workflow.paused',
	'workflow.resumed',
	'workflow.terminated',
	'workflow.restarted',
	'workflow.completed',
	'workflow.errored',
	'workflow.rolling_back',
	'workflow.diverged',
	'step.completed',
	'step.failed',
	'stream.message',
];

/** The value fields a stream leaves out: a step's result or a run's payload and output can be 1 MiB each (read them with status/history). */
const OMITTED_FIELDS = ['payload', 'result', 'output'] as const;

/**
 * One message of an instance's stream: a history record (value fields left out),
 * or `end` once the instance has finished and every record before it was sent.
 * `M` types the custom messages by topic (the class's `static streams`).
 */
export type StreamEvent<M extends Record<string, unknown> = Record<string, unknown>> =
	| StreamRecord<M>
	| { kind: 'end'; seq: number; status: WorkflowStatus };

/** A record as streamed. */
export type StreamRecord<M extends Record<string, unknown> = Record<string, unknown>> =
	| Exclude<DistributeOmit<Extract<HistoryEvent, { kind: (typeof STREAM_KINDS)[number] }>>, { kind: 'stream.message' }>
	| StreamMessage<M>;

/** A custom message: `topic` and its `data`, with the record's seq, time and generation. */
export type StreamMessage<M extends Record<string, unknown> = Record<string, unknown>> = {
	[T in keyof M & string]: { seq: number; at: number; kind: 'stream.message'; generation: number; topic: T; data: M[T]; /** 1 for the run's first message, 2 for its second, … */ index: number };
}[keyof M & string];

type DistributeOmit<T> = T extends unknown ? Omit<T, (typeof OMITTED_FIELDS)[number]> : never;

/** A history row as a stream record. */
export function toStreamRecord(row: HistoryRow): StreamRecord {
	const event = toHistoryEvent(row) as unknown as Record<string, unknown>;
	for (const field of OMITTED_FIELDS) delete event[field];
	return event as unknown as StreamRecord;
}

/** Whether a stream of an instance in `status` has nothing more to come once it is caught up. */
export function streamEnds(status: WorkflowStatus): boolean {
	return FINISHED_STATUSES.includes(status);
}

/** `data` of a message as stored JSON, refused when it is past `STREAM_MESSAGE_MAX_BYTES`. */
export function checkMessageSize(topic: string, json: string): void {
	if (json.length <= STREAM_MESSAGE_MAX_BYTES / 3) return;
	const bytes = new TextEncoder().encode(json).byteLength;
	if (bytes > STREAM_MESSAGE_MAX_BYTES) {
		throw new StreamMessageTooLargeError(
			`a message on topic "${topic}" is ${bytes} bytes of JSON, past the limit of ${STREAM_MESSAGE_MAX_BYTES}; publish a key or a summary and keep the data elsewhere`,
		);
	}
}

/** Refuses a topic the class does not declare. */
export function checkTopic(streams: Record<string, unknown> | undefined, topic: string): unknown {
	if (typeof topic === 'string' && streams && Object.hasOwn(streams, topic)) return streams[topic];
	const declared = Object.keys(streams ?? {});
	throw new ValidationError(
		ErrorCode.StreamTopicUnknown,
		`step.emit: topic ${JSON.stringify(topic)} is not declared${declared.length ? `; declared topics (static streams): ${declared.join(', ')}` : ' (the class declares no static streams)'}`,
	);
}

/**
 * The instance's publishing rate: a token bucket of `STREAM_MESSAGE_BURST`
 * refilled at `STREAM_MESSAGES_PER_SECOND`. It lives with the engine (in
 * memory): after an eviction the bucket starts full, which only ever allows
 * a burst more, never a duplicate (a refused message was never recorded).
 */
export class StreamRate {
	private tokens = STREAM_MESSAGE_BURST;
	private at: number | undefined;

	/** Takes one message at `now`, or throws `STREAM_RATE_LIMITED`. */
	take(now: number, topic: string): void {
		if (this.at !== undefined) this.tokens = Math.min(STREAM_MESSAGE_BURST, this.tokens + ((now - this.at) * STREAM_MESSAGES_PER_SECOND) / 1000);
		this.at = now;
		if (this.tokens < 1) {
			throw new StreamRateLimitedError(
				`step.emit on topic "${topic}": this instance publishes at most ${STREAM_MESSAGES_PER_SECOND} messages a second (bursts of ${STREAM_MESSAGE_BURST}); nothing was published. Publish less often (say, every 1% of progress), or catch the error and skip the message`,
			);
		}
		this.tokens -= 1;
	}
}
