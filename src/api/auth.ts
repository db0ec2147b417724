import type { MiddlewareHandler } from 'hono';
import { timingSafeEqual } from 'hono/utils/buffer';
import type { ApiEnv } from './app';
import { ApiError } from './http-errors';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * With `API_TOKEN` set, every route needs `Authorization: Bearer <token>`
 * (compared in constant time). Without it, mutating routes are served only
 * in development or when `ALLOW_UNAUTHENTICATED=true` says so on purpose.
 * (hono/bearer-auth answers a malformed header with 400 and fixed bodies; every
 * refusal here is a 401 with our JSON error, so only its comparison is reused.)
 */
export const requireAuth: MiddlewareHandler<{ Bindings: ApiEnv }> = async (c, next) => {
	const token = c.env.API_TOKEN;
	if (token) {
		const header = c.req.header('authorization') ?? '';
		const match = /^Bearer +(\S+) *$/i.exec(header);
		if (!match || !(await timingSafeEqual(token, match[1]!))) {
			c.header('WWW-Authenticate', 'Bearer realm="shardflow"');
			throw new ApiError(401, 'UNAUTHORIZED', 'send Authorization: Bearer <API_TOKEN>');
		}
	} else if (!SAFE_METHODS.has(c.req.method) && c.env.SHARDFLOW_ENV !== 'development' && c.env.ALLOW_UNAUTHENTICATED !== 'true') {
		throw new ApiError(
			403,
			'AUTH_NOT_CONFIGURED',
			'this deployment has no API_TOKEN: set one with `wrangler secret put API_TOKEN`, or set ALLOW_UNAUTHENTICATED=true to serve without authentication on purpose',
		);
	}
	await next();
};
