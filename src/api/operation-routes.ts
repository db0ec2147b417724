import { createRoute } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { callOperation } from '../client/instance-client';
import type { Registry } from '../engine/definition/registry';
import { httpBindings, type HttpBinding, type HttpRequestView } from '../operations/http';
import { operations, type OperationName } from '../operations/table';
import type { ApiEnv } from './env';
import { apiRoutes, type ApiRoutes } from './routes';
import { hasBody } from './has-body';
import { errors, json } from './openapi-responses';

/**
 * One route per operation that has an HTTP binding (`src/operations/http.ts`), in table order:
 * its schemas validate the request and document it in /openapi.json, its
 * `input` maps the request to the operation's input, `reply` maps the output
 * to the response. Errors go to the app's `onError` like every other.
 */
export function operationRoutes(registry: Registry): ApiRoutes {
	const app = apiRoutes();
	for (const name of Object.keys(operations) as OperationName[]) {
		const http = httpBindings[name] as HttpBinding<any, any> | undefined;
		if (!http) continue;
		const { params, query, headers, body } = http.request ?? {};
		const route = createRoute({
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
		// The route's types are the table's; the handler is generic over every entry.
		app.openapi(route as any, async (c: Context<{ Bindings: ApiEnv }>) => {
			const valid = (target: string) => (c.req.valid as (target: string) => unknown)(target);
			const request: HttpRequestView = {
				param: params ? valid('param') : {},
				query: query ? valid('query') : {},
				json: body ? valid('json') : undefined,
				...(http.readsRawJson ? { rawJson: await c.req.json() } : {}),
				hasBody: hasBody(c),
				header: (key) => c.req.header(key),
			};
			const input = http.input(request, registry);
			const output = await callOperation(c.env, name, input);
			const reply = http.reply(output, input);
			return c.json(reply.body, reply.status as ContentfulStatusCode);
		});
	}
	return app;
}
