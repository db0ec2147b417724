import { OpenAPIHono, createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { IndexClient, type ListQuery as IndexListQuery } from '../client/index-client';
import type { ListOrder } from '../engine/index-query';
import { attributeParams, listOrderParam } from './attribute-query';
import type { ShardflowEnv } from '../client/instance-client';
import { rebalance } from '../client/rebalance';
import { backlogSummary } from '../client/reconcile';
import { ErrorCode, RegistryError } from '../engine/errors';
import type { Registry } from '../engine/registry';
import type { WorkflowStatus } from '../engine/types';
import { authMode, requireAuth, requireTokenIfSet } from './auth';
import { ApiError, errorJson, handleError, noteJsonParseFailures } from './http-errors';
import { registerIndexAdminRoutes } from './index-admin';
import { registerLifecycleAdminRoutes } from './lifecycle-admin';
import { registerScheduleRoutes } from './schedule-routes';
import { wakeSchedules } from '../client/schedule-client';
import { scheduledTypes } from '../engine/schedule';
import { concurrencyOf } from '../engine/concurrency';
import { hasBody } from './has-body';
import { MAX_BODY_BYTES, limitBody } from './body-limits';
import type { RateLimitBinding } from './failed-credentials';
import { errors, json } from './openapi-responses';
import { registerOperationRoutes } from './operation-routes';
import { documentWebhookRoute, registerWebhookRoute } from './webhook-route';
import { registerBatchCreateRoute } from './batch-create-route';
import { registerBatchDeleteRoute } from './batch-delete-route';
import { registerStreamRoutes } from './stream-routes';
import { registerBulkRoutes } from './bulk-routes';
import { AttributeCountsQuery, AttributeCountsSchema, ListQuery, ListSchema, RebalanceBody, RebalanceSchema, TypesSchema } from './schemas';
import { createDashboard } from '../dashboard/dashboard';
import { registerTypeMetricsRoute } from './type-metrics-route';
import { registerTypeSchemaRoutes, registrySchemas, withTypeSchemas } from './type-schema-routes';
import { workBegan } from '../runtime/isolate-activity';

/** Bindings and variables the API reads. */
export type ApiEnv = ShardflowEnv & {
	/** When set, every route requires `Authorization: Bearer <API_TOKEN>`. */
	API_TOKEN?: string;
	/** Optional second token that may only read (GET and HEAD), for monitoring; it works only beside API_TOKEN. */
	API_TOKEN_READONLY?: string;
	/** "true" serves every route without a token outside development (an explicit, documented choice). */
	ALLOW_UNAUTHENTICATED?: string;
	/** "development" under `npm run dev`; anything else counts as production. */
	SHARDFLOW_ENV?: string;
	/** Optional Workers Rate Limiting binding that counts wrong credentials per client address across isolates (README "Security"). */
	AUTH_FAILURES?: RateLimitBinding;
};


/** What the API is built with besides its registry. */
export interface AppOptions {
	/** The clock that ages the delivery backlog in `/types`; `Date.now` unless a test Worker moves time. */
	clock?: () => number;
	/**
	 * `'api-token'` (default): the built-in check (`API_TOKEN`, see src/api/auth.ts).
	 * `'host'`: the host authenticates every request itself, with its own
	 * middleware in front of `app.route(path, createApp(...))`; the app then
	 * checks nothing, so mount it only behind that middleware.
	 */
	auth?: 'api-token' | 'host';
	/**
	 * Serve the dashboard at `/dashboard` under wherever the app is mounted (default true): `/ops/dashboard` for
	 * `app.route('/ops', createApp(registry))`. Its scripts and stylesheet are bundled in; it needs no `assets`
	 * setting. With `auth: 'host'` it has no sign-in of its own: the host's middleware in front of the mount guards it.
	 */
	dashboard?: boolean;
}

/**
 * The app of a registry that cannot run (`Registry.problem`): it logs the
 * problem when the Worker loads and answers every request with it, so
 * `wrangler dev` keeps running, shows what to fix, and reloads once it is.
 */
function brokenRegistryApp(problem: RegistryError) {
	console.error(problem.message);
	const app = new OpenAPIHono<{ Bindings: ApiEnv }>();
	app.all('*', (c) => errorJson(c, 500, problem.code, problem.message));
	return app;
}

/**
 * The REST API at /workflows, for a registry. Serve it as the Worker's
 * default export, or mount it under a path of the host's own Hono app; the
 * OpenAPI document then names that path as its server.
 *
 * @example
 * const app = new Hono();
 * app.use('/workflows-admin/*', myAuth);
 * app.route('/workflows-admin', createApp(registry, { auth: 'host' }));
 */
export function createApp(registry: Registry, options: AppOptions = {}) {
	if (registry.problem) return brokenRegistryApp(registry.problem);
	const now = options.clock ?? Date.now;
	// A malformed `static schedule` or `static concurrency` is a registry that cannot run: every route
	// answers 500 INVALID_REGISTRY naming it (and `wrangler dev` stays up to pick up the fix).
	let scheduled: boolean;
	try {
		scheduled = scheduledTypes(registry).length > 0;
		for (const type of registry.types()) concurrencyOf(registry, type);
	} catch (error) {
		return brokenRegistryApp(new RegistryError(`shardflow cannot run this registry: ${(error as Error).message}`));
	}
	const app = new OpenAPIHono<{ Bindings: ApiEnv }>({
		// Schema failures become the same JSON errors as everything else.
		defaultHook: (result, c) => {
			if (!result.success) {
				const issue = result.error.issues[0];
				const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
				const target = (result as { target?: string }).target;
				const code = target === 'query' ? ErrorCode.InvalidQuery : 'INVALID_REQUEST';
				return errorJson(c, 400, code, `${where}${issue?.message ?? 'invalid request'}`);
			}
		},
	});

	app.onError(handleError);
	// The first request an isolate serves wakes every schedule (in the background): after a deploy, each
	// schedule object picks up the deployed cron and arms its alarm without a manual step (README "Schedules").
	let schedulesWoken = !scheduled;
	app.use('*', async (c, next) => {
		// A long run in this isolate shortens its slices while requests arrive (engine/yield-pacer.ts).
		workBegan();
		if (!schedulesWoken) {
			schedulesWoken = true;
			const waking = wakeSchedules(c.env, registry).catch((error) => console.error('shardflow: waking the schedules failed', error));
			try {
				c.executionCtx.waitUntil(waking);
			} catch {
				// no execution context (app.fetch without one): the promise runs on its own
			}
		}
		await next();
	});
	app.notFound((c) => errorJson(c, 404, 'ROUTE_NOT_FOUND', `no route for ${c.req.method} ${new URL(c.req.url).pathname}`));
	// Before the API's middleware: the dashboard has its own sign-in and calls the API (this app) in process.
	if (options.dashboard !== false) app.route('/dashboard', createDashboard(registry, (request, env, ctx) => app.fetch(request, env, ctx as never), { auth: options.auth ?? 'api-token' }));
	// The generated document, with each type's payload and event schemas written in (type-schema-routes.ts).
	// Registered ahead of `requireAuth` with its own check, so it keeps its rule wherever the app is mounted.
	if (options.auth !== 'host') app.get('/openapi.json', requireTokenIfSet);
	app.get('/openapi.json', async (c) => {
		const document = app.getOpenAPI31Document({
			openapi: '3.1.0',
			info: { title: 'shardflow', version: '0.1.0', description: 'Durable workflows on one Durable Object class, with a sharded index.' },
			// Mounted with `app.route('/workflows-admin', ...)`, the routes live under that path.
			...mountedAt(c.req.path.slice(0, -'/openapi.json'.length)),
			...(options.auth === 'host' ? {} : { security: [{ bearer: [] }] }),
		});
		// A deployment that serves no data without a token does not name its types to strangers either;
		// a host that authenticates itself decided who reaches this document.
		const open = options.auth === 'host' || authMode(c.env) !== 'unconfigured';
		return c.json(open ? withTypeSchemas(document, await registrySchemas(registry)) : document);
	});
	// Outside system calls with no API token: the signed, single-use URL is the credential (webhook-route.ts).
	registerWebhookRoute(app);
	if (options.auth !== 'host') {
		app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer', description: 'Required when API_TOKEN is set.' });
		app.use('*', requireAuth);
	}
	app.use('*', limitBody(MAX_BODY_BYTES, (c) => errorJson(c, 413, ErrorCode.TooLarge, `request bodies are limited to ${MAX_BODY_BYTES} bytes (payloads to 1 MiB)`)));
	app.use('*', async (c, next) => {
		if (c.req.method === 'POST' && hasBody(c)) {
			const type = c.req.header('content-type') ?? '';
			if (!/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type)) {
				throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'send JSON with content-type: application/json');
			}
			noteJsonParseFailures(c);
		} else if (c.req.method === 'POST' && c.req.header('content-type') !== undefined) {
			// No body is no body, whatever the content-type says: a route whose body is optional (restart, an
			// event without payload) must not try to parse an empty one. Clients that always send the header do this.
			const headers = new Headers(c.req.raw.headers);
			headers.delete('content-type');
			c.req.raw = new Request(c.req.raw, { headers });
		}
		await next();
	});

	const index = (c: Context<{ Bindings: ApiEnv }>) => new IndexClient(c.env, registry);

	registerOperationRoutes(app, registry);
	registerBatchCreateRoute(app, registry);
	registerBatchDeleteRoute(app);
	registerStreamRoutes(app, registry);
	registerBulkRoutes(app, registry);

	app.openapi(
		createRoute({
			method: 'get',
			path: '/workflows',
			summary: 'List instances from the sharded index, newest first (by creation, or by update with order=updated), by keyset pages',
			request: { query: ListQuery },
			responses: { 200: json(ListSchema, 'A page of instances'), ...errors(400, 401) },
		}),
		async (c) => {
			const q = c.req.valid('query');
			const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
			const attributes = attributeParams(c.req.queries(), registry, q.type);
			const order = listOrderParam(q.order);
			const page = await index(c).list({
				...(q.type !== undefined ? { type: q.type } : {}),
				...(q.status ? { status: q.status.split(',').map((s) => s.trim()) as WorkflowStatus[] } : {}),
				...(q.limit !== undefined ? { limit: Number(q.limit) } : {}),
				...(order !== undefined ? { order: order as ListOrder } : {}),
				...(attributes ? { attributes: attributes as IndexListQuery['attributes'] } : {}),
				...(q.idPrefix !== undefined ? { idPrefix: q.idPrefix } : {}),
				cursor: q.cursor ?? null,
				...defined({ createdAfter: num(q.createdAfter), createdBefore: num(q.createdBefore), updatedAfter: num(q.updatedAfter), updatedBefore: num(q.updatedBefore) }),
				...(q.codeVersion !== undefined ? { codeVersion: q.codeVersion } : {}),
				...(q.parent !== undefined ? { parent: q.parent } : {}),
			});
			return c.json(
				{
					items: page.items.map(({ id, type, status, createdAt, updatedAt, codeVersion, parentId, attributes }) => ({
						id, type, status, createdAt, updatedAt, ...(codeVersion ? { codeVersion } : {}), ...(parentId ? { parentId } : {}),
						...(attributes ? { attributes } : {}),
					})),
					nextCursor: page.nextCursor,
				},
				200,
			);
		},
	);

	app.openapi(
		createRoute({
			method: 'get',
			path: '/types',
			summary: 'Registered workflow types with their shards, instance counts per status and index delivery backlog',
			responses: { 200: json(TypesSchema, 'Types'), ...errors(401) },
		}),
		async (c) => {
			const client = index(c);
			const types = await Promise.all(
				registry.types().map(async (type) => {
					const { shards, previousShards } = registry.get(type);
					const [counts, { pending, oldestSince, oldest }] = await Promise.all([client.counts(type), backlogSummary(c.env, type)]);
					const backlog = { pending, oldestAgeMs: oldestSince === null ? null : Math.max(0, now() - oldestSince), oldest };
					return { type, shards, ...(previousShards !== undefined ? { previousShards } : {}), counts, backlog };
				}),
			);
			return c.json({ types }, 200);
		},
	);

	app.openapi(
		createRoute({
			method: 'get',
			path: '/types/{type}/counts',
			summary: 'Instances of a type per value of one of its search attributes (?by=attr.<name>), under status, time and attribute filters',
			request: { params: z.object({ type: z.string().max(64).openapi({ param: { name: 'type', in: 'path' }, example: 'payment' }) }), query: AttributeCountsQuery },
			responses: { 200: json(AttributeCountsSchema, 'Counts per value'), ...errors(400, 401) },
		}),
		async (c) => {
			const { type } = c.req.valid('param');
			const q = c.req.valid('query');
			const attribute = q.by.slice(5);
			const attributes = attributeParams(c.req.queries(), registry, type);
			const counts = await index(c).countBy({
				type,
				attribute,
				...(q.status ? { status: q.status.split(',').map((s) => s.trim()) as WorkflowStatus[] } : {}),
				...defined({ createdAfter: q.createdAfter === undefined ? undefined : Number(q.createdAfter), createdBefore: q.createdBefore === undefined ? undefined : Number(q.createdBefore) }),
				...(attributes ? { attributes: attributes as IndexListQuery['attributes'] } : {}),
			});
			return c.json({ type, attribute, ...counts }, 200);
		},
	);

	app.openapi(
		createRoute({
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
			const progress = await rebalance(c.env, registry, c.req.valid('param').type, {
				...(body.cursor !== undefined ? { cursor: body.cursor } : {}),
				...(body.batchSize !== undefined ? { batchSize: body.batchSize } : {}),
			});
			return c.json(progress, 200);
		},
	);

	registerIndexAdminRoutes(app, registry);
	registerTypeSchemaRoutes(app, registry);
	registerTypeMetricsRoute(app, registry, now);
	registerLifecycleAdminRoutes(app, registry);
	registerScheduleRoutes(app, registry);
	documentWebhookRoute(app);

	return app;
}

/** The `servers` entry of a mounted app's document: its routes live under the mount path. */
function mountedAt(base: string): { servers?: { url: string }[] } {
	return base ? { servers: [{ url: base }] } : {};
}

function defined<T extends Record<string, unknown>>(values: T): Partial<T> {
	return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Partial<T>;
}
