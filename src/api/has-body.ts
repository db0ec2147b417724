import type { Context } from 'hono';

/** True when the request carries a body (an empty one, `content-length: 0`, counts as none). */
export function hasBody(c: Context): boolean {
	return c.req.header('content-length') !== '0' && c.req.raw.body !== null;
}
