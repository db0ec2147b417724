import { z } from '@hono/zod-openapi';
import { strictRoute } from './strict-route';
import { bulk } from '../client/bulk-client';
import type { ListQuery } from '../client/index-client';
import { MAX_BULK_RATE, type BulkAction } from '../engine/bulk/bulk-job';
import type { Registry } from '../engine/definition/registry';
import { WORKFLOW_STATUSES } from '../engine/support/statuses';
import { keepReservedAttributeNames } from '../engine/index/search-attributes';
import { DATETIME_TEXT, parseTimeJson } from '../engine/index/attribute-text';
import { ErrorCode, ValidationError } from '../engine/support/errors';
import { apiRoutes, type ApiRoutes } from './routes';
import { errors, json } from './openapi-responses';
import { BulkProgressSchema } from '../operations/role-http';
import { addRoleCallRoutes } from './role-call-routes';

/** A time bound in JSON: ms since the epoch (12 digits or more) or ISO 8601 text, read as the listing reads it. */
const JsonTime = z.union([z.number().int(), z.string().max(40)]).openapi({ description: 'Milliseconds since the epoch (12 digits or more) or ISO 8601 text.', example: '2024-05-01' });
const TIME_BOUNDS = ['createdAfter', 'createdBefore', 'updatedAfter', 'updatedBefore'] as const;

const BulkQuerySchema = z
	.object({
		type: z.string().min(1).max(64).openapi({ example: 'payment' }),
		status: z.array(z.enum(WORKFLOW_STATUSES)).max(WORKFLOW_STATUSES.length).optional(),
		attributes: z.record(z.string(), z.unknown()).optional().openapi({
			description: 'Conditions on search attributes, as IndexClient takes them: a value, a list (any of), or {gt, gte, lt, lte}.',
			example: { customerId: '42', amount: { gte: 100 } },
		}),
		idPrefix: z.string().max(100).optional(),
		createdAfter: JsonTime.optional(),
		createdBefore: JsonTime.optional(),
		updatedAfter: JsonTime.optional(),
		updatedBefore: JsonTime.optional(),
		codeVersion: z.string().max(64).optional(),
		parent: z.string().max(100).optional(),
	})
	.strict()
	.openapi('BulkQuery');

/**
 * One schema per action kind, each strict like the rest of the body: an unknown key (a typo such
 * as `idempotency_key`, `archiv`) is refused naming it rather than dropped, which would send the
 * event without its key, delete without archiving, restart from the beginning. Option values are
 * checked further by the engine (`checkBulkAction`, `checkBulkActionFor`), which answers the
 * typed errors (an idempotency key's, a restart point's).
 */
const BulkActionSchema = z
	.discriminatedUnion('kind', [
		z.object({ kind: z.literal('terminate'), rollback: z.boolean().optional().openapi({ description: 'Run each instance\'s rollbacks first.' }) }).strict(),
		z.object({ kind: z.literal('pause') }).strict(),
		z.object({ kind: z.literal('resume') }).strict(),
		z.object({ kind: z.literal('restart'), from: z.unknown().optional().openapi({ description: 'A step name or {name, type?, count?}; the run starts over without it.' }) }).strict(),
		z.object({ kind: z.literal('delete'), archive: z.boolean().optional(), terminate: z.boolean().optional() }).strict(),
		z
			.object({
				kind: z.literal('sendEvent'),
				event: z.string(),
				payload: z.unknown().optional(),
				idempotencyKey: z.string().optional().openapi({ description: "The key of each instance's event (default bulk:<job id>)." }),
			})
			.strict(),
		z.object({ kind: z.literal('reindex') }).strict(),
	] as const)
	.openapi({
		description:
			'terminate {rollback?}, pause, resume, restart {from?}, delete {archive?, terminate?}, sendEvent {event, payload?, idempotencyKey?} (the key of each instance\'s event; default bulk:<job id>), reindex. No other key.',
		example: { kind: 'terminate', rollback: false },
	});

/** One message for every way a rate can be wrong (1e308 was answered "expected int to be <=9007199254740991"). */
const RATE_RANGE = `must be a whole number from 1 to ${MAX_BULK_RATE} (instances per second)`;

const BulkBody = z
	.object({
		query: BulkQuerySchema,
		action: BulkActionSchema,
		dryRun: z.boolean().optional().openapi({ description: 'Count what the query matches; act on nothing.' }),
		ratePerSecond: z
			.number({ error: RATE_RANGE })
			.int({ error: RATE_RANGE })
			.min(1, { error: RATE_RANGE })
			.max(MAX_BULK_RATE, { error: RATE_RANGE })
			.optional().openapi({ description: 'Instances acted on per second at most (default 50).' }),
		group: z.string().max(32).optional().openapi({ description: "The group whose instances it acts on (default: the default group): the job lives in the group's jurisdiction and walks its index only; its id carries the group. A job never spans groups (docs/residency.md).", example: 'eu' }),
	})
	.strict()
	.openapi('BulkOperation');

/** `POST /workflows/bulk`, `GET /bulk/{id}`, `POST /bulk/{id}/cancel` (see client/bulk-client.ts). */
export function bulkRoutes(registry: Registry): ApiRoutes {
	const app = apiRoutes();
	app.openapi(
		strictRoute({
			method: 'post',
			path: '/workflows/bulk',
			summary: 'Apply an action to every instance a query matches, as a durable job (202 with its progress)',
			request: { body: { required: true, content: { 'application/json': { schema: BulkBody } } } },
			responses: { 202: json(BulkProgressSchema, 'The job, started'), ...errors(400, 401, 413, 415) },
		}),
		async (c) => {
			const body = c.req.valid('json');
			// An own "__proto__" condition, dropped by the schema, would widen the query to the whole type: kept, it is refused.
			const attributes = keepReservedAttributeNames(body.query.attributes, ((await c.req.json()) as { query: { attributes?: unknown } }).query.attributes);
			const query = readJsonTimes({ ...body.query, ...(attributes !== undefined ? { attributes } : {}) }, registry);
			const progress = await bulk.start(c.env, registry, {
				query: query as unknown as ListQuery & { type: string },
				action: body.action as BulkAction,
				...(body.dryRun !== undefined ? { dryRun: body.dryRun } : {}),
				...(body.ratePerSecond !== undefined ? { ratePerSecond: body.ratePerSecond } : {}),
				...(body.group !== undefined ? { group: body.group } : {}),
			});
			return c.json(progress as never, 202);
		},
	);
	// Progress and cancel: the job's calls declared with a route (src/operations/role-http.ts).
	addRoleCallRoutes(app, registry, 'bulk');
	return app;
}

/**
 * The time conditions of a JSON query (its bounds and its datetime attributes' values) as ms,
 * each read by the one rule of time conditions (`parseTimeJson`): `"createdAfter": 2024` or
 * `{"dueAt": {"lt": 20240301}}` is refused (400 INVALID_QUERY) as the query string refuses it,
 * not read as a time in 1970. Values of other kinds are left for the query's own check.
 */
function readJsonTimes(query: Record<string, unknown> & { type: string }, registry: Registry): Record<string, unknown> {
	const refuse = (what: string, value: unknown) => new ValidationError(ErrorCode.InvalidQuery, `${what} must be ${DATETIME_TEXT}; got ${JSON.stringify(value)}`);
	const time = (what: string, value: unknown) => {
		if (typeof value !== 'number' && typeof value !== 'string') return value;
		const ms = parseTimeJson(value);
		if (ms === undefined) throw refuse(what, value);
		return ms;
	};
	const read: Record<string, unknown> = { ...query };
	for (const key of TIME_BOUNDS) if (read[key] !== undefined) read[key] = time(key, read[key]);
	const declared = registry.has(query.type) ? (registry.get(query.type).attributes ?? {}) : {};
	const attributes = read.attributes;
	if (typeof attributes === 'object' && attributes !== null && !Array.isArray(attributes)) {
		const conditions: Record<string, unknown> = { ...attributes };
		for (const [name, condition] of Object.entries(attributes)) {
			if (!Object.hasOwn(declared, name) || declared[name] !== 'datetime') continue;
			const what = `attributes.${name}`;
			conditions[name] = Array.isArray(condition)
				? condition.map((v) => time(what, v))
				: typeof condition === 'object' && condition !== null
					? Object.fromEntries(Object.entries(condition).map(([bound, v]) => [bound, time(`${what}.${bound}`, v)]))
					: time(what, condition);
		}
		read.attributes = conditions;
	}
	return read;
}
