import { z } from '@hono/zod-openapi';
import { strictRoute } from './strict-route';
import { createBatch, MAX_BATCH_CREATE } from '../client/create-batch';
import type { ErrorCode } from '../engine/support/errors';
import type { Registry } from '../engine/definition/registry';
import { keepReservedAttributeNames } from '../engine/index/search-attributes';
import { CreateBody, StatusSchema } from '../operations/schemas';
import { apiRoutes, type ApiRoutes } from './routes';
import { STATUS_BY_CODE } from './http-errors';
import { errors, json } from './openapi-responses';

export const BatchCreateBody = z
	.object({ items: z.array(CreateBody).min(1).max(MAX_BATCH_CREATE).openapi({ description: `1 to ${MAX_BATCH_CREATE} creates, each as the body of POST /workflows.` }) })
	.openapi('CreateWorkflowBatch');

const BatchItemSchema = z
	.object({
		result: z.enum(['created', 'existing', 'refused']),
		status: z.number().int().openapi({ description: 'The HTTP status a single POST /workflows would have answered: 201, 200 or the error status.' }),
		id: z.string().nullable(),
		type: z.string(),
		workflowStatus: StatusSchema.optional(),
		group: z.string().optional().openapi({ description: 'As a single create answers it: the group it lives in, when the create chose one.' }),
		groupFallback: z
			.object({ requested: z.string(), reason: z.enum(['unknown', 'undeployed']) })
			.optional()
			.openapi({ description: 'As a single create answers it: the group chosen is not declared (or not deployed, with fallback allowed), so the default group.' }),
		error: z.object({ code: z.string(), message: z.string() }).optional(),
	})
	.openapi('WorkflowBatchItem');

export const BatchCreatedSchema = z.object({ items: z.array(BatchItemSchema) }).openapi('WorkflowBatchCreated');

/**
 * `POST /workflows/batch`: up to 100 creates in one request, run concurrently
 * (bounded, see `createBatch`), each answered in order like a single create.
 * A malformed batch (not 1-100 items, an item without a type) is a 400 and
 * creates nothing; one refused item leaves the others alone.
 */
export function batchCreateRoutes(registry: Registry): ApiRoutes {
	const app = apiRoutes();
	app.openapi(
		strictRoute({
			method: 'post',
			path: '/workflows/batch',
			summary: `Start up to ${MAX_BATCH_CREATE} instances (each idempotent by id), answered per item`,
			request: { body: { required: true, content: { 'application/json': { schema: BatchCreateBody } } } },
			responses: { 200: json(BatchCreatedSchema, 'One outcome per item, in order'), ...errors(400, 401, 413, 415) },
		}),
		async (c) => {
			const valid = c.req.valid('json').items;
			const raw = ((await c.req.json()) as { items: { attributes?: unknown }[] }).items;
			const items = valid.map((item, i) => ({ ...item, attributes: keepReservedAttributeNames(item.attributes, raw[i]?.attributes) }));
			const outcomes = await createBatch(c.env, items, { checkType: (type) => void registry.get(type) });
			return c.json(
				{
					items: outcomes.map((outcome) =>
						outcome.result === 'refused'
							? { result: outcome.result, status: STATUS_BY_CODE[outcome.error.code as ErrorCode] ?? 500, id: outcome.id, type: outcome.type, error: { code: outcome.error.code, message: outcome.error.message } }
							: {
									result: outcome.result,
									status: outcome.result === 'created' ? 201 : 200,
									id: outcome.id,
									type: outcome.type,
									workflowStatus: outcome.status,
									...(outcome.group !== undefined ? { group: outcome.group } : {}),
									...(outcome.groupFallback !== undefined ? { groupFallback: outcome.groupFallback } : {}),
								},
					),
				},
				200,
			);
		},
	);
	return app;
}
