import { z } from '@hono/zod-openapi';
import { groupEnv } from '../client/group-scope';
import { strictRoute } from './strict-route';
import { rebalance } from '../client/rebalance';
import { reconcile } from '../client/reconcile';
import type { Registry } from '../engine/definition/registry';
import { apiRoutes, type ApiRoutes } from './routes';
import { errors, json } from './openapi-responses';
import { RebalanceBody, RebalanceSchema } from './schemas';

/** Admin routes that repair the index from the instances, the source of truth (seed 002's "rebuild the truth"). */

export const ReconcileBody = z
	.object({
		cursor: z.string().max(600).nullable().optional(),
		batchSize: z.number().int().min(1).max(1000).optional(),
		group: z.string().max(32).optional().openapi({ description: "The group whose index to walk (docs/residency.md); default: the default group.", example: 'eu' }),
	})
	.openapi('ReconcileRequest');

export const ReconcileSchema = z
	.object({
		type: z.string(),
		shardsDone: z.number().int(),
		totalShards: z.number().int(),
		scanned: z.number().int(),
		unchanged: z.number().int(),
		repaired: z.number().int(),
		removed: z.number().int(),
		ahead: z.number().int(),
		unreachable: z.number().int(),
		cursor: z.string().nullable(),
		done: z.boolean(),
		message: z.string(),
	})
	.openapi('ReconcileProgress');

export function indexAdminRoutes(registry: Registry): ApiRoutes {
	const app = apiRoutes();
	app.openapi(
		strictRoute({
			method: 'post',
			path: '/admin/types/{type}/reconcile',
			summary: "Check listed index entries against their instances and repair stale or orphaned ones (one resumable batch per call)",
			request: {
				params: z.object({ type: z.string().max(64).openapi({ param: { name: 'type', in: 'path' } }) }),
				body: { required: false, content: { 'application/json': { schema: ReconcileBody } } },
			},
			responses: { 200: json(ReconcileSchema, 'Progress'), ...errors(400, 401) },
		}),
		async (c) => {
			const body = c.req.valid('json') ?? {};
			const progress = await reconcile(groupEnv(c.env, registry, body.group), registry, c.req.valid('param').type, {
				...(body.cursor !== undefined ? { cursor: body.cursor } : {}),
				...(body.batchSize !== undefined ? { batchSize: body.batchSize } : {}),
			});
			return c.json(progress, 200);
		},
	);

	app.openapi(
		strictRoute({
			method: 'post',
			path: '/admin/types/{type}/rebalance',
			summary: 'Move index entries into their shards under the current layout (one resumable batch per call)',
			request: {
				params: z.object({ type: z.string().max(64).openapi({ param: { name: 'type', in: 'path' } }) }),
				body: { required: false, content: { 'application/json': { schema: RebalanceBody } } },
			},
			responses: { 200: json(RebalanceSchema, 'Progress'), ...errors(400, 401) },
		}),
		async (c) => {
			const body = c.req.valid('json') ?? {};
			const progress = await rebalance(groupEnv(c.env, registry, body.group), registry, c.req.valid('param').type, {
				...(body.cursor !== undefined ? { cursor: body.cursor } : {}),
				...(body.batchSize !== undefined ? { batchSize: body.batchSize } : {}),
			});
			return c.json(progress, 200);
		},
	);

	return app;
}
