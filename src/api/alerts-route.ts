import { z } from '@hono/zod-openapi';
import type { Registry } from '../engine/definition/registry';
import { alertsOf } from './alerts';
import { errors, json } from './openapi-responses';
import { GroupParam } from './schemas';
import { apiRoutes, type ApiRoutes } from './routes';
import { strictRoute } from './strict-route';
import { typeSnapshots } from './type-snapshot';

const AlertSchema = z.object({
	type: z.string(),
	kind: z.enum(['index_backlog', 'stuck', 'failing_passes', 'schedule_missed_ticks', 'schedule_overdue']),
	status: z.enum(['running', 'waiting']).optional().openapi({ description: '`stuck` only: the status the instances are stuck in.' }),
	count: z.number().int().openapi({ description: 'How many instances (for a schedule: ticks) it is about.' }),
	message: z.string(),
	since: z.number().int().optional().openapi({ description: 'Since when it holds, where known (ms since the epoch).' }),
	list: z
		.object({ type: z.string(), status: z.string(), updatedBefore: z.number().int(), order: z.literal('updated'), group: z.string().optional().openapi({ description: 'The group asked for (`GET /alerts?group=`): its instances are listed with `group=`.' }) })
		.optional()
		.openapi({ description: 'The GET /workflows query that lists the instances, where the index can answer it.' }),
	ids: z.array(z.string()).optional().openapi({ description: 'Instances to open first, where no list can find them (up to 5).' }),
});

/**
 * `GET /alerts`: what `GET /metrics` would make the example alert rules fire on (docs/operations.md
 * "Metrics and alerts"), as JSON with a sentence and where to look: for a team without a scraper,
 * and for the dashboard's overview. It reads what a scrape reads (and wakes the schedules as it does).
 * `?group=`: another group's alerts, from its own shards and backlog objects (docs/residency.md).
 */
export function alertsRoutes(registry: Registry, now: () => number): ApiRoutes {
	const app = apiRoutes();
	app.openapi(
		strictRoute({
			method: 'get',
			path: '/alerts',
			summary: 'Failing passes, stuck instances, the index backlog and missed schedule ticks of every type that has any, now',
			request: { query: z.object({ group: GroupParam }) },
			responses: { 200: json(z.object({ at: z.number().int(), alerts: z.array(AlertSchema) }).openapi('Alerts'), 'The alerts that hold now (an empty list when all is well)'), ...errors(400, 401) },
		}),
		async (c) => {
			const at = now();
			const { group } = c.req.valid('query');
			const alerts = alertsOf(at, await typeSnapshots(c.env, registry, at, group), group);
			c.header('cache-control', 'no-store');
			return c.json({ at, alerts }, 200);
		},
	);
	return app;
}
