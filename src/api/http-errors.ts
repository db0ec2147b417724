import { logFormOf, printLog } from '../engine/support/engine-log';
import { describeThrown } from '../engine/support/thrown-value';
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ErrorCode, ShardflowError } from '../engine/support/errors';

/**
 * The one map from engine error codes to HTTP statuses. Total on purpose: a
 * new code does not compile until it has a status here.
 */
export const STATUS_BY_CODE: Record<ErrorCode, ContentfulStatusCode> = {
	[ErrorCode.InvalidId]: 400,
	[ErrorCode.ReservedId]: 400,
	[ErrorCode.UnknownType]: 400,
	[ErrorCode.TypeMismatch]: 409,
	[ErrorCode.InvalidPayload]: 400,
	[ErrorCode.UnknownEvent]: 400,
	[ErrorCode.InvalidEventPayload]: 400,
	[ErrorCode.NotFound]: 404,
	[ErrorCode.InvalidState]: 409,
	[ErrorCode.TooLarge]: 413,
	[ErrorCode.NotSerializable]: 400,
	[ErrorCode.InvalidDuration]: 400,
	[ErrorCode.InvalidOptions]: 400,
	[ErrorCode.WrongRole]: 400,
	[ErrorCode.InvalidCursor]: 400,
	[ErrorCode.InvalidQuery]: 400,
	[ErrorCode.InvalidRequest]: 400,
	[ErrorCode.InvalidSearchAttributes]: 400,
	// Raised inside a running workflow; reaching HTTP would be a bug, so they are not a 4xx.
	[ErrorCode.Determinism]: 500,
	// The deployment's own registry is wrong (src/engine/definition/registry.ts): no request can fix it.
	[ErrorCode.InvalidRegistry]: 500,
	// The deployment's wrangler.jsonc lacks the binding or its SQLite class: no request can fix it either.
	[ErrorCode.Misconfigured]: 500,
	// Stored on a diverged instance, never thrown to a caller; 409 if it ever is.
	[ErrorCode.Diverged]: 409,
	[ErrorCode.StepFailed]: 500,
	[ErrorCode.StepTimeout]: 500,
	[ErrorCode.DelayFunctionFailed]: 500,
	[ErrorCode.EventTimeout]: 500,
	[ErrorCode.NonRetryable]: 500,
	[ErrorCode.PayloadMismatch]: 409,
	[ErrorCode.EventBufferFull]: 429,
	[ErrorCode.IdempotencyKeyReused]: 422,
	[ErrorCode.InvalidIdempotencyKey]: 400,
	[ErrorCode.ArchiveNotConfigured]: 400,
	[ErrorCode.WebhookInvalid]: 403,
	[ErrorCode.WebhookNotFound]: 404,
	[ErrorCode.WebhookUsed]: 409,
	[ErrorCode.WebhookExpired]: 410,
	// Only ever a workflow's failure (its status and history), never the answer to a request.
	[ErrorCode.StepLimitExceeded]: 500,
	[ErrorCode.HistoryLimitExceeded]: 500,
	[ErrorCode.UnknownStep]: 400,
	// Raised inside a parent workflow by step.invoke; reaching HTTP would be a bug.
	[ErrorCode.ChildWorkflowFailed]: 500,
	// Thrown into run() by step.emit (a workflow can catch them); over HTTP only when a route checks a message.
	[ErrorCode.StreamTopicUnknown]: 400,
	[ErrorCode.StreamMessageInvalid]: 400,
	[ErrorCode.StreamMessageTooLarge]: 413,
	[ErrorCode.StreamRateLimited]: 429,
	[ErrorCode.StreamSubscribersFull]: 429,
	[ErrorCode.GroupMismatch]: 400,
	[ErrorCode.InvalidGroup]: 400,
	// The request is right; the group is not taking creates yet (a deploy away): retried once it is, it succeeds.
	[ErrorCode.GroupNotDeployed]: 503,
	[ErrorCode.CrossGroup]: 400,
	// An object reached through another jurisdiction than its name says: the caller routes without groups (an old client).
	[ErrorCode.WrongJurisdiction]: 421,
	[ErrorCode.Internal]: 500,
};

/** An HTTP-level refusal that carries its own code (auth, content type, body size, routing). */
export class ApiError extends HTTPException {
	constructor(
		status: ContentfulStatusCode,
		readonly code: string,
		message: string,
	) {
		super(status, { message });
	}
}

export function errorJson(c: Context, status: ContentfulStatusCode, code: string, message: string) {
	return c.json({ error: { code, message } }, status);
}

/** Requests whose JSON body failed to parse (see `noteJsonParseFailures`). */
const malformedJson = new WeakSet<Request>();

/**
 * Marks the request when its JSON body fails to parse, whoever parses it (a route's
 * validator answers that with a plain 400 `HTTPException`), so `handleError` can classify
 * the failure as MALFORMED_JSON by what happened rather than by its message.
 */
export function noteJsonParseFailures(c: Context): void {
	const request = c.req;
	const parse = request.json.bind(request);
	request.json = async <T>() => {
		try {
			return (await parse()) as T;
		} catch (error) {
			malformedJson.add(request.raw);
			throw error;
		}
	};
}

/** `onError`: typed errors become `{error: {code, message}}`; nothing else leaks a stack or message. */
export function handleError(error: unknown, c: Context) {
	if (error instanceof ShardflowError) {
		return errorJson(c, STATUS_BY_CODE[error.code] ?? 500, error.code, error.message);
	}
	if (error instanceof ApiError) return errorJson(c, error.status as ContentfulStatusCode, error.code, error.message);
	if (error instanceof HTTPException) {
		if (error.res) return error.res;
		const status = error.status as ContentfulStatusCode;
		const code = status === 400 && malformedJson.has(c.req.raw) ? 'MALFORMED_JSON' : status === 413 ? 'TOO_LARGE' : 'BAD_REQUEST';
		return errorJson(c, status, code, error.message || 'bad request');
	}
	printLog({ severity: 'error', event: 'api.unexpected_error', method: c.req.method, path: c.req.path, error: describeThrown(error) }, logFormOf(c.env));
	return errorJson(c, 500, ErrorCode.Internal, 'internal error');
}
