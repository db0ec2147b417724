import { z } from '@hono/zod-openapi';
import { strictRoute } from './strict-route';
import { deleteBatch, MAX_BATCH_DELETE } from '../client/delete-batch';
import type { ErrorCode } from '../engine/support/errors';
import { apiRoutes, type ApiRoutes } from './routes';
import { STATUS_BY_CODE } from './http-errors';
import { errors, json } from './openapi-responses';

export const BatchDeleteBody = z
	.object({
		ids: z.array(z.string().min(1).max(1000)).min(1).max(MAX_BATCH_DELETE).openapi({ description: `1 to ${MAX_BATCH_DELETE} instance ids.`, example: ['pay-1', 'pay-2'] }),
		terminate: z.boolean().optional().openapi({ description: 'Terminate running instances first (otherwise each is refused with 409).' }),
		archive: z.boolean().optional().openapi({ description: 'Archive each instance before its storage goes (needs the ARCHIVE bucket).' }),
	})
	.strict()
	.openapi('DeleteWorkflowBatch');

const BatchDeleteItemSchema = z
	.object({
		result: z.enum(['deleted', 'refused']),
		status: z.number().int().openapi({ description: 'The HTTP status a single DELETE /workflows/{id} would have answered: 200 or the error status.' }),
		id: z.string(),
		error: z.object({ code: z.string(), message: z.string() }).optional(),
	})
	.openapi('WorkflowBatchDeleteItem');

export const BatchDeletedSchema = z.object({ items: z.array(BatchDeleteItemSchema) }).openapi('WorkflowBatchDeleted');

/**
 * `POST /workflows/batch-delete`: up to 100 deletes in one request, each like
 * `DELETE /workflows/:id` and answered in order (see `deleteBatch`). A POST with a
 * body rather than a DELETE with one: proxies and HTTP clients may drop a DELETE's
 * body, and it mirrors `POST /workflows/batch`. A malformed batch is a 400 and
 * deletes nothing; one refused id leaves the others alone.
 */
export function batchDeleteRoutes(): ApiRoutes {
	const app = apiRoutes();
	app.openapi(
		strictRoute({
			method: 'post',
			path: '/workflows/batch-delete',
			summary: `Delete up to ${MAX_BATCH_DELETE} instances by id, answered per id`,
			request: { body: { required: true, content: { 'application/json': { schema: BatchDeleteBody } } } },
			responses: { 200: json(BatchDeletedSchema, 'One outcome per id, in order'), ...errors(400, 401, 413, 415) },
		}),
		async (c) => {
			const { ids, terminate, archive } = c.req.valid('json');
			const outcomes = await deleteBatch(c.env, ids, { ...(terminate !== undefined ? { terminate } : {}), ...(archive !== undefined ? { archive } : {}) });
			return c.json(
				{
					items: outcomes.map((outcome) =>
						outcome.result === 'refused'
							? { result: outcome.result, status: STATUS_BY_CODE[outcome.error.code as ErrorCode] ?? 500, id: outcome.id, error: { code: outcome.error.code, message: outcome.error.message } }
							: { result: outcome.result, status: 200, id: outcome.id },
					),
				},
				200,
			);
		},
	);
	return app;
}
