import { createRoute, type RouteConfig } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { refuseParamsOtherThan } from './query-params';

/**
 * `createRoute` for a route that refuses a query parameter it does not declare (or one given
 * twice) with `400 INVALID_QUERY` before anything runs. Ignored, it would answer a question
 * other than the one asked: `POST /workflows/batch-delete?archive=true` deleted without the
 * archive its caller asked for, as `DELETE /workflows/:id?archive=true` would have written.
 * The listing and the streams check their own parameters (attribute conditions, `Last-Event-ID`);
 * webhook URLs take whatever their sender appends.
 */
export function strictRoute<R extends RouteConfig>(config: R): R {
	const query = config.request?.query as { shape?: Record<string, unknown> } | undefined;
	const known = Object.keys(query?.shape ?? {});
	const what = `${config.method.toUpperCase()} ${config.path}`;
	const refuse: MiddlewareHandler = async (c, next) => {
		refuseParamsOtherThan(c.req.queries(), known, { once: true, what });
		await next();
	};
	const middleware = config.middleware === undefined ? [refuse] : [refuse, ...(Array.isArray(config.middleware) ? config.middleware : [config.middleware])];
	return createRoute({ ...config, middleware }) as R;
}
