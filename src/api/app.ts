import { logFormOf, printLog } from '../engine/support/engine-log';
import { describeThrown } from '../engine/support/thrown-value';
import { OpenAPIHono } from '@hono/zod-openapi';
import { ErrorCode, RegistryError } from '../engine/support/errors';
import type { Registry } from '../engine/definition/registry';
import { authMode, requireAuth, requireTokenIfSet } from './auth';
import type { ApiEnv } from './env';
import { ApiError, errorJson, handleError, noteJsonParseFailures } from './http-errors';
import { indexAdminRoutes } from './index-admin';
import { lifecycleAdminRoutes } from './lifecycle-admin';
import { listRoutes } from './list-routes';
import { scheduleRoutes } from './schedule-routes';
import { wakeSchedules } from '../client/schedule-client';
import { scheduledTypes } from '../engine/schedule/schedule';
import { concurrencyOf } from '../engine/limiter/concurrency';
import { hasBody } from './has-body';
import { MAX_BODY_BYTES, limitBody } from './body-limits';
import { operationRoutes } from './operation-routes';
import { apiRoutes } from './routes';
import { documentWebhookRoute, webhookRoutes } from './webhook-route';
import { batchCreateRoutes } from './batch-create-route';
import { batchDeleteRoutes } from './batch-delete-route';
import { streamRoutes } from './stream-routes';
import { bulkRoutes } from './bulk-routes';
import { createDashboard } from '../dashboard/dashboard';
import { typeMetricsRoutes } from './type-metrics-route';
import { metricsRoutes } from './metrics-route';
import { alertsRoutes } from './alerts-route';
import { typeSchemaRoutes, registrySchemas, withTypeSchemas } from './type-schema-routes';
import { workBegan } from '../runtime/isolate-activity';
export type { ApiEnv } from './env';


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
	printLog({ severity: 'error', event: 'registry.invalid', error: describeThrown(problem) });
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
	// The root group; every other group of routes is a sub-app mounted with app.route (see ./routes.ts).
	const app = apiRoutes();

	app.onError(handleError);
	// The first request an isolate serves wakes every schedule (in the background): after a deploy, each
	// schedule object picks up the deployed cron and arms its alarm without a manual step (docs/writing-workflows.md "Schedules").
	let schedulesWoken = !scheduled;
	app.use('*', async (c, next) => {
		// A long run in this isolate shortens its slices while requests arrive (engine/steps/yield-pacer.ts).
		workBegan();
		if (!schedulesWoken) {
			schedulesWoken = true;
			const waking = wakeSchedules(c.env, registry).catch((error) => printLog({ severity: 'error', event: 'schedule.wake_failed', error: describeThrown(error) }, logFormOf(c.env)));
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
	app.route('/', webhookRoutes());
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

	app.route('/', operationRoutes(registry));
	app.route('/', batchCreateRoutes(registry));
	app.route('/', batchDeleteRoutes());
	app.route('/', streamRoutes(registry));
	app.route('/', bulkRoutes(registry));
	app.route('/', listRoutes(registry, now));
	app.route('/', indexAdminRoutes(registry));
	app.route('/', typeSchemaRoutes(registry));
	app.route('/', typeMetricsRoutes(registry, now));
	app.route('/', metricsRoutes(registry, now));
	app.route('/', alertsRoutes(registry, now));
	app.route('/', lifecycleAdminRoutes(registry));
	app.route('/', scheduleRoutes(registry));
	documentWebhookRoute(app);

	return app;
}
/** The `servers` entry of a mounted app's document: its routes live under the mount path. */
function mountedAt(base: string): { servers?: { url: string }[] } {
	return base ? { servers: [{ url: base }] } : {};
}
