import { z } from '@hono/zod-openapi';
import { IndexClient } from '../client/index-client';
import { backlogSummary } from '../client/reconcile';
import { declaredScheduleTypes, schedules } from '../client/schedule-client';
import type { Registry } from '../engine/definition/registry';
import type { ApiEnv } from './env';
import { apiRoutes, type ApiRoutes } from './routes';
import { metricFamilies, STUCK_COUNT_CAP, type TypeSnapshot } from './metrics-families';
import { PROMETHEUS_CONTENT_TYPE, prometheusText } from './prometheus-text';
import { strictRoute } from './strict-route';
import { errors } from './openapi-responses';

/**
 * `GET /metrics`: every type's run counts and durations, delivery backlog, stuck instances
 * and schedule health in the Prometheus text format, for teams that scrape (docs/operations.md
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
			const index = new IndexClient(c.env, registry);
			const scheduled = new Set(declaredScheduleTypes(registry));
			const snapshots = await Promise.all(registry.types().map((type) => snapshot(c.env, registry, index, type, at, scheduled.has(type))));
			c.header('cache-control', 'no-store');
			return c.text(prometheusText(metricFamilies(at, snapshots)), 200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
		},
	);
	return app;
}

async function snapshot(env: ApiEnv, registry: Registry, index: IndexClient, type: string, at: number, scheduled: boolean): Promise<TypeSnapshot> {
	const { stuckAfter } = registry.get(type);
	// Past the threshold since the last status change: the entries (status, updated_at) index answers, reading only those.
	const stuckCount = async (status: 'running' | 'waiting'): Promise<number | null> => {
		const threshold = stuckAfter[status];
		if (threshold === null) return null;
		const page = await index.list({ type, status: [status], updatedBefore: at - threshold, order: 'updatedAt', limit: STUCK_COUNT_CAP });
		return page.items.length;
	};
	const [shards, backlog, running, waiting, schedule] = await Promise.all([
		index.shardMetrics(type, at),
		backlogSummary(env, type),
		stuckCount('running'),
		stuckCount('waiting'),
		scheduled ? schedules.wake(env, type) : undefined,
	]);
	return { type, shards, backlog, stuckAfter, stuck: { running, waiting }, ...(schedule ? { schedule } : {}) };
}
