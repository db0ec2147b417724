import type { Context, MiddlewareHandler } from 'hono';
import { timingSafeEqual } from 'hono/utils/buffer';
import type { ApiEnv } from './env';
import { ApiError } from './http-errors';
import { countFailedCredential, refuseIfBlocked } from './failed-credentials';

/**
/** Whether a deployment serves data: with a token, openly (development, or ALLOW_UNAUTHENTICATED on purpose), or not at all. */
export function authMode(env: ApiEnv): 'token' | 'open' | 'unconfigured' {
	if (env.API_TOKEN) return 'token';
	if (env.SHARDFLOW_ENV === 'development' || env.ALLOW_UNAUTHENTICATED === 'true') return 'open';
	return 'unconfigured';
}

/**
 * What a 403 `AUTH_NOT_CONFIGURED` says (the API and the dashboard alike): the production options,
 * and the local one, since `wrangler dev` of a Worker that mounts the API answers it too
 * until its `.dev.vars` says development (`npm run dev` of the starter and this repository set it).
 */
export function authNotConfigured(openPurpose: string): string {
	return (
		`this deployment has no API_TOKEN: set one with \`wrangler secret put API_TOKEN\`, or set ALLOW_UNAUTHENTICATED=true to ${openPurpose}; ` +
		'locally under `wrangler dev`, put SHARDFLOW_ENV=development in .dev.vars to serve without a token'
	);
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
		await checkBearer(c, token);
	} else if (c.env.SHARDFLOW_ENV !== 'development' && c.env.ALLOW_UNAUTHENTICATED !== 'true') {
		throw new ApiError(403, 'AUTH_NOT_CONFIGURED', authNotConfigured('serve without authentication on purpose'));
	}
	await next();
};

/**
 * The OpenAPI document's check: the token when one is set; served without one
 * otherwise, even in production, since it describes the routes and holds no
 * instance, payload or registered type. It runs on the document's route itself
 * (registered ahead of `requireAuth`), so it holds wherever the app is mounted.
 */
export const requireTokenIfSet: MiddlewareHandler<{ Bindings: ApiEnv }> = async (c, next) => {
	if (c.env.API_TOKEN) await checkBearer(c, c.env.API_TOKEN);
	await next();
};

async function checkBearer(c: Context<{ Bindings: ApiEnv }>, token: string): Promise<void> {
	refuseIfBlocked(c);
	const header = c.req.header('authorization');
	const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
	const readOnly = c.env.API_TOKEN_READONLY;
	// The read-only token (for monitoring and read-only dashboards) reads; it changes nothing.
	if (match && readOnly && (await timingSafeEqual(readOnly, match[1]!))) {
		if (c.req.method === 'GET' || c.req.method === 'HEAD') return;
		throw new ApiError(403, 'READ_ONLY_TOKEN', `API_TOKEN_READONLY reads only: ${c.req.method} needs API_TOKEN`);
	}
	if (!match || !(await timingSafeEqual(token, match[1]!))) {
		// A credential that was sent and is wrong is a guess: too many from one address are refused for a while.
		if (header !== undefined) await countFailedCredential(c);
		c.header('WWW-Authenticate', 'Bearer realm="shardflow"');
		throw new ApiError(401, 'UNAUTHORIZED', 'send Authorization: Bearer <API_TOKEN>');
	}
}
