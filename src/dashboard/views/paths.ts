/**
 * Where the dashboard's pages live: every link a view builds goes through here, so the
 * dashboard can be mounted under another path by changing this one place.
 */
export const DASHBOARD_BASE = '/dashboard';

/** A dashboard path (`/instances?type=x`) as a link. */
export function dashboardHref(path = ''): string {
	return `${DASHBOARD_BASE}${path}`;
}

/** The page of one instance. */
export const instanceHref = (id: string): string => dashboardHref(`/instances/${encodeURIComponent(id)}`);
