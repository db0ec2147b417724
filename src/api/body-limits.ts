import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { ErrorCode } from '../engine/errors';
import { MAX_JSON_BYTES } from '../engine/json';
import { errorJson } from './http-errors';

/** Room for the envelope around a 1 MiB payload: the largest body any API route or the dashboard's proxy reads. */
export const MAX_BODY_BYTES = MAX_JSON_BYTES + 64 * 1024;

/** The dashboard's sign-in form holds a token and a return path: a few KiB is plenty. */
export const LOGIN_BODY_BYTES = 8 * 1024;

/**
 * Refuses a body over `maxSize` with 413 before it is read: a declared
 * `content-length` over the limit is answered at once, and a body without one
 * is counted as it streams and cut off at the limit. Every route that reads a
 * body sits behind one, so no request can make an isolate (128 MB in
 * production, shared by every object in it) hold more than this.
 */
export function limitBody(maxSize: number, refuse?: (c: Context, message: string) => Response | Promise<Response>): MiddlewareHandler {
	const message = `request bodies here are limited to ${maxSize} bytes`;
	return bodyLimit({ maxSize, onError: (c) => (refuse ? refuse(c, message) : errorJson(c, 413, ErrorCode.TooLarge, message)) });
}
