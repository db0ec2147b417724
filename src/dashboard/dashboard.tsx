import { Hono, type Context } from 'hono';
import { groupScoped } from '../client/group-scope';
import { groupOfLayout } from '../client/index-group';
import { groupOfId } from './group-of-id';
import { html } from 'hono/html';
import { trimTrailingSlash } from 'hono/trailing-slash';
import type { ApiEnv } from '../api/env';
import { LOGIN_BODY_BYTES, MAX_BODY_BYTES, limitBody } from '../api/body-limits';
import { countFailedCredential, refuseIfBlocked } from '../api/failed-credentials';
import { ApiError } from '../api/http-errors';
import { authNotConfigured } from '../api/auth';
import { timingSafeEqual } from 'hono/utils/buffer';
import { namespace } from '../client/instance-client';
import type { Registry } from '../engine/definition/registry';
import { MAX_LIMIT } from '../engine/index/index-query';
import { parseDatetimeText } from '../engine/index/attribute-text';
import { shardName } from '../engine/object-names';
import type { TypeSchemas } from '../engine/definition/type-schemas';
import { dashboardAsset } from './assets';
import { DashboardBase, dashboardBase, dashboardPath } from './mount';
import { authMode as tokenAuthMode, hasSession, logIn, logOut, readSession, renewedSession, sameOrigin } from './session';
import { InstancePage, type ChildNode, type InstanceDetail } from './views/instance';
import { ScheduleList, SchedulePage, type ScheduleView } from './views/schedules';
import { compileCron, scheduledTypes } from '../engine/schedule/schedule';
import type { ScheduleInfo } from '../engine/schedule/schedule-engine';
import type { TypeMetrics } from '../engine/index/run-metrics';
import { BulkPage } from './views/bulk';
import { ErrorBanner, Layout } from './views/layout';
import { DEFAULT_PAGE_SIZE, InstanceList, type ListFilter, type ListItem } from './views/list';
import { LoginPage } from './views/login';
import { Overview, type TypeSummary } from './views/overview';
import type { Alert } from '../api/alerts';

/** How the dashboard reaches the REST API: in process, through the same app everyone else calls. */
export type ApiFetch = (request: Request, env: ApiEnv, ctx?: unknown) => Response | Promise<Response>;

type DashboardContext = Context<{ Bindings: ApiEnv }>;
type ApiResult<T> = { ok: true; status: number; body: T } | { ok: false; status: number; error: { code: string; message: string } };

/** The list API's largest page: a larger `limit` goes to the API, which refuses it. */
const MAX_LIST_LIMIT = MAX_LIMIT;
/** A header the dashboard's own scripts send with every change: a cross-site form cannot set it. */
export const DASHBOARD_HEADER = 'x-shardflow-dashboard';
/** Levels of child workflows the instance page shows, and children read per level. */
const CHILD_TREE_DEPTH = 3;
const CHILDREN_PER_LEVEL = 50;
/** Upcoming ticks and recent runs a schedule's page shows. */
const NEXT_TICKS = 5;
const RUNS_SHOWN = 20;

/** How the dashboard lets people in: the API's rule (a sign-in with API_TOKEN), or the host's own auth in front of it. */
export interface DashboardOptions {
	/** `'host'`: the host authenticates every request under its mount (createApp's `auth: 'host'`); the dashboard has no sign-in of its own. */
	auth?: 'api-token' | 'host';
}

/**
 * The dashboard at `<mount>/dashboard` (`/dashboard` for the app at the
 * root): server-rendered pages (Hono JSX) over the REST API, a same-origin
 * proxy of that API for the pages' scripts (`<dashboard>/api/*`), the live
 * feed's WebSocket, forwarded to one index shard (`<dashboard>/live/:type/:n`),
 * and the browser modules and stylesheet, bundled in (src/dashboard/assets.ts).
 * See docs/dashboard.md.
 */
export function createDashboard(registry: Registry, api: ApiFetch, options: DashboardOptions = {}) {
	const app = new Hono<{ Bindings: ApiEnv }>();
	/** Behind a host's auth the dashboard is open to whoever the host let through, like development. */
	const authMode = (env: ApiEnv) => (options.auth === 'host' ? 'open' : tokenAuthMode(env));
	/** Requests the dashboard made of the API: one never reaches the dashboard again (the proxy is one hop, whatever its path says). */
	const made = new WeakSet<Request>();

	/** Calls the REST API in process, with the deployment's token when it has one: the session stands for it. */
	const callApi = async <T,>(c: DashboardContext, path: string, init: RequestInit = {}): Promise<ApiResult<T>> => {
		const res = await forward(c, path, init);
		const body = (await res.json().catch(() => null)) as any;
		if (res.ok) return { ok: true, status: res.status, body: body as T };
		return { ok: false, status: res.status, error: body?.error ?? { code: 'UNEXPECTED', message: `the API answered ${res.status}` } };
	};
	const forward = (c: DashboardContext, path: string, init: RequestInit = {}) => {
		const headers = new Headers(init.headers);
		if (c.env.API_TOKEN) headers.set('authorization', `Bearer ${c.env.API_TOKEN}`);
		// The API sees the dashboard user's address, as a direct call would carry it.
		const address = c.req.header('cf-connecting-ip');
		if (address) headers.set('cf-connecting-ip', address);
		let ctx: unknown;
		try {
			ctx = c.executionCtx;
		} catch {
			ctx = undefined; // app.request() in tests has none
		}
		// The path is put on the dashboard's own origin, never resolved against it: `//host/x` stays a path.
		const request = new Request(new URL(c.req.url).origin + path, { ...init, headers });
		made.add(request);
		return api(request, c.env, ctx);
	};

	const page = async (c: DashboardContext, title: string, body: unknown, options: { status?: number; nav?: 'overview' | 'instances' | 'schedules' } = {}) =>
		c.html(
			html`<!doctype html>${(
				<DashboardBase.Provider value={dashboardBase(c)}>
					<Layout title={title} nav={options.nav} loggedIn={authMode(c.env) === 'token' && (await hasSession(c))}>
						{body as any}
					</Layout>
				</DashboardBase.Provider>
			)}`,
			(options.status ?? 200) as 200,
		);
	const errorPage = (c: DashboardContext, status: number, code: string, message: string) =>
		page(c, 'Error', <><h1>{status === 404 ? 'Not found' : 'Something is wrong'}</h1><ErrorBanner code={code} message={message} /><p><a href={dashboardBase(c)}>Back to the overview</a></p></>, { status });
	const refuse = (c: DashboardContext, status: 401 | 403, code: string, message: string) =>
		isPage(c) ? errorPage(c, status, code, message) : c.json({ error: { code, message } }, status);

	// ---- the proxy is one hop: a request the dashboard made of the API never reaches the dashboard (checked first: the body limit replaces the request) ----
	app.use('*', async (c, next) => {
		if (made.has(c.req.raw)) return c.json({ error: { code: 'ROUTE_NOT_FOUND', message: 'the dashboard proxies the API only' } }, 404);
		await next();
	});

	// ---- `/dashboard/` (a typed or bookmarked address) is the overview: a page not found with a trailing slash redirects to the path without it ----
	app.use('*', trimTrailingSlash());

	// ---- what may come in: no body past the API's own limit (a few KiB for the sign-in form), refused before it is read ----
	const tooLarge = (c: DashboardContext, message: string) => (isPage(c) ? errorPage(c, 413, 'TOO_LARGE', message) : c.json({ error: { code: 'TOO_LARGE', message } }, 413));
	app.use('/login', limitBody(LOGIN_BODY_BYTES, tooLarge));
	app.use('*', limitBody(MAX_BODY_BYTES, tooLarge));

	// ---- the browser modules and stylesheet: public (the sign-in page needs them), bundled in ----
	app.on(['GET', 'HEAD'], '/:file{[a-z]+\\.(?:js|css)}', async (c) => (await dashboardAsset(c.req.param('file'), c.req.raw)) ?? errorPage(c, 404, 'ROUTE_NOT_FOUND', `no dashboard file ${c.req.param('file')}`));

	// ---- who may come in ----
	app.use('*', async (c, next) => {
		const mode = authMode(c.env);
		if (mode === 'unconfigured') {
			return refuse(c, 403, 'AUTH_NOT_CONFIGURED', authNotConfigured('open the dashboard without signing in, on purpose'));
		}
		const mutating = c.req.method !== 'GET' && c.req.method !== 'HEAD';
		const upgrade = c.req.header('upgrade')?.toLowerCase() === 'websocket';
		if ((mutating || upgrade) && !sameOrigin(c)) return refuse(c, 403, 'CROSS_SITE_REQUEST', 'the dashboard accepts changes and live sockets only from its own pages');
		let renewed: string | null = null;
		if (mode === 'token' && dashboardPath(c) !== '/login') {
			const session = await readSession(c);
			if (session === null) {
				if (isPage(c) && c.req.method === 'GET') return c.redirect(`${dashboardBase(c)}/login?next=${encodeURIComponent(c.req.path + new URL(c.req.url).search)}`, 303);
				return refuse(c, 401, 'UNAUTHORIZED', `sign in at ${dashboardBase(c)}/login`);
			}
			if (dashboardPath(c) !== '/logout') renewed = await renewedSession(c, session, dashboardBase(c));
		}
		await next();
		// Pages and the API proxy alike renew a session in use (the proxy answers with the API's own response, so the cookie goes on here).
		if (renewed && c.res.status !== 101) {
			c.res = new Response(c.res.body, c.res);
			c.res.headers.append('set-cookie', renewed);
		}
	});

	// ---- login ----
	app.get('/login', (c) => (authMode(c.env) !== 'token' ? c.redirect(dashboardBase(c), 303) : page(c, 'Sign in', <LoginPage next={safeNext(dashboardBase(c), c.req.query('next'))} />)));
	app.post('/login', async (c) => {
		if (authMode(c.env) !== 'token') return c.redirect(dashboardBase(c), 303);
		const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
		const next = safeNext(dashboardBase(c), typeof form.next === 'string' ? form.next : undefined);
		const token = typeof form.token === 'string' ? form.token : '';
		try {
			refuseIfBlocked(c);
			if (token && (await logIn(c, token, dashboardBase(c)))) return c.redirect(next, 303);
			if (c.env.API_TOKEN_READONLY && token && (await timingSafeEqual(c.env.API_TOKEN_READONLY, token))) {
				return page(c, 'Sign in', <LoginPage next={next} error="The read-only token cannot sign in to the dashboard: use API_TOKEN." />, { status: 401 });
			}
			// An empty form is no guess; a wrong token is.
			if (token) await countFailedCredential(c);
		} catch (error) {
			if (error instanceof ApiError && error.status === 429) return page(c, 'Sign in', <LoginPage next={next} error={error.message} />, { status: 429 });
			throw error;
		}
		return page(c, 'Sign in', <LoginPage next={next} error="That is not this deployment's API token." />, { status: 401 });
	});
	app.post('/logout', (c) => {
		logOut(c, dashboardBase(c));
		return c.redirect(authMode(c.env) === 'token' ? `${dashboardBase(c)}/login` : dashboardBase(c), 303);
	});

	// ---- the API, same origin, for the pages' scripts ----
	app.all('/api/*', async (c) => {
		if (c.req.method !== 'GET' && c.req.method !== 'HEAD' && c.req.header(DASHBOARD_HEADER) !== '1') {
			return c.json({ error: { code: 'CROSS_SITE_REQUEST', message: `changes through the dashboard need the ${DASHBOARD_HEADER} header` } }, 403);
		}
		const target = proxyTarget(dashboardPath(c));
		// The API's routes only: the dashboard does not proxy itself.
		if (target === null) return c.json({ error: { code: 'ROUTE_NOT_FOUND', message: `no API route at ${dashboardPath(c).slice(API_PREFIX.length)}` } }, 404);
		const headers = new Headers();
		for (const name of ['content-type', 'idempotency-key']) {
			const value = c.req.header(name);
			if (value !== undefined) headers.set(name, value);
		}
		const body = c.req.method === 'GET' || c.req.method === 'HEAD' ? undefined : await c.req.arrayBuffer();
		return forward(c, target + new URL(c.req.url).search, { method: c.req.method, headers, ...(body && body.byteLength ? { body } : {}) });
	});

	// ---- live: one WebSocket per index shard, accepted (and hibernated) by the shard itself ----
	app.get('/live/:type/:shard', async (c) => {
		const { type, shard } = c.req.param();
		if (c.req.header('upgrade')?.toLowerCase() !== 'websocket') return c.json({ error: { code: 'UPGRADE_REQUIRED', message: 'open this path as a WebSocket' } }, 426);
		if (!registry.has(type)) return c.json({ error: { code: 'UNKNOWN_TYPE', message: `unknown workflow type ${JSON.stringify(type)}` } }, 400);
		const n = /^\d{1,3}$/.test(shard) ? Number(shard) : -1;
		if (n < 0 || n >= registry.get(type).shards) return c.json({ error: { code: 'INVALID_QUERY', message: `type ${type} has shards 0 to ${registry.get(type).shards - 1}` } }, 400);
		// A group's shards are its own, in its jurisdiction (docs/residency.md).
		const group = c.req.query('group');
		let place;
		try {
			place = groupOfLayout(registry, group === '' ? undefined : group).place;
		} catch (error) {
			return c.json({ error: { code: 'INVALID_GROUP', message: (error as Error).message } }, 400);
		}
		const shardStub = namespace(groupScoped(c.env, place)).getByName(shardName(type, n)) as { fetch(request: Request): Promise<Response> };
		return shardStub.fetch(new Request('https://index-shard/live', { headers: { upgrade: 'websocket' } }));
	});

	// ---- pages ----
	app.get('/', async (c) => {
		// ?group=: the group whose counts, metrics and alerts to show (docs/residency.md); the API refuses an undeclared one.
		const group = c.req.query('group')?.trim() || undefined;
		const inGroup = group ? `?group=${encodeURIComponent(group)}` : '';
		const [res, alerts, ...metrics] = await Promise.all([
			callApi<{ types: TypeSummary[] }>(c, `/types${inGroup}`),
			callApi<{ alerts: Alert[] }>(c, `/alerts${inGroup}`),
			...registry.types().map((type) => callApi<TypeMetrics>(c, `/types/${encodeURIComponent(type)}/metrics${inGroup}`)),
		]);
		if (!res.ok) return errorPage(c, res.status, res.error.code, res.error.message);
		const byType = Object.fromEntries(registry.types().map((type, i) => [type, metrics[i]!.ok ? (metrics[i] as { body: TypeMetrics }).body : null]));
		const scheduled = scheduledTypes(registry).map((s) => s.type);
		const groups = registry.groups.list().map((g) => ({ name: g.name, jurisdiction: g.jurisdiction }));
		return page(c, 'Overview', <Overview types={res.body.types} metrics={byType} scheduled={scheduled} alerts={alerts.ok ? alerts.body.alerts : null} groups={groups} group={group} />, { nav: 'overview' });
	});

	app.get('/instances', async (c) => {
		const filter = readFilter(c);
		const types = registry.types();
		let items: ListItem[] = [];
		let nextCursor: string | null = null;
		let error: { code: string; message: string } | undefined;
		let status = 200;
		// The type's events and their shapes, for the bulk action's event editor (read alongside the list).
		const schemas = filter.type && registry.has(filter.type) && !filter.id ? callApi<TypeSchemas>(c, `/types/${encodeURIComponent(filter.type)}`) : undefined;
		if (filter.type && !registry.has(filter.type)) {
			error = { code: 'UNKNOWN_TYPE', message: `unknown workflow type ${JSON.stringify(filter.type)}; registered types: ${types.join(', ')}` };
			status = 400;
		} else if (filter.id && !filter.unchecked && filter.attributes.length === 0 && !filter.order.includes('attr.') && !filter.idPrefix) {
			// The index has no text search: an id is looked up exactly, then checked against the other filters.
			const res = await callApi<InstanceDetail>(c, `/workflows/${encodeURIComponent(filter.id)}`);
			if (res.ok)
				items = [res.body]
					.filter((i) => matches(i, filter))
					.map(({ id, type, status, createdAt, updatedAt, codeVersion, parentId, attributes }) => ({ id, type, status, createdAt, updatedAt, ...(codeVersion ? { codeVersion } : {}), ...(parentId ? { parentId } : {}), ...(attributes ? { attributes } : {}) }));
			else if (res.status !== 404) [error, status] = [res.error, res.status];
		} else {
			// An exact id with attribute conditions: the index answers the conditions for the ids under that prefix, the page keeps the one id.
			const query = filter.id && !filter.idPrefix ? listQuery({ ...filter, idPrefix: filter.id }) : listQuery(filter);
			const res = await callApi<{ items: ListItem[]; nextCursor: string | null }>(c, `/workflows?${query}`);
			if (res.ok) ({ items, nextCursor } = filter.id ? { items: res.body.items.filter((i) => i.id === filter.id), nextCursor: null } : res.body);
			else [error, status] = [res.error, res.status];
		}
		const watched = filter.type && registry.has(filter.type) ? [filter.type] : types;
		// A refused query has no list to keep live: the page shows the API's error and nothing else.
		const declared = filter.type && registry.has(filter.type) ? registry.get(filter.type).attributes : {};
		const config = { filter, declared, shards: Object.fromEntries(watched.map((t) => [t, registry.get(t).shards])), firstPage: !filter.cursor, refused: error !== undefined };
		const typeSchemas = await schemas;
		const events = typeSchemas?.ok ? typeSchemas.body.events : [];
		const groups = registry.groups.list().map((g) => ({ name: g.name, jurisdiction: g.jurisdiction }));
		return page(c, 'Instances', <InstanceList types={types} groups={groups} declared={declared} filter={filter} items={items} nextCursor={nextCursor} error={error} config={config} events={events} />, { status, nav: 'instances' });
	});

	app.get('/instances/:id', async (c) => {
		const id = c.req.param('id');
		const res = await callApi<InstanceDetail>(c, `/workflows/${encodeURIComponent(id)}`);
		if (!res.ok) return errorPage(c, res.status, res.error.code, res.status === 404 ? `no instance with id ${JSON.stringify(id)}` : res.error.message);
		const [schemas, children] = await Promise.all([
			callApi<TypeSchemas>(c, `/types/${encodeURIComponent(res.body.type)}`),
			res.body.archived ? Promise.resolve({ nodes: [], more: false }) : childTree(c, res.body.id, CHILD_TREE_DEPTH),
		]);
		const extras = { children, archiveBound: Boolean((c.env as { ARCHIVE?: unknown }).ARCHIVE) };
		return page(c, res.body.id, <InstancePage detail={res.body} schemas={schemas.ok ? schemas.body : undefined} extras={extras} />, { nav: 'instances' });
	});

	/** A parent's children (`GET /workflows?parent=`), each with its own, `depth` levels deep; null when the list cannot be read. */
	const childTree = async (c: DashboardContext, parentId: string, depth: number): Promise<{ nodes: ChildNode[]; more: boolean } | null> => {
		// A parent's children live in its group (docs/residency.md), so they are listed from that group's index.
		const group = groupOfId(parentId);
		const res = await callApi<{ items: ListItem[]; nextCursor: string | null }>(c, `/workflows?parent=${encodeURIComponent(parentId)}&limit=${CHILDREN_PER_LEVEL}${group ? `&group=${encodeURIComponent(group)}` : ''}`);
		if (!res.ok) return null;
		const nodes = await Promise.all(
			res.body.items.map(async (item) => {
				const below = depth > 1 ? await childTree(c, item.id, depth - 1) : null;
				return { item, children: below?.nodes ?? [], more: below?.more ?? false };
			}),
		);
		return { nodes, more: res.body.nextCursor !== null };
	};

	// ---- bulk operations: one job's page (started from the list) ----
	app.get('/bulk/:id', async (c) => {
		const id = c.req.param('id');
		const res = await callApi<{ id: string }>(c, `/bulk/${encodeURIComponent(id)}`);
		if (!res.ok) return errorPage(c, res.status, res.error.code, res.error.message);
		return page(c, 'Bulk operation', <BulkPage id={res.body.id} />, { nav: 'instances' });
	});

	// ---- schedules ----
	const scheduleView = async (c: DashboardContext, info: ScheduleInfo): Promise<ScheduleView> => {
		const nextTicks: number[] = [];
		if (info.state === 'active' && info.nextRunAt !== null) {
			const ticks = compileCron(info.cron);
			for (let at: number | null = info.nextRunAt; at !== null && nextTicks.length < NEXT_TICKS; at = ticks.after(at)) nextTicks.push(at);
		}
		// Each shown run's instance as it stands now (its index entry: one small read each, at most RUNS_SHOWN).
		const runs = info.lastRuns.slice(0, RUNS_SHOWN);
		const statuses: Record<number, string> = {};
		await Promise.all(
			runs.map(async (run) => {
				if (run.outcome !== 'started' || !run.instanceId) return;
				if ((run as { instanceStatus?: string }).instanceStatus) return void (statuses[run.tick] = (run as { instanceStatus?: string }).instanceStatus!);
				const entry = await callApi<{ status: string }>(c, `/workflows/${encodeURIComponent(run.instanceId)}`);
				statuses[run.tick] = entry.ok ? entry.body.status : entry.status === 404 ? 'deleted' : 'unknown';
			}),
		);
		return { info: { ...info, lastRuns: runs }, nextTicks, statuses };
	};
	app.get('/schedules', async (c) => {
		const res = await callApi<{ schedules: ScheduleInfo[] }>(c, '/schedules');
		if (!res.ok) return errorPage(c, res.status, res.error.code, res.error.message);
		const views = res.body.schedules.map((info) => ({ info, nextTicks: [], statuses: Object.fromEntries(info.lastRuns.slice(0, 1).flatMap((r) => ((r as { instanceStatus?: string }).instanceStatus ? [[r.tick, (r as { instanceStatus?: string }).instanceStatus!]] : []))) }));
		return page(c, 'Schedules', <ScheduleList schedules={views} />, { nav: 'schedules' });
	});
	app.get('/schedules/:type', async (c) => {
		const type = c.req.param('type');
		const res = await callApi<{ schedules: ScheduleInfo[] }>(c, '/schedules');
		if (!res.ok) return errorPage(c, res.status, res.error.code, res.error.message);
		const info = res.body.schedules.find((s) => s.type === type);
		if (!info) return errorPage(c, 404, registry.has(type) ? 'NOT_FOUND' : 'UNKNOWN_TYPE', registry.has(type) ? `the type ${JSON.stringify(type)} has no schedule` : `unknown workflow type ${JSON.stringify(type)}`);
		return page(c, `Schedule of ${type}`, <SchedulePage view={await scheduleView(c, info)} />, { nav: 'schedules' });
	});

	app.all('*', (c) => errorPage(c, 404, 'ROUTE_NOT_FOUND', `no dashboard page at ${c.req.path}`));
	app.onError((error, c) => {
		console.error('shardflow dashboard: unexpected error', error);
		return errorPage(c, 500, 'INTERNAL', 'internal error');
	});
	return app;
}

/** The proxy's path inside the dashboard. */
const API_PREFIX = '/api';

/**
 * The API path a proxied request is for, or null when it is none the proxy may
 * call. It is taken from the routed path inside the dashboard (percent-decoded
 * as the router decodes it, so `<dashboard>/%61pi/x` proxies `/x`, not a path
 * cut at the wrong length), must be an absolute path after dot segments are
 * resolved, and must not lead back into the dashboard under any spelling (the
 * API app has it at /dashboard wherever the host mounts that app).
 */
export function proxyTarget(routedPath: string): string | null {
	if (!routedPath.startsWith(`${API_PREFIX}/`)) return null;
	const url = new URL('https://api.invalid');
	url.pathname = routedPath.slice(API_PREFIX.length);
	const target = url.pathname;
	let decoded: string;
	try {
		decoded = decodeURIComponent(target);
	} catch {
		return null;
	}
	if (target.startsWith('//') || /^\/+dashboard(?:[/?#]|$)/i.test(decoded)) return null;
	return target;
}

const isPage = (c: DashboardContext) => !dashboardPath(c).startsWith('/api/') && !dashboardPath(c).startsWith('/live/');

/** Only a path of this dashboard may be the target after signing in (no open redirect). */
function safeNext(base: string, next: string | undefined): string {
	// Printable ASCII only: a control character cannot go into a Location header (and never belongs in a path).
	const ok = next !== undefined && next.startsWith(base) && /^(?:[/?#]|$)/.test(next.slice(base.length)) && /^[\x21-\x7e]*$/.test(next) && !next.startsWith('//');
	return ok ? next : base;
}

/** The list page's own query parameters (its form's fields and the pager's); any other is the list API's to judge. */
const OWN_PARAMS = new Set(['group', 'type', 'status', 'id', 'idPrefix', 'cursor', 'createdAfter', 'createdBefore', 'updatedAfter', 'updatedBefore', 'codeVersion', 'parent', 'order', 'limit']);
/** `attr.<name>` or `attr.<name>.<bound>` (the list API checks the name against the type's declaration). */
const ATTRIBUTE_PARAM = /^attr\.[A-Za-z][A-Za-z0-9_]{0,63}(?:\.(?:gt|gte|lt|lte))?$/;
/** `order=attr.<name>` (ascending) or `order=-attr.<name>` (descending). */
const ATTRIBUTE_ORDER = /^-?attr\.[A-Za-z][A-Za-z0-9_]{0,63}$/;

function readFilter(c: DashboardContext): ListFilter {
	const q = (name: string) => {
		const v = c.req.query(name)?.trim();
		return v ? v : undefined;
	};
	const status = (c.req.queries('status') ?? []).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean);
	// `order` and `limit` the page cannot read go to the list API as they are, which refuses them
	// with its own 400 and message (shown above the list), rather than being silently replaced.
	const rawOrder = q('order');
	const rawLimit = q('limit');
	const limit = rawLimit === undefined ? DEFAULT_PAGE_SIZE : /^\d{1,4}$/.test(rawLimit) ? Number(rawLimit) : NaN;
	const queries = Object.entries(c.req.queries() ?? {});
	// Every parameter the page does not own goes to the list API as it is, which refuses it (400,
	// naming it): dropped, `attr.__proto__=x` or `stauts=waiting` would list, and a bulk action
	// act on, every instance of the type.
	const unchecked: [string, string][] = queries.flatMap(([name, values]) => (OWN_PARAMS.has(name) || ATTRIBUTE_PARAM.test(name) ? [] : values.map((v) => [name, v] as [string, string])));
	const attributeOrder = rawOrder !== undefined && ATTRIBUTE_ORDER.test(rawOrder);
	if (rawOrder !== undefined && rawOrder !== 'created' && rawOrder !== 'updated' && !attributeOrder) unchecked.push(['order', rawOrder]);
	const badLimit = !(limit >= 1 && limit <= MAX_LIST_LIMIT);
	if (badLimit) unchecked.push(['limit', rawLimit!]);
	const filter: ListFilter = {
		status: [...new Set(status)],
		order: rawOrder === 'updated' ? 'updated' : attributeOrder ? (rawOrder as ListFilter['order']) : 'created',
		// Attribute conditions go to the list API as they are (`attr.amount.gte=100`, a repeated `attr.region` is "any of"); it refuses what it cannot read.
		attributes: queries.flatMap(([name, values]) => (ATTRIBUTE_PARAM.test(name) ? values.map((v) => v.trim()).filter(Boolean).map((v) => [name, v] as [string, string]) : [])),
		limit: badLimit ? DEFAULT_PAGE_SIZE : limit,
		...(unchecked.length ? { unchecked } : {}),
	};
	for (const key of ['group', 'type', 'id', 'idPrefix', 'cursor', 'createdAfter', 'createdBefore', 'updatedAfter', 'updatedBefore', 'codeVersion', 'parent'] as const) {
		const value = q(key);
		if (value !== undefined) filter[key] = value;
	}
	return filter;
}

/** The list API's query for a filter (bad values are left for the API to refuse with its own 400). */
function listQuery(filter: ListFilter): string {
	const q = new URLSearchParams();
	if (filter.type) q.set('type', filter.type);
	if (filter.group) q.set('group', filter.group);
	if (filter.status.length) q.set('status', filter.status.join(','));
	for (const key of ['createdAfter', 'createdBefore', 'updatedAfter', 'updatedBefore', 'codeVersion', 'parent', 'idPrefix', 'cursor'] as const) if (filter[key]) q.set(key, filter[key]!);
	if (filter.order !== 'created') q.set('order', filter.order);
	for (const [name, value] of filter.attributes) q.append(name, value);
	q.set('limit', String(filter.limit));
	for (const [key, value] of filter.unchecked ?? []) if (key === 'order' || key === 'limit') q.set(key, value); else q.append(key, value);
	return q.toString();
}

function matches(item: ListItem, filter: ListFilter): boolean {
	const bound = (v: string | undefined) => (v === undefined ? undefined : parseDatetimeText(v));
	const [ca, cb, ua, ub] = [bound(filter.createdAfter), bound(filter.createdBefore), bound(filter.updatedAfter), bound(filter.updatedBefore)];
	return (
		(!filter.type || item.type === filter.type) &&
		(filter.status.length === 0 || filter.status.includes(item.status)) &&
		(!filter.codeVersion || item.codeVersion === filter.codeVersion) &&
		(!filter.parent || item.parentId === filter.parent) &&
		(ca === undefined || item.createdAt > ca) &&
		(cb === undefined || item.createdAt < cb) &&
		(ua === undefined || item.updatedAt > ua) &&
		(ub === undefined || item.updatedAt < ub)
	);
}
