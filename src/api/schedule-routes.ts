import { createRoute, z } from '@hono/zod-openapi';
import { instances } from '../client/instance-client';
import { schedules, wakeSchedules } from '../client/schedule-client';
import type { Registry } from '../engine/definition/registry';
import type { ScheduleInfo } from '../engine/schedule/schedule-engine';
import type { ApiEnv } from './env';
import { apiRoutes, type ApiRoutes } from './routes';
import { errors, json } from './openapi-responses';

const ScheduleRunSchema = z
	.object({
		tick: z.number().int().openapi({ description: 'The cron tick (ms since the epoch).' }),
		at: z.number().int().openapi({ description: 'When it was handled (later than the tick after downtime).' }),
		outcome: z.enum(['started', 'skipped_overlap', 'refused']),
		instanceId: z.string().nullable(),
		missed: z.number().int().openapi({ description: 'Older ticks missed during downtime that this one stood in for (not run).' }),
		error: z.string().nullable(),
		instanceStatus: z.string().optional().openapi({ description: "The instance's status now (newest started run only)." }),
	})
	.openapi('ScheduleRun');

export const ScheduleSchema = z
	.object({
		type: z.string(),
		cron: z.string(),
		overlap: z.enum(['skip', 'allow']),
		state: z.enum(['active', 'paused']),
		nextRunAt: z.number().int().nullable(),
		lastRuns: z.array(ScheduleRunSchema),
	})
	.openapi('Schedule');

const TypeParam = z.object({ type: z.string().max(64).openapi({ param: { name: 'type', in: 'path' } }) });

/** `GET /schedules` and pause/resume of one type's schedule (`static schedule`). */
export function scheduleRoutes(registry: Registry): ApiRoutes {
	const app = apiRoutes();
	app.openapi(
		createRoute({
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
	for (const action of ['pause', 'resume'] as const) {
		app.openapi(
			createRoute({
				method: 'post',
				path: `/schedules/{type}/${action}`,
				summary: action === 'pause' ? "Pause a type's schedule: no tick runs until a resume" : "Resume a type's schedule from the next tick after now",
				request: { params: TypeParam },
				responses: { 200: json(ScheduleSchema, 'The schedule'), ...errors(400, 401, 404) },
			}),
			async (c) => {
				const { type } = c.req.valid('param');
				registry.get(type);
				return c.json(await schedules[action](c.env, type), 200);
			},
		);
	}
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
