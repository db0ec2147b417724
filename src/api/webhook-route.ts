import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import { callOperation } from '../client/instance-client';
import { webhookKey } from '../client/webhook-key';
import { ErrorCode } from '../engine/support/errors';
import { MAX_JSON_BYTES } from '../engine/support/json';
import { decodeWebhookToken } from '../engine/webhooks/webhook';
import type { ApiEnv } from './env';
import { apiRoutes, type ApiRoutes } from './routes';
import { errorJson } from './http-errors';
import { limitBody } from './body-limits';
import { errors, json } from './openapi-responses';

const TokenParam = z.object({ token: z.string().max(1200).openapi({ param: { name: 'token', in: 'path' } }) });
const ReceivedSchema = z.object({ received: z.literal(true) }).openapi('WebhookReceived');

/**
 * `POST /webhooks/{token}`: the URL `step.webhook` hands out. Registered ahead of
 * the API's auth on purpose: the caller is an outside system (a payment provider,
 * an approval link) that holds no API token; the token in the URL is the
 * credential, signed and single-use (engine/webhooks/webhook.ts). The body is the wait's
 * value: JSON (an empty body is null), at most the size of an event payload.
 */
export function webhookRoutes(): ApiRoutes {
	const app = apiRoutes();
	app.post(
		'/webhooks/:token',
		limitBody(MAX_JSON_BYTES, (c) => errorJson(c, 413, ErrorCode.TooLarge, `webhook bodies are limited to ${MAX_JSON_BYTES} bytes, like event payloads`)),
		async (c) => {
			// Precedence (docs/writing-workflows.md "Webhook waits"): the size limit first (before the body is read), then the
			// token's signature (403), then the URL's own state in the instance (404, 409, 410), and the
			// body's JSON last: the instance parses it only once the URL is known to work.
			const target = await decodeWebhookToken(await webhookKey(c.env), c.req.param('token'));
			await callOperation(c.env, 'completeWebhook', { id: target.id, target, bodyText: await c.req.text() });
			return c.json({ received: true as const }, 200);
		},
	);
	return app;
}

/**
 * The route's entry in the OpenAPI document, registered after the other routes
 * (the handler itself must come before the auth middleware), so the document
 * lists it last and keeps the other components in their order.
 */
export function documentWebhookRoute(app: OpenAPIHono<{ Bindings: ApiEnv }>): void {
	app.openAPIRegistry.registerPath(
		createRoute({
			method: 'post',
			path: '/webhooks/{token}',
			summary: 'Complete a step.webhook wait with this JSON body: once, without the API token (the signed URL is the credential)',
			security: [],
			request: { params: TokenParam, body: { required: false, content: { 'application/json': { schema: z.unknown() } } } },
			responses: { 200: json(ReceivedSchema, 'Accepted: the waiting step gets the body'), ...errors(400, 403, 404, 409, 410, 413) },
		}),
	);
}
