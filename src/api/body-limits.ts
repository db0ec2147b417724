import type { Context, MiddlewareHandler } from 'hono';
import { ErrorCode } from '../engine/support/errors';
import { MAX_JSON_BYTES } from '../engine/support/json';
import { errorJson } from './http-errors';

/** Room for the envelope around a 1 MiB payload: the largest body any API route or the dashboard's proxy reads. */
export const MAX_BODY_BYTES = MAX_JSON_BYTES + 64 * 1024;

/** The dashboard's sign-in form holds a token and a return path: a few KiB is plenty. */
export const LOGIN_BODY_BYTES = 8 * 1024;

/**
 * Refuses a body over `maxSize` with 413 before it is read: a declared
 * `content-length` over the limit is answered at once, and a body without one
 * is counted as it streams and, past the limit, read to its end without being
 * kept (an answer sent while a client still uploads reaches it as a dropped
 * connection, not as the 413), up to `DISCARD_BYTES`. Every route that
 * reads a body sits behind one, so no request can make an isolate (128 MB in
 * production, shared by every object in it) hold more than this. Hono's
 * `bodyLimit` does the same but leaves an over-long stream uncancelled.
 */
export function limitBody(maxSize: number, refuse?: (c: Context, message: string) => Response | Promise<Response>): MiddlewareHandler {
	const message = `request bodies here are limited to ${maxSize} bytes`;
	const tooLarge = (c: Context) => (refuse ? refuse(c, message) : errorJson(c, 413, ErrorCode.TooLarge, message));
	return async (c, next) => {
		const body = c.req.raw.body;
		if (!body) return next();
		const declared = c.req.header('content-length');
		if (declared !== undefined && !c.req.header('transfer-encoding')) return Number(declared) > maxSize ? tooLarge(c) : next();
		const reader = body.getReader();
		const chunks: Uint8Array[] = [];
		let size = 0;
		for (;;) {
			const { done, value } = await reader.read();
			if (done) break;
			size += value.byteLength;
			if (size > maxSize) {
				await discardRest(reader);
				return tooLarge(c);
			}
			chunks.push(value);
		}
		const buffer = new Uint8Array(size);
		let offset = 0;
		for (const chunk of chunks) buffer.set(chunk, (offset += chunk.byteLength) - chunk.byteLength);
		c.req.raw = new Request(c.req.raw, { body: buffer });
		return next();
	};
}

/** The most of an over-long streamed body read (and thrown away) so the client hears its 413: Cloudflare's own largest request body. */
const DISCARD_BYTES = 100 * 1024 * 1024;

async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
	let discarded = 0;
	for (;;) {
		const { done, value } = await reader.read();
		if (done) return;
		discarded += value.byteLength;
		if (discarded > DISCARD_BYTES) {
			await reader.cancel('request body over the limit').catch(() => {});
			return;
		}
	}
}
