import type { Child, FC } from 'hono/jsx';
import { dashboardHref } from './paths';

/** The page shell: header with navigation, the stylesheet and the shared client script. */
export const Layout: FC<{ title: string; nav?: 'overview' | 'instances' | 'schedules'; loggedIn?: boolean; children?: Child }> = ({ title, nav, loggedIn, children }) => (
	<html lang="en">
		<head>
			<meta charset="utf-8" />
			<meta name="viewport" content="width=device-width, initial-scale=1" />
			<title>{`${title} · shardflow`}</title>
			<link rel="stylesheet" href={dashboardHref('/dashboard.css')} />
			<script type="module" src={dashboardHref('/common.js')}></script>
		</head>
		<body>
			<header class="topbar">
				<a class="brand" href={dashboardHref()}>
					<span class="logo" aria-hidden="true">◆</span> shardflow
				</a>
				<nav aria-label="Main">
					<a href={dashboardHref()} aria-current={nav === 'overview' ? 'page' : undefined}>Overview</a>
					<a href={dashboardHref('/instances')} aria-current={nav === 'instances' ? 'page' : undefined}>Instances</a>
					<a href={dashboardHref('/schedules')} aria-current={nav === 'schedules' ? 'page' : undefined}>Schedules</a>
				</nav>
				{loggedIn ? (
					<form method="post" action={dashboardHref('/logout')} class="logout">
						<button type="submit" class="link">Log out</button>
					</form>
				) : null}
			</header>
			<main>{children}</main>
		</body>
	</html>
);

/** A status as a coloured badge. */
export const StatusBadge: FC<{ status: string }> = ({ status }) => <span class={`badge status-${status}`} data-field="status">{status}</span>;

/**
 * A timestamp: ISO (UTC) without JavaScript; local time with a relative form ("3 min ago") once
 * common.js runs. A value that is no time (beyond `Date`'s range, stored before such values were
 * refused) shows as it is, so one odd instance never takes a whole page down.
 */
export const Time: FC<{ ms: number | null | undefined; field?: string }> = ({ ms, field }) => {
	if (ms == null) return <span class="muted">—</span>;
	const iso = isoTime(ms);
	if (iso === undefined) return <span class="mono" data-field={field} data-invalid-time title="not a time JavaScript can show">{String(ms)}</span>;
	return <time datetime={iso} data-ms={String(ms)} data-field={field}>{iso.replace('T', ' ').slice(0, 19)} UTC</time>;
};

/** `ms` as ISO 8601 (UTC), or undefined when it is no valid time (never throws, unlike `toISOString`). */
export function isoTime(ms: number): string | undefined {
	const date = new Date(ms);
	return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** A JSON value, pretty-printed; long ones start collapsed. */
export const JsonBlock: FC<{ value: unknown; label: string; open?: boolean }> = ({ value, label, open }) => {
	const text = value === undefined ? 'undefined' : JSON.stringify(value, null, 2);
	const long = text.length > 600 || text.split('\n').length > 16;
	return (
		<details class="json" open={open ?? !long}>
			<summary>
				{label} <span class="muted">{long ? `(${text.length.toLocaleString('en')} chars)` : ''}</span>
			</summary>
			<pre>{text}</pre>
		</details>
	);
};

export const ErrorBanner: FC<{ message: string; code?: string }> = ({ message, code }) => (
	<div class="banner error" role="alert">
		{code ? <strong>{code}</strong> : null} {message}
	</div>
);
