import { z } from '@hono/zod-openapi';
import { strictRoute } from './strict-route';
import { IndexClient } from '../client/index-client';
import { backlogSummary } from '../client/reconcile';
import type { Registry } from '../engine/definition/registry';
import { apiRoutes, type ApiRoutes } from './routes';
import { errors, json } from './openapi-responses';
import { GroupParam } from './schemas';
import { groupScoped } from '../client/group-scope';

const Counts = {
	started: z.number().int().openapi({ description: 'Runs whose instance was created in the window.' }),
	completed: z.number().int(),
	errored: z.number().int(),
	terminated: z.number().int(),
};

const WindowSchema = z.object({
	...Counts,
	durationMs: z
		.object({ p50: z.number().nullable(), p90: z.number().nullable(), p99: z.number().nullable(), runs: z.number().int() })
		.openapi({ description: 'Run durations, creation to completed or errored, of the runs that finished in the window (within ~5 %); null without runs.' }),
});

export const TypeMetricsSchema = z
	.object({
		type: z.string(),
		at: z.number().int().openapi({ description: 'When the numbers were read (ms since the epoch).' }),
		perMinute: z.array(z.object({ minute: z.number().int().openapi({ description: 'floor(ms / 60000)' }), ...Counts })).openapi({ description: 'The last 60 minutes, oldest first; the last one is the current, partial minute.' }),
		hour: WindowSchema,
		day: WindowSchema,
		backlog: z.object({ pending: z.number().int(), oldestAgeMs: z.number().int().nullable() }),
	})
	.openapi('WorkflowTypeMetrics');

/**
 * `GET /types/{type}/metrics`: runs started, completed, errored and terminated per minute, and
 * run duration percentiles over the last hour and day, from the counters the index shards keep
 * as entries land (engine/index/run-metrics.ts), plus the delivery backlog. Its cost does not grow
 * with the number of instances.
 */
export function typeMetricsRoutes(registry: Registry, now: () => number): ApiRoutes {
	const app = apiRoutes();
	app.openapi(
		strictRoute({
			method: 'get',
			path: '/types/{type}/metrics',
			summary: "A type's runs per minute and run duration percentiles (last hour and day), and its delivery backlog",
			request: { params: z.object({ type: z.string().max(64).openapi({ param: { name: 'type', in: 'path' }, example: 'payment' }) }), query: z.object({ group: GroupParam }) },
			responses: { 200: json(TypeMetricsSchema, 'Metrics'), ...errors(400, 401) },
		}),
		async (c) => {
			const { type } = registry.get(c.req.valid('param').type);
			const at = now();
			const group = c.req.valid('query').group;
			const index = new IndexClient(c.env, registry, group !== undefined ? { group } : {});
			const [metrics, backlog] = await Promise.all([index.metrics(type, at), backlogSummary(groupScoped(c.env, index.group.place), type)]);
			return c.json({ ...metrics, backlog: { pending: backlog.pending, oldestAgeMs: backlog.oldestSince === null ? null : Math.max(0, at - backlog.oldestSince) } }, 200);
		},
	);
	return app;
}
