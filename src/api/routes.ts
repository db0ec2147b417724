import { OpenAPIHono } from '@hono/zod-openapi';
import { ErrorCode } from '../engine/support/errors';
import type { ApiEnv } from './env';
import { errorJson } from './http-errors';

/** A group of the API's routes: a sub-app that `createApp` mounts with `app.route('/', ...)`. */
export type ApiRoutes = OpenAPIHono<{ Bindings: ApiEnv }>;

/** A new group of routes whose schema failures become the same JSON errors as everything else. */
export function apiRoutes(): ApiRoutes {
	return new OpenAPIHono<{ Bindings: ApiEnv }>({
		defaultHook: (result, c) => {
			if (!result.success) {
				const issue = result.error.issues[0];
				const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
				const target = (result as { target?: string }).target;
				const code = target === 'query' ? ErrorCode.InvalidQuery : ErrorCode.InvalidRequest;
				return errorJson(c, 400, code, `${where}${issue?.message ?? 'invalid request'}`);
			}
		},
	});
}
