import type { FC } from 'hono/jsx';
import type { TypeMetrics } from '../../engine/index/run-metrics';
import type { Alert } from '../../api/alerts';
import { WORKFLOW_STATUSES } from '../../engine/support/statuses';
import { StatusBadge } from './layout';
import { safeJson } from './safe-json';
import { dashboardHref } from './paths';
import { plural } from '../public/dashboard/plural.js';

export interface TypeSummary {
	type: string;
	shards: number;
	previousShards?: number;
	counts: Record<string, number>;
	backlog: { pending: number; oldestAgeMs: number | null; oldest: { id: string; since: number }[] };
}

/**
 * Every type with its counts per status, shards and delivery backlog (from GET /types), and its
 * run metrics (GET /types/:type/metrics), drawn and kept current by overview.js.
 */
export const Overview: FC<{
	types: TypeSummary[];
	metrics: Record<string, TypeMetrics | null>;
	scheduled: string[];
	alerts: Alert[] | null;
	/** The registry's groups (the default first) and the one shown (docs/residency.md); links appear when there are several. */
	groups?: { name: string; jurisdiction: string | null }[];
	group?: string | undefined;
}> = ({ types, metrics, scheduled, alerts, groups = [], group }) => {
	// The list links keep the group: its counts are that group's.
	const inGroup = group ? `&group=${encodeURIComponent(group)}` : '';
	return (
	<>
		<div class="page-head">
			<h1>Workflow types</h1>
			{groups.length > 1 ? (
				<nav class="group-switch" id="group-switch" aria-label="Group">
					{groups.map((g, i) => {
						const selected = i === 0 ? !group : g.name === group;
						return (
							<a href={dashboardHref(i === 0 ? '' : `?group=${encodeURIComponent(g.name)}`)} class={selected ? 'group-badge selected' : 'group-badge'} aria-current={selected ? 'page' : undefined}>
								{g.name}
								{g.jurisdiction ? ` · ${g.jurisdiction}` : ''}
							</a>
						);
					})}
				</nav>
			) : null}
			<span id="live" class="live" data-state="connecting" role="status" aria-live="polite">
				Updating…
			</span>
		</div>
		<p class="muted intro">
			Counts per status come from the sharded index (it lags an instance by ~20 ms) and are read again every 30 seconds, with the alerts. Runs per minute, run times and the
			backlog come from counters the index shards keep as entries land, read again every 5 seconds.
		</p>
		{/* Drawn by alerts.js from the config below, and again with every reading of the counts. */}
		<section class="alerts" id="alerts" aria-label="Alerts" aria-live="polite"></section>
		{types.length === 0 ? (
			<div class="empty">No workflow types are registered. Add one to the registry the Worker passes to <code>createApp</code>.</div>
		) : (
			<div class="cards">
				{types.map((t) => {
					const total = Object.values(t.counts).reduce((a, b) => a + b, 0);
					return (
						<section class="card type-card" data-type={t.type}>
							<header>
								<h2>
									<a href={dashboardHref(`/instances?type=${encodeURIComponent(t.type)}${inGroup}`)}>{t.type}</a>
								</h2>
								<span class="total" data-field="total">{plural(total, 'instance')}</span>
							</header>
							<ul class="counts">
								{WORKFLOW_STATUSES.map((status) => (
									<li class={t.counts[status] ? '' : 'zero'}>
										<a href={dashboardHref(`/instances?type=${encodeURIComponent(t.type)}&status=${status}${inGroup}`)}>
											<StatusBadge status={status} />
											<span class="count" data-count={status}>{(t.counts[status] ?? 0).toLocaleString('en')}</span>
										</a>
									</li>
								))}
							</ul>
							<div class="metrics" data-metrics={t.type} aria-label={`${t.type} runs`}>
								{metrics[t.type] === null ? <p class="muted">Run metrics could not be read.</p> : null}
							</div>
							<footer>
								<span>
									{t.shards} index shard{t.shards === 1 ? '' : 's'}
									{t.previousShards !== undefined ? ` (resizing from ${t.previousShards})` : ''}
								</span>
								{scheduled.includes(t.type) ? <a href={dashboardHref(`/schedules/${encodeURIComponent(t.type)}`)}>Schedule</a> : null}
								<span class={t.backlog.pending ? 'warn' : 'muted'} data-field="backlog" title="Instances whose index update has failed and is being retried">
									{backlogText(t.backlog)}
								</span>
							</footer>
						</section>
					);
				})}
			</div>
		)}
		<script type="application/json" id="overview-config" dangerouslySetInnerHTML={{ __html: safeJson({ types: types.map((t) => t.type), metrics, alerts, ...(group ? { group } : {}) }) }} />
		<script type="module" src={dashboardHref('/overview.js')}></script>
	</>
	);
};

export function backlogText(backlog: { pending: number; oldestAgeMs: number | null }): string {
	return backlog.pending ? `index backlog: ${backlog.pending} pending, oldest ${Math.round((backlog.oldestAgeMs ?? 0) / 1000)} s` : 'index backlog: none';
}
