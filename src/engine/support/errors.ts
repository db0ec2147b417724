/**
 * Typed errors with stable codes. Class identity does not survive Durable
 * Object RPC, so every error crosses the boundary as `{code, message}` and is
 * rebuilt on the other side with `errorFromBody`. Match on `code`, never on
 * the message text.
 */
export const ErrorCode = {
	InvalidId: 'INVALID_ID',
	ReservedId: 'RESERVED_ID',
	UnknownType: 'UNKNOWN_TYPE',
	TypeMismatch: 'TYPE_MISMATCH',
	InvalidPayload: 'INVALID_PAYLOAD',
	UnknownEvent: 'UNKNOWN_EVENT',
	InvalidEventPayload: 'INVALID_EVENT_PAYLOAD',
	NotFound: 'NOT_FOUND',
	InvalidState: 'INVALID_STATE',
	TooLarge: 'TOO_LARGE',
	NotSerializable: 'NOT_SERIALIZABLE',
	InvalidDuration: 'INVALID_DURATION',
	InvalidOptions: 'INVALID_OPTIONS',
	Determinism: 'NON_DETERMINISTIC',
	Diverged: 'DIVERGED',
	StepFailed: 'STEP_FAILED',
	StepTimeout: 'STEP_TIMEOUT',
	DelayFunctionFailed: 'DELAY_FUNCTION_FAILED',
	EventTimeout: 'EVENT_TIMEOUT',
	NonRetryable: 'NON_RETRYABLE',
	WrongRole: 'WRONG_ROLE',
	InvalidCursor: 'INVALID_CURSOR',
	InvalidQuery: 'INVALID_QUERY',
	/** A request body the route's schema refuses, or a part of it that is not a query (a bulk operation's action or rate). */
	InvalidRequest: 'INVALID_REQUEST',
	InvalidSearchAttributes: 'INVALID_SEARCH_ATTRIBUTES',
	PayloadMismatch: 'PAYLOAD_MISMATCH',
	EventBufferFull: 'EVENT_BUFFER_FULL',
	InvalidIdempotencyKey: 'INVALID_IDEMPOTENCY_KEY',
	IdempotencyKeyReused: 'IDEMPOTENCY_KEY_REUSED',
	ArchiveNotConfigured: 'ARCHIVE_NOT_CONFIGURED',
	InvalidRegistry: 'INVALID_REGISTRY',
	/** The deployment lacks what shardflow needs: the `WORKFLOW_RUNNER` binding, or a SQLite-backed class for it. */
	Misconfigured: 'MISCONFIGURED',
	WebhookInvalid: 'WEBHOOK_INVALID',
	WebhookNotFound: 'WEBHOOK_NOT_FOUND',
	WebhookUsed: 'WEBHOOK_USED',
	WebhookExpired: 'WEBHOOK_EXPIRED',
	StepLimitExceeded: 'STEP_LIMIT_EXCEEDED',
	HistoryLimitExceeded: 'HISTORY_LIMIT_EXCEEDED',
	UnknownStep: 'UNKNOWN_STEP',
	ChildWorkflowFailed: 'CHILD_WORKFLOW_FAILED',
	/** `step.emit` on a topic the class's `static streams` does not declare. */
	StreamTopicUnknown: 'STREAM_TOPIC_UNKNOWN',
	/** `step.emit` data its topic's schema refuses, or that is not JSON. */
	StreamMessageInvalid: 'STREAM_MESSAGE_INVALID',
	/** `step.emit` data past `STREAM_MESSAGE_MAX_BYTES`. */
	StreamMessageTooLarge: 'STREAM_MESSAGE_TOO_LARGE',
	/** `step.emit` faster than the instance's message rate (engine/streams/stream.ts). */
	StreamRateLimited: 'STREAM_RATE_LIMITED',
	/** A subscription to an instance (or query) that already has its maximum of subscribers. */
	StreamSubscribersFull: 'STREAM_SUBSCRIBERS_FULL',
	/** A create's id names another group than the one its type (or the create) chooses (engine/groups/groups.ts). */
	GroupMismatch: 'GROUP_MISMATCH',
	/** A create for a group declared `deployed: false` with a jurisdiction (and no `fallback: true`): refused rather than created outside the jurisdiction. */
	GroupNotDeployed: 'GROUP_NOT_DEPLOYED',
	/** A group name that is not one, or a type's group function that threw or returned something else. */
	InvalidGroup: 'INVALID_GROUP',
	/** An operation spanning groups (a child, a bulk job, a listing), refused unless opted in per call (docs/residency.md). */
	CrossGroup: 'CROSS_GROUP',
	/** An object whose name says one jurisdiction reached through another (or none): a caller that does not route by group. */
	WrongJurisdiction: 'WRONG_JURISDICTION',
	Internal: 'INTERNAL',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** The shape every error takes across RPC and HTTP. */
export interface ErrorBody {
	code: string;
	message: string;
	name?: string;
}

/** Base class of every error the engine raises on purpose. */
export class ShardflowError extends Error {
	override name = 'ShardflowError';
	constructor(
		readonly code: ErrorCode,
		message: string,
		options?: { cause?: unknown },
	) {
		super(message, options);
	}

	toBody(): ErrorBody {
		return { code: this.code, message: this.message, name: this.name };
	}
}

/** Input that the engine refuses before storing anything. */
export class ValidationError extends ShardflowError {
	override name = 'ValidationError';
}

/**
 * A registry that cannot run: a key that differs from its class's `static
 * type`, a bad option or bad `static defaults`. `defineRegistry` does not throw
 * it (a throw at module load stops `wrangler dev` for good, fix or not); the
 * registry carries it and every use of the registry throws it (see `Registry.problem`).
 */
export class RegistryError extends ShardflowError {
	override name = 'RegistryError';
	constructor(message: string, options?: { cause?: unknown }) {
		super(ErrorCode.InvalidRegistry, message, options);
	}
}

/** A typed error with one fixed code: only its message varies. */
function codedError(name: string, code: ErrorCode) {
	return class extends ShardflowError {
		override name = name;
		constructor(message: string, options?: { cause?: unknown }) {
			super(code, message, options);
		}
	};
}

/** `step.emit` faster than the instance's message rate: nothing was published (engine/streams/stream.ts). */
export class StreamRateLimitedError extends codedError('StreamRateLimitedError', ErrorCode.StreamRateLimited) {}

/** `step.emit` data past the size limit: nothing was published. */
export class StreamMessageTooLargeError extends codedError('StreamMessageTooLargeError', ErrorCode.StreamMessageTooLarge) {}

/** A stream that already has its maximum of subscribers (engine/streams/stream.ts). */
export class StreamSubscribersFullError extends codedError('StreamSubscribersFullError', ErrorCode.StreamSubscribersFull) {}

/** The instance (or shard) does not exist. */
export class NotFoundError extends codedError('NotFoundError', ErrorCode.NotFound) {}

/** A control call that makes no sense in the instance's current status. */
export class InvalidStateError extends codedError('InvalidStateError', ErrorCode.InvalidState) {}

/** The same id already belongs to a workflow of another type. */
export class TypeMismatchError extends codedError('TypeMismatchError', ErrorCode.TypeMismatch) {}

/** The id already belongs to an instance created with another payload. */
export class PayloadMismatchError extends codedError('PayloadMismatchError', ErrorCode.PayloadMismatch) {}

/** The instance already buffers as many unconsumed events (or bytes) of that name as it may. */
export class EventBufferFullError extends codedError('EventBufferFullError', ErrorCode.EventBufferFull) {}

/** An idempotency key was sent again with another event name or payload. */
export class IdempotencyKeyReusedError extends codedError('IdempotencyKeyReusedError', ErrorCode.IdempotencyKeyReused) {}

/** A workflow broke a replay rule (for example a step name used twice). */
export class DeterminismError extends codedError('DeterminismError', ErrorCode.Determinism) {}

/**
 * A run began more steps than its type allows (registry `limits.steps`). Like a
 * DeterminismError it fails the workflow even if `run()` catches it.
 */
export class StepLimitExceededError extends codedError('StepLimitExceededError', ErrorCode.StepLimitExceeded) {}

/**
 * The instance's history reached its type's size limit (registry `limits.historyBytes`)
 * before a step began: the workflow fails even if `run()` catches this.
 */
export class HistoryLimitExceededError extends codedError('HistoryLimitExceededError', ErrorCode.HistoryLimitExceeded) {}

/**
 * The code no longer matches the instance's recorded steps (a deploy changed the
 * workflow). The instance stops with status `diverged` and runs nothing new;
 * fix the code (often with `step.patched`) and resume it, or restart it.
 */
export class DivergenceError extends codedError('DivergenceError', ErrorCode.Diverged) {}

/**
 * Throw this from a step to fail it at once, without the remaining retries.
 *
 * @example
 * await step.do('charge', async () => {
 *   if (card.expired) throw new NonRetryableError('card expired');
 * });
 */
export class NonRetryableError extends Error {
	override name = 'NonRetryableError';
	readonly code = ErrorCode.NonRetryable;
}

/**
 * `step.do` throws this once a step has failed for good. `run()` may catch it
 * to compensate; the same error is thrown again on every later replay, without
 * running the step's function again.
 */
export class StepFailedError extends ShardflowError {
	override name = 'StepFailedError';
	constructor(
		readonly stepName: string,
		readonly attempts: number,
		readonly causeName: string,
		readonly causeMessage: string,
	) {
		super(ErrorCode.StepFailed, `step "${stepName}" failed after ${attempts} attempt(s): ${causeName}: ${causeMessage}`);
	}
}

/** One attempt of a step ran past its `timeout`. */
export class StepTimeoutError extends ShardflowError {
	override name = 'StepTimeoutError';
	constructor(stepName: string, timeoutMs: number) {
		super(ErrorCode.StepTimeout, `step "${stepName}" attempt timed out after ${timeoutMs} ms`);
	}
}

/**
 * A step's retry delay function (`retries.delay: ({attempt, error}) => ...`) threw, returned
 * something that is not a duration, or did not return within 5 seconds: the step fails for
 * good, since no retry can be scheduled (as on Cloudflare).
 */
export class DelayFunctionError extends ShardflowError {
	override name = 'DelayFunctionError';
	constructor(message: string, options?: { cause?: unknown }) {
		super(ErrorCode.DelayFunctionFailed, message, options);
	}
}

/** `step.waitForEvent` throws this when its timeout passes first. */
export class EventTimeoutError extends ShardflowError {
	override name = 'EventTimeoutError';
	constructor(readonly stepName: string, readonly eventName: string) {
		super(ErrorCode.EventTimeout, `step "${stepName}" timed out waiting for event "${eventName}"`);
	}
}

/** A webhook token that was not issued by this engine (forged, altered or cut short): HTTP 403. */
export class WebhookInvalidError extends codedError('WebhookInvalidError', ErrorCode.WebhookInvalid) {}
/** A well-signed webhook token whose instance or step no longer exists (deleted, restarted): HTTP 404. */
export class WebhookNotFoundError extends codedError('WebhookNotFoundError', ErrorCode.WebhookNotFound) {}
/** The webhook was already called once: HTTP 409. */
export class WebhookUsedError extends codedError('WebhookUsedError', ErrorCode.WebhookUsed) {}
/**
 * The webhook's timeout passed (or its instance ended) before it was called: HTTP 410.
 * `hook.wait()` throws it too, so `run()` can catch it like an event timeout.
 */
export class WebhookExpiredError extends codedError('WebhookExpiredError', ErrorCode.WebhookExpired) {}
/**
 * `step.invoke` throws this when the child workflow errored or was terminated.
 * `run()` may catch it; every later replay throws the same error again.
 *
 * @example
 * try {
 *   await step.invoke('ship', ShippingWorkflow, { payload: { orderId } });
 * } catch (error) {
 *   if (error instanceof ChildWorkflowError && error.childStatus === 'terminated') return 'cancelled';
 *   throw error;
 * }
 */
export class ChildWorkflowError extends ShardflowError {
	override name = 'ChildWorkflowError';
	constructor(
		readonly childId: string,
		readonly childType: string,
		readonly childStatus: 'errored' | 'terminated',
		readonly childError: { name: string; message: string; code?: string } | null,
	) {
		super(
			ErrorCode.ChildWorkflowFailed,
			`child workflow "${childId}" (${childType}) ${childStatus}${childError ? `: ${childError.name}: ${childError.message}` : ''}`,
		);
	}
}

/**
 * The deployment lacks what shardflow needs (its `wrangler.jsonc`, not a request, is wrong): no
 * `WORKFLOW_RUNNER` Durable Object binding, or a `WorkflowRunner` class that is not SQLite-backed.
 */
export class ConfigurationError extends codedError('ConfigurationError', ErrorCode.Misconfigured) {}

/** An index-shard call reached a workflow instance, or the other way round. */
export class WrongRoleError extends codedError('WrongRoleError', ErrorCode.WrongRole) {}

/** Errors rebuilt with their own class on the client side of an RPC call (`instanceof` works). */
const classesByCode: Partial<Record<string, new (message: string) => ShardflowError>> = {
	[ErrorCode.NotFound]: NotFoundError,
	[ErrorCode.InvalidState]: InvalidStateError,
	[ErrorCode.TypeMismatch]: TypeMismatchError,
	[ErrorCode.Determinism]: DeterminismError,
	[ErrorCode.WrongRole]: WrongRoleError,
	[ErrorCode.PayloadMismatch]: PayloadMismatchError,
	[ErrorCode.EventBufferFull]: EventBufferFullError,
	[ErrorCode.IdempotencyKeyReused]: IdempotencyKeyReusedError,
	[ErrorCode.InvalidRegistry]: RegistryError,
	[ErrorCode.Misconfigured]: ConfigurationError,
	[ErrorCode.WebhookInvalid]: WebhookInvalidError,
	[ErrorCode.WebhookNotFound]: WebhookNotFoundError,
	[ErrorCode.WebhookUsed]: WebhookUsedError,
	[ErrorCode.WebhookExpired]: WebhookExpiredError,
	[ErrorCode.StepLimitExceeded]: StepLimitExceededError,
	[ErrorCode.HistoryLimitExceeded]: HistoryLimitExceededError,
	[ErrorCode.StreamRateLimited]: StreamRateLimitedError,
	[ErrorCode.StreamMessageTooLarge]: StreamMessageTooLargeError,
	[ErrorCode.StreamSubscribersFull]: StreamSubscribersFullError,
};

/** Rebuilds a typed error from its RPC/HTTP body. */
export function errorFromBody(body: ErrorBody): ShardflowError {
	const Make = classesByCode[body.code];
	if (Make) return new Make(body.message);
	const known = Object.values(ErrorCode) as string[];
	const code = (known.includes(body.code) ? body.code : ErrorCode.Internal) as ErrorCode;
	return new ValidationError(code, body.message);
}

/** Turns anything thrown into a body that is safe to send to a client. */
export function toErrorBody(error: unknown): ErrorBody {
	if (error instanceof ShardflowError) return error.toBody();
	return { code: ErrorCode.Internal, message: 'internal error' };
}

