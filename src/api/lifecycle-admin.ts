import { z } from '@hono/zod-openapi';
import { groupEnv } from '../client/group-scope';
import { strictRoute } from './strict-route';
import { purge } from '../client/purge';
import type { Registry } from '../engine/definition/registry';
import { FINISHED_STATUSES } from '../engine/support/statuses';
import { apiRoutes, type ApiRoutes } from './routes';
import { errors, json } from './openapi-responses';

/** Admin routes of the data lifecycle: deleting many instances by filter. */

const epochMs = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const PurgeBody = z
	.object({
		status: z
			.union([z.enum(FINISHED_STATUSES as unknown as ['completed', 'errored', 'terminated']), z.array(z.enum(FINISHED_STATUSES as unknown as ['completed', 'errored', 'terminated'])).min(1).max(3)])
			.openapi({ description: 'A finished status, or several.', example: ['completed', 'errored'] }),
		createdBefore: epochMs.optional().openapi({ description: 'Instances created before this time (ms since the epoch).' }),
		updatedBefore: epochMs.optional().openapi({ description: 'Instances last changed before this time. Give this, createdBefore or both.' }),
		archive: z.boolean().optional().openapi({ description: 'Write each instance to the archive bucket before deleting it.' }),
		cursor: z.string().max(600).nullable().optional(),
		batchSize: z.number().int().min(1).max(1000).optional(),
		group: z.string().max(32).optional().openapi({ description: "The group whose instances to purge (its index walked, its archive bucket used) (docs/residency.md); default: the default group.", example: 'eu' }),
	})
	.refine((body) => body.createdBefore !== undefined || body.updatedBefore !== undefined, { message: 'give createdBefore or updatedBefore (or both)' })
	.openapi('PurgeRequest');

export const PurgeSchema = z
	.object({
		type: z.string(),
		shardsDone: z.number().int(),
		totalShards: z.number().int(),
		scanned: z.number().int(),
		matched: z.number().int(),
		deleted: z.number().int(),
		skipped: z.number().int(),
		failed: z.number().int(),
		cursor: z.string().nullable(),
		done: z.boolean(),
		message: z.string(),
	})
	.openapi('PurgeProgress');

export function lifecycleAdminRoutes(registry: Registry): ApiRoutes {
	const app = apiRoutes();
	app.openapi(
		strictRoute({
			method: 'post',
			path: '/admin/types/{type}/purge',
			summary: 'Delete the finished instances of a type that match a filter (one resumable batch per call)',
			request: {
				params: z.object({ type: z.string().max(64).openapi({ param: { name: 'type', in: 'path' } }) }),
				body: { required: true, content: { 'application/json': { schema: PurgeBody } } },
			},
			responses: { 200: json(PurgeSchema, 'Progress'), ...errors(400, 401) },
		}),
		async (c) => {
			const body = c.req.valid('json');
			const progress = await purge(groupEnv(c.env, registry, body.group), registry, c.req.valid('param').type, {
				status: Array.isArray(body.status) ? body.status : [body.status],
				...(body.createdBefore !== undefined ? { createdBefore: body.createdBefore } : {}),
				...(body.updatedBefore !== undefined ? { updatedBefore: body.updatedBefore } : {}),
				...(body.archive ? { archive: true } : {}),
				...(body.cursor !== undefined ? { cursor: body.cursor } : {}),
				...(body.batchSize !== undefined ? { batchSize: body.batchSize } : {}),
			});
			return c.json(progress, 200);
		},
	);
	return app;
}
