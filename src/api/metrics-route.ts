import { z } from '@hono/zod-openapi';
import type { Registry } from '../engine/definition/registry';
import { apiRoutes, type ApiRoutes } from './routes';
import { metricFamilies } from './metrics-families';
import { typeSnapshots } from './type-snapshot';
import { PROMETHEUS_CONTENT_TYPE, prometheusText } from './prometheus-text';
import { strictRoute } from './strict-route';
import { errors } from './openapi-responses';

/**
 * `GET /metrics`: every type's run counts and durations, delivery backlog, stuck instances,
 * instances whose passes keep failing, and schedule health in the Prometheus text format, for teams that scrape (docs/operations.md
 * "Metrics and alerts"). Behind the API's auth like every read (the read-only token reads it).
 * One scrape asks each index shard of each type for its metrics and for its stuck instances,
 * each type's backlog, and each schedule: its cost grows with shards, not instances.
 */
export function metricsRoutes(registry: Registry, now: () => number): ApiRoutes {
	const app = apiRoutes();
	app.openapi(
		strictRoute({
			method: 'get',
			path: '/metrics',
			summary: "Every type's runs, run durations, delivery backlog, stuck instances and schedule health, in the Prometheus text format (for scrapers)",
			responses: {
				200: { description: 'Prometheus text exposition format 0.0.4', content: { 'text/plain': { schema: z.string() } } },
				...errors(400, 401),
			},
		}),
		async (c) => {
			const at = now();
			const snapshots = await typeSnapshots(c.env, registry, at);
			c.header('cache-control', 'no-store');
			return c.text(prometheusText(metricFamilies(at, snapshots)), 200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
		},
	);
	return app;
}
