import { z } from '@hono/zod-openapi';
import type { Registry } from '../engine/definition/registry';
import type { HttpRequestView, HttpRoute } from './http';
import type { AddressOf, CallArgs, CallOutput, RoleCallName, RoleCalls, RoleOf } from './role-calls';

/**
 * How a role call is served over HTTP (registered by `src/api/role-call-routes.ts`): the
 * request, once validated, as the object's address and the call's arguments, and the
 * response for what the call answers.
 */
export interface RoleHttpBinding<N extends RoleCallName> extends HttpRoute {
	/** `registry` lets a route refuse an unknown type before any object is touched. */
	call(request: HttpRequestView, registry: Registry): { address: AddressOf<RoleOf<N>>; args: CallArgs<RoleCalls[N]> };
	reply(output: CallOutput<RoleCalls[N]>): { status: number; body: unknown };
}

/** The HTTP route of each role call that has one, typed by its entry in `./role-calls.ts`. */
export type RoleHttpBindings = { [N in RoleCallName]?: RoleHttpBinding<N> };

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
		missedLastDay: z.number().int().openapi({ description: 'Ticks missed in the last day (due while the alarm could not fire, not run), however many runs followed them.' }),
	})
	.openapi('Schedule');

const TypeParam = z.object({ type: z.string().max(64).openapi({ param: { name: 'type', in: 'path' } }) });

export const BulkProgressSchema = z
	.object({
		id: z.string(),
		state: z.enum(['running', 'completed', 'cancelled']),
		dryRun: z.boolean(),
		action: z.record(z.string(), z.unknown()),
		query: z.record(z.string(), z.unknown()),
		matched: z.number().int().openapi({ description: 'Instances the walk listed (they matched when listed).' }),
		done: z.number().int(),
		skipped: z.record(z.string(), z.number().int()).openapi({ description: 'Per reason: no_longer_matches, not_found, INVALID_STATE, ...', example: { no_longer_matches: 3 } }),
		failed: z.number().int(),
		errors: z.array(z.object({ id: z.string(), code: z.string(), message: z.string() })).openapi({ description: 'The last failures (at most 20).' }),
		createdAt: z.number().int(),
		updatedAt: z.number().int(),
		finishedAt: z.number().int().nullable(),
	})
	.openapi('BulkProgress');

const JobParam = z.object({ id: z.string().max(100).openapi({ param: { name: 'id', in: 'path' }, example: '01936f5e-8a4b-7c3d-9e2f-1a2b3c4d5e6f' }) });

/** Pause or resume of one type's schedule: the type must be registered (404 before any object is touched). */
function scheduleRoute(action: 'pause' | 'resume'): RoleHttpBinding<'schedulePause' | 'scheduleResume'> {
	return {
		method: 'post',
		path: `/schedules/{type}/${action}`,
		summary: action === 'pause' ? "Pause a type's schedule: no tick runs until a resume" : "Resume a type's schedule from the next tick after now",
		request: { params: TypeParam },
		responses: { 200: { schema: ScheduleSchema, description: 'The schedule' } },
		errors: [400, 401, 404],
		call: ({ param }, registry) => {
			registry.get(param.type);
			return { address: [param.type], args: [] };
		},
		reply: (info) => ({ status: 200, body: info }),
	};
}

/** A call on one bulk job by its id, answering the job's progress. */
function jobRoute(method: 'get' | 'post', path: string, summary: string): RoleHttpBinding<'bulkProgress' | 'bulkCancel'> {
	return {
		method,
		path,
		summary,
		request: { params: JobParam },
		responses: { 200: { schema: BulkProgressSchema, description: 'Progress' } },
		errors: [400, 401, 404],
		call: ({ param }) => ({ address: [param.id], args: [] }),
		reply: (progress) => ({ status: 200, body: progress }),
	};
}

/**
 * The REST API of the role calls that have a route, keyed by call (`./role-calls.ts`). Only
 * the host imports this file (zod stays out of callers' bundles). Routes built from a whole
 * workflow type rather than one call (`GET /schedules`, `POST /workflows/bulk`, the listing)
 * stay hand-written in src/api/.
 */
export const roleHttpBindings: RoleHttpBindings = {
	schedulePause: scheduleRoute('pause'),
	scheduleResume: scheduleRoute('resume'),
	bulkProgress: jobRoute('get', '/bulk/{id}', "A bulk operation's progress: matched, done, skipped per reason, failed"),
	bulkCancel: jobRoute('post', '/bulk/{id}/cancel', 'Cancel a bulk operation: no instance is acted on after the tick in progress'),
	bulkDelete: {
		method: 'delete',
		path: '/bulk/{id}',
		summary: 'Delete a finished bulk operation and its progress (409 INVALID_STATE while it runs: cancel it first)',
		request: { params: JobParam },
		responses: { 200: { schema: z.object({ id: z.string(), deleted: z.literal(true) }).openapi('BulkDeleted'), description: 'Deleted' } },
		errors: [400, 401, 404, 409],
		call: ({ param }) => ({ address: [param.id], args: [] }),
		reply: (deleted) => ({ status: 200, body: deleted }),
	},
};
