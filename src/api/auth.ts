import type { MiddlewareHandler } from 'hono';
import { timingSafeEqual } from 'hono/utils/buffer';
import type { ApiEnv } from './app';
import { ApiError } from './http-errors';

/**
 * Served without a token even when none is configured: the OpenAPI document
 * describes the routes and holds no instance, payload or registered type.
 */
const OPEN_WITHOUT_TOKEN = new Set(['/openapi.json']);

/** Whether a deployment serves data: with a token, openly (development, or ALLOW_UNAUTHENTICATED on purpose), or not at all. */
export function authMode(env: ApiEnv): 'token' | 'open' | 'unconfigured' {
	if (env.API_TOKEN) return 'token';
	if (env.SHARDFLOW_ENV === 'development' || env.ALLOW_UNAUTHENTICATED === 'true') return 'open';
	return 'unconfigured';
}

/**
 * With `API_TOKEN` set, every route needs `Authorization: Bearer <token>`
 * (compared in constant time). Without it, nothing that reveals or changes
 * data is served (reads included: payloads and outputs are data) unless in
 * development or when `ALLOW_UNAUTHENTICATED=true` says so on purpose.
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
	} else if (
		c.env.SHARDFLOW_ENV !== 'development' &&
		c.env.ALLOW_UNAUTHENTICATED !== 'true' &&
		!((c.req.method === 'GET' || c.req.method === 'HEAD') && OPEN_WITHOUT_TOKEN.has(c.req.path))
	) {
		throw new ApiError(
			403,
			'AUTH_NOT_CONFIGURED',
			'this deployment has no API_TOKEN: set one with `wrangler secret put API_TOKEN`, or set ALLOW_UNAUTHENTICATED=true to serve without authentication on purpose',
		);
	}
	await next();
};
