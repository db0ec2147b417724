import type { FC } from 'hono/jsx';
import type { ScheduleInfo, ScheduleRun } from '../../engine/schedule/schedule-engine';
import { StatusBadge, Time } from './layout';
import { safeJson } from './safe-json';
import { ConfirmDialog } from './confirm-dialog';
import { dashboardHref, instanceHref } from './paths';

/** A schedule as the page shows it: the API's answer, the next ticks, and each shown run's instance status now. */
export interface ScheduleView {
	info: ScheduleInfo;
	/** The next ticks that will run (empty while paused). */
	nextTicks: number[];
	/** Instance status per run tick (the index's current entry); 'deleted' when it is gone. */
	statuses: Record<number, string>;
}

const OUTCOME: Record<ScheduleRun['outcome'], string> = {
	started: 'started',
	skipped_overlap: 'skipped (the previous run had not finished)',
	refused: 'refused',
};

/** Every scheduled type: cron, state, next run and how the last run went. */
export const ScheduleList: FC<{ schedules: ScheduleView[] }> = ({ schedules }) => (
	<>
		<div class="page-head">
			<h1>Schedules</h1>
		</div>
		{schedules.length === 0 ? (
			<div class="empty card">
				No type has a schedule. A type gets one with <code>static schedule = {'{'} cron: '0 6 * * *' {'}'}</code> (docs/writing-workflows.md "Schedules").
			</div>
		) : (
			<div class="card table-card">
				<table class="schedules" id="schedules">
					<thead>
						<tr>
							<th scope="col">Type</th>
							<th scope="col">Cron (UTC)</th>
							<th scope="col">State</th>
							<th scope="col">Next run</th>
							<th scope="col">Last run</th>
						</tr>
					</thead>
					<tbody>
						{schedules.map(({ info, statuses }) => {
							const last = info.lastRuns[0];
							return (
								<tr data-type={info.type}>
									<td>
										<a href={dashboardHref(`/schedules/${encodeURIComponent(info.type)}`)}>{info.type}</a>
									</td>
									<td class="mono">{info.cron}</td>
									<td>
										<span class={`badge schedule-${info.state}`}>{info.state}</span>
									</td>
									<td>{info.nextRunAt ? <Time ms={info.nextRunAt} /> : <span class="muted">paused</span>}</td>
									<td>
										{last ? (
											<>
												<Time ms={last.tick} /> {last.instanceId && statuses[last.tick] ? <StatusBadge status={statuses[last.tick]!} /> : <span class="muted">{OUTCOME[last.outcome]}</span>}
											</>
										) : (
											<span class="muted">none yet</span>
										)}
									</td>
								</tr>
							);
						})}
					</tbody>
				</table>
			</div>
		)}
	</>
);

/** One type's schedule: what it runs, when it runs next, what its last runs did, and pause / resume. */
export const SchedulePage: FC<{ view: ScheduleView }> = ({ view: { info, nextTicks, statuses } }) => {
	const missed = info.lastRuns.reduce((sum, r) => sum + r.missed, 0);
	return (
		<>
			<div class="page-head">
				<div>
					<p class="crumbs">
						<a href={dashboardHref('/schedules')}>Schedules</a> / {info.type}
					</p>
					<h1>
						Schedule of <a href={dashboardHref(`/instances?type=${encodeURIComponent(info.type)}`)}>{info.type}</a>
					</h1>
				</div>
				<span id="schedule-state" class={`badge schedule-${info.state}`}>{info.state}</span>
			</div>
			<section class="card facts" aria-label="Summary">
				<dl>
					<div><dt>Cron (UTC)</dt><dd class="mono" id="schedule-cron">{info.cron}</dd></div>
					<div>
						<dt title="What happens to a tick while the previous run is unfinished">While a run is unfinished</dt>
						<dd>{info.overlap === 'skip' ? 'the next tick is skipped' : 'the next tick starts another run'}</dd>
					</div>
					<div><dt>Next run</dt><dd>{info.nextRunAt ? <Time ms={info.nextRunAt} /> : <span class="muted">none while paused</span>}</dd></div>
					<div>
						<dt title="Ticks the alarm could not run on time (downtime); only the latest of them ran">Missed ticks</dt>
						<dd id="schedule-missed">{missed.toLocaleString('en')} in the runs below</dd>
					</div>
				</dl>
				<div class="controls" role="group" aria-label="Controls">
					<button type="button" data-schedule-action="pause" disabled={info.state === 'paused'} data-confirm={`Pause the schedule of ${info.type}? No tick runs until it is resumed; runs already started go on.`}>
						Pause schedule
					</button>
					<button type="button" data-schedule-action="resume" disabled={info.state === 'active'} data-confirm={`Resume the schedule of ${info.type}? It runs again from the next tick after now; ticks that passed while paused are not run.`}>
						Resume schedule
					</button>
				</div>
				<div id="control-result" role="status" aria-live="polite"></div>
			</section>
			<div class="two-col">
				<section class="card" aria-label="Next runs">
					<h2>Next runs</h2>
					{nextTicks.length ? (
						<ol class="ticks" id="next-ticks">
							{nextTicks.map((tick) => (
								<li>
									<Time ms={tick} /> <span class="muted mono">{new Date(tick).toISOString().replace('.000Z', 'Z')}</span>
								</li>
							))}
						</ol>
					) : (
						<p class="muted" id="next-ticks">Paused: nothing runs until it is resumed.</p>
					)}
				</section>
				<section class="card" aria-label="About">
					<h2>How it runs</h2>
					<p class="muted small">
						Each tick creates one instance whose id names the tick (<code>{info.type}:sched:&lt;time&gt;</code>), once even across a crash. After downtime only
						the latest due tick runs, late; the older ones are counted as missed. A paused schedule runs nothing; a resume starts at the next tick after it.
					</p>
				</section>
			</div>
			<section class="card table-card" aria-label="Recent runs">
				<h2 class="table-title">Recent runs</h2>
				{info.lastRuns.length === 0 ? (
					<p class="empty">No tick has run yet.</p>
				) : (
					<table id="schedule-runs">
						<thead>
							<tr>
								<th scope="col">Tick</th>
								<th scope="col">Outcome</th>
								<th scope="col">Instance</th>
								<th scope="col" title="Older ticks missed during downtime that this run stood in for">Missed</th>
								<th scope="col">Ran</th>
							</tr>
						</thead>
						<tbody>
							{info.lastRuns.map((run) => (
								<tr data-tick={String(run.tick)} data-outcome={run.outcome}>
									<td><Time ms={run.tick} /></td>
									<td>
										{OUTCOME[run.outcome]}
										{run.error ? <div class="muted small">{run.error}</div> : null}
									</td>
									<td class="id">
										{run.instanceId && run.outcome === 'started' ? (
											<>
												<a href={instanceHref(run.instanceId)}>{run.instanceId}</a> {statuses[run.tick] ? <StatusBadge status={statuses[run.tick]!} /> : null}
											</>
										) : (
											<span class="muted">—</span>
										)}
									</td>
									<td class={run.missed ? 'warn' : 'muted'}>{run.missed.toLocaleString('en')}</td>
									<td>
										{run.at - run.tick > 1000 ? <span title="handled after its tick">late, </span> : null}
										<Time ms={run.at} />
									</td>
								</tr>
							))}
						</tbody>
					</table>
				)}
			</section>
			<ConfirmDialog />
			<script type="application/json" id="schedule-config" dangerouslySetInnerHTML={{ __html: safeJson({ type: info.type }) }} />
			<script type="module" src={dashboardHref('/schedule.js')}></script>
		</>
	);
};
