import { z } from '@hono/zod-openapi';
import { strictRoute } from './strict-route';
import { instances } from '../client/instance-client';
import { wakeSchedules } from '../client/schedule-client';
import type { Registry } from '../engine/definition/registry';
import type { ScheduleInfo } from '../engine/schedule/schedule-engine';
import type { ApiEnv } from './env';
import { apiRoutes, type ApiRoutes } from './routes';
import { errors, json } from './openapi-responses';
import { ScheduleSchema } from '../operations/role-http';
import { addRoleCallRoutes } from './role-call-routes';

/** `GET /schedules` and the routes of a schedule's calls, pause and resume (`static schedule`). */
export function scheduleRoutes(registry: Registry): ApiRoutes {
	const app = apiRoutes();
	app.openapi(
		strictRoute({
			method: 'get',
			path: '/schedules',
			summary: "Each scheduled type's cron, state, next run and last runs (reading a schedule also wakes it with the deployed code)",
			responses: { 200: json(z.object({ schedules: z.array(ScheduleSchema) }), 'Schedules'), ...errors(401) },
		}),
		async (c) => {
			const list = await wakeSchedules(c.env, registry);
			return c.json({ schedules: await Promise.all(list.map((info) => withInstanceStatus(c.env, info))) }, 200);
		},
	);
	// Pause and resume: the schedule's calls declared with a route (src/operations/role-http.ts).
	addRoleCallRoutes(app, registry, 'schedule');
	return app;
}

/** The newest started run gets its instance's status now, so the list answers "did the last run work". */
async function withInstanceStatus(env: ApiEnv, info: ScheduleInfo) {
	const newest = info.lastRuns.find((run) => run.outcome === 'started');
	if (!newest?.instanceId) return info;
	const entry = await instances.currentIndexEntry(env, { id: newest.instanceId }).catch(() => null);
	const status = entry?.status ?? 'deleted';
	return { ...info, lastRuns: info.lastRuns.map((run) => (run === newest ? { ...run, instanceStatus: status } : run)) };
}
