import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { ErrorCode } from '../engine/support/errors';
import type { ApiEnv } from './env';
import { errorJson } from './http-errors';

/** A group of the API's routes: a sub-app that `createApp` mounts with `app.route('/', ...)`. */
export type ApiRoutes = OpenAPIHono<{ Bindings: ApiEnv }>;

/** A new group of routes whose schema failures become the same JSON errors as everything else. */
export function apiRoutes(): ApiRoutes {
	return new OpenAPIHono<{ Bindings: ApiEnv }>({ defaultHook: schemaFailure });
}

type HookResult = { success: true } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] }; target?: string };

/**
 * The JSON error of a request its route's schemas refused (every route's hook; a route with a
 * hook of its own falls back on it): the first issue, named by where it is.
 */
export function schemaFailure(result: HookResult, c: Context): Response | undefined {
	if (result.success) return undefined;
	const issue = result.error.issues[0];
	const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
	const target = result.target;
	// An `{id}` in the path is an id whatever the route (a bulk job's as a workflow's): refused as INVALID_ID, as assertValidWorkflowId refuses one.
	const code = target === 'query' ? ErrorCode.InvalidQuery : target === 'param' && issue?.path[0] === 'id' ? ErrorCode.InvalidId : ErrorCode.InvalidRequest;
	return errorJson(c, 400, code, `${where}${issue?.message ?? 'invalid request'}`);
}
