import type { Context } from 'hono';
import { createContext, useContext } from 'hono/jsx';
import { basePath } from 'hono/route';

/**
 * Where the dashboard is mounted: `/dashboard` when `createApp(registry)` is the
 * Worker itself, `/ops/dashboard` under a host's `app.route('/ops', createApp(...))`
 * (any prefix, parameters included). Every link, form, redirect, cookie path and
 * script URL is built on it, so the dashboard works wherever it is mounted.
 */
export function dashboardBase(c: Context): string {
	return basePath(c);
}

/** The request's path inside the dashboard (`/instances/x` for `/ops/dashboard/instances/x`; `/` for the overview). */
export function dashboardPath(c: Context): string {
	return c.req.path.slice(dashboardBase(c).length) || '/';
}

/** The mount for server-rendered pages: views read it with `useDashboardBase()`. */
export const DashboardBase = createContext('/dashboard');

export function useDashboardBase(): string {
	return useContext(DashboardBase);
}
