import { useDashboardBase } from '../mount';

/**
 * Where the dashboard's pages live: every link a view builds goes through here.
 * The base is where this request found the dashboard (`/dashboard`, or
 * `/ops/dashboard` under a host's `app.route('/ops', createApp(...))`), read
 * while the page renders (src/dashboard/mount.ts), so call these during render.
 */
export function dashboardHref(path = ''): string {
	return `${useDashboardBase()}${path}`;
}

/** The page of one instance. */
export const instanceHref = (id: string): string => dashboardHref(`/instances/${encodeURIComponent(id)}`);
