import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { HttpRequestView, HttpRoute } from '../operations/http';
import type { ApiEnv } from './env';
import type { ApiRoutes } from './routes';
import { hasBody } from './has-body';
import { strictRoute } from './strict-route';
import { ErrorCode, ValidationError } from '../engine/support/errors';
import { errors, json } from './openapi-responses';

/**
 * Registers a route declared in src/operations (an operation's or a role call's binding): its
 * schemas validate the request and document it in /openapi.json; `handle` gets the validated
 * request and answers `{status, body}`. Errors go to the app's `onError` like every other.
 */
export function registerDeclaredRoute(
	app: ApiRoutes,
	http: HttpRoute,
	handle: (request: HttpRequestView, env: ApiEnv) => Promise<{ status: number; body: unknown }>,
): void {
	const { params, query, headers, body } = http.request ?? {};
	// Strict: a query parameter the declaration does not take is refused (strict-route.ts).
	const route = strictRoute({
		method: http.method,
		path: http.path,
		summary: http.summary,
		request: {
			...(params ? { params } : {}),
			...(query ? { query } : {}),
			...(headers ? { headers } : {}),
			...(body ? { body: { required: body.required, content: { 'application/json': { schema: body.schema } } } } : {}),
		},
		responses: {
			...Object.fromEntries(Object.entries(http.responses).map(([status, r]) => [status, json(r.schema, r.description)])),
			...errors(...(http.errors as ContentfulStatusCode[])),
		},
	});
	// The route's types are its declaration's; the handler is generic over every declaration.
	app.openapi(route as any, async (c: Context<{ Bindings: ApiEnv }>) => {
		// A body the route does not take is refused, not ignored: ignored, a terminate's `{"rollback": true}`
		// would answer as if it had not been asked (its query parameters, by strictRoute, likewise).
		if (!body && hasBody(c) && !(await isEmptyObject(c))) {
			const known = query ? Object.keys(query.shape) : [];
			throw new ValidationError(ErrorCode.InvalidRequest, `${http.method.toUpperCase()} ${http.path} takes no body${known.length ? `; its options are query parameters (${known.map((name) => `?${name}=`).join(', ')}${known.includes('rollback') ? ': ?rollback=true runs the rollbacks' : ''})` : ''}`);
		}
		const valid = (target: string) => (c.req.valid as (target: string) => unknown)(target);
		const request: HttpRequestView = {
			param: params ? valid('param') : {},
			query: query ? valid('query') : {},
			json: body ? valid('json') : undefined,
			...(http.readsRawJson ? { rawJson: await c.req.json() } : {}),
			hasBody: hasBody(c),
			header: (key) => c.req.header(key),
		};
		const reply = await handle(request, c.env);
		return c.json(reply.body, reply.status as ContentfulStatusCode);
	});
}

/** A body of `{}` (or whitespace) carries nothing: clients that always send one are not refused. */
async function isEmptyObject(c: Context): Promise<boolean> {
	const text = (await c.req.text()).trim();
	if (text === '' || text === '{}') return true;
	try {
		const value: unknown = JSON.parse(text);
		return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;
	} catch {
		return false;
	}
}
