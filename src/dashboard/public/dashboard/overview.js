// The overview, live: draws each type's run metrics (runs per minute over the last
// hour, run time percentiles, the last hour and day) and reads them again, with the
// delivery backlog, every 5 seconds while the page is shown (the counts per status every 30 s).
// The metrics come from counters the index shards keep (docs/dashboard.md): reading
// them costs the same for a hundred instances as for millions.
import { api, duration } from './common.js';
import { plural } from './plural.js';
import { drawAlerts } from './alerts.js';

const config = JSON.parse(/** @type {HTMLElement} */ (document.getElementById('overview-config')).textContent ?? '{}');
const liveEl = /** @type {HTMLElement} */ (document.getElementById('live'));
const alertsEl = /** @type {HTMLElement} */ (document.getElementById('alerts'));
const REFRESH_MS = 5000;
const fmt = (/** @type {number | string} */ n) => Number(n).toLocaleString('en');
/** A duration whose numbers keep their units ("3 min 14 s" may wrap between "3 min" and "14 s", never inside one). */
const ms = (/** @type {number | null | undefined} */ v) => (v === null || v === undefined ? '—' : duration(v).replace(/(\d) /g, '$1\u00a0'));

/** @param {HTMLElement} el @param {any} m */
function drawMetrics(el, m) {
	const doc = el.ownerDocument;
	el.replaceChildren();
	const max = Math.max(1, ...m.perMinute.map((/** @type {Record<string, number>} */ x) => Math.max(x.started, x.completed + x.errored + x.terminated)));
	const chart = doc.createElement('div');
	chart.className = 'spark';
	chart.setAttribute('role', 'img');
	const hourFailed = m.hour.errored + m.hour.terminated;
	chart.setAttribute('aria-label', `Last 60 minutes: ${m.hour.started} started, ${m.hour.completed} completed, ${hourFailed} failed or terminated`);
	for (const x of m.perMinute) {
		const col = doc.createElement('div');
		col.className = 'spark-col';
		const at = new Date(x.minute * 60_000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
		col.title = `${at}: ${x.started} started, ${x.completed} completed, ${x.errored} errored, ${x.terminated} terminated`;
		const started = doc.createElement('i');
		started.className = 'spark-started';
		started.style.height = `${(x.started / max) * 100}%`;
		const done = doc.createElement('i');
		done.className = 'spark-done';
		done.style.height = `${(x.completed / max) * 100}%`;
		const failed = doc.createElement('i');
		failed.className = 'spark-failed';
		failed.style.height = `${((x.errored + x.terminated) / max) * 100}%`;
		failed.style.bottom = done.style.height; // stacked on the completed ones
		col.append(started, done, failed);
		chart.appendChild(col);
	}
	const head = doc.createElement('div');
	head.className = 'spark-head';
	head.innerHTML = '<span>Runs per minute, last hour</span><span class="spark-peak"></span>';
	const busiest = Math.max(0, ...m.perMinute.map((/** @type {Record<string, number>} */ x) => Math.max(x.started, x.completed + x.errored + x.terminated)));
	/** @type {HTMLElement} */ (head.querySelector('.spark-peak')).textContent = busiest ? `peak ${fmt(busiest)}/min` : 'no runs';
	const axis = doc.createElement('div');
	axis.className = 'spark-axis muted';
	axis.innerHTML = '<span>60 min ago</span><span>now</span>';
	const key = doc.createElement('div');
	key.className = 'spark-key muted';
	key.innerHTML = '<span><i class="spark-started"></i>started</span><span><i class="spark-done"></i>completed</span><span><i class="spark-failed"></i>errored or terminated</span>';
	const runs = doc.createElement('table');
	runs.className = 'metric-table';
	runs.innerHTML = '<thead><tr><th scope="col">Runs</th><th scope="col">Started</th><th scope="col">Completed</th><th scope="col">Errored</th><th scope="col">Terminated</th></tr></thead><tbody></tbody>';
	const times = doc.createElement('table');
	times.className = 'metric-table';
	times.innerHTML = '<thead><tr><th scope="col" title="Time from creation to completed or errored">Run time</th><th scope="col">p50</th><th scope="col">p90</th><th scope="col">p99</th><th scope="col">Runs</th></tr></thead><tbody></tbody>';
	for (const [label, window, w] of /** @type {const} */ ([['Last hour', 'hour', m.hour], ['Last day', 'day', m.day]])) {
		/**
		 * @param {HTMLTableElement} table
		 * @param {string[]} cells
		 * @param {string[]} fields
		 */
		const row = (table, cells, fields) => {
			const tr = doc.createElement('tr');
			tr.dataset.window = window;
			cells.forEach((text, i) => {
				const td = doc.createElement(i === 0 ? 'th' : 'td');
				if (i === 0) td.setAttribute('scope', 'row');
				else td.dataset.metric = fields[i - 1] ?? '';
				td.textContent = text;
				tr.appendChild(td);
			});
			table.tBodies[0]?.appendChild(tr);
			return tr;
		};
		const tr = row(runs, [label, fmt(w.started), fmt(w.completed), fmt(w.errored), fmt(w.terminated)], ['started', 'completed', 'errored', 'terminated']);
		if (w.errored > 0) tr.querySelector('[data-metric="errored"]')?.classList.add('bad');
		const d = w.durationMs;
		row(times, [label, ms(d.p50), ms(d.p90), ms(d.p99), fmt(d.runs)], ['p50', 'p90', 'p99', 'runs']);
	}
	el.append(head, chart, axis, key, runs, times);
}

/** @param {{ type: string; counts: Record<string, number>; backlog: { pending: number; oldestAgeMs?: number | null } }} t One type, as `GET /types` answers it. */
function drawCounts(t) {
	const card = document.querySelector(`[data-type="${CSS.escape(t.type)}"]`);
	if (!card) return;
	let total = 0;
	card.querySelectorAll('[data-count]').forEach((node) => {
		const el = /** @type {HTMLElement} */ (node);
		const n = t.counts[el.dataset.count ?? ''] ?? 0;
		total += n;
		el.textContent = fmt(n);
		el.closest('li')?.classList.toggle('zero', n === 0);
	});
	const totalEl = card.querySelector('[data-field="total"]');
	if (totalEl) totalEl.textContent = plural(total, 'instance');
	drawBacklog(t.type, t.backlog);
}

/**
 * @param {string} type
 * @param {{ pending: number; oldestAgeMs?: number | null }} backlog
 */
function drawBacklog(type, backlog) {
	const el = /** @type {HTMLElement | null} */ (document.querySelector(`[data-type="${CSS.escape(type)}"] [data-field="backlog"]`));
	if (!el) return;
	el.textContent = backlog.pending ? `index backlog: ${backlog.pending} pending, oldest ${Math.round((backlog.oldestAgeMs ?? 0) / 1000)} s` : 'index backlog: none';
	el.className = backlog.pending ? 'warn' : 'muted';
}

/** @param {Record<string, any>} metrics Each type's run metrics (`GET /types/{type}/metrics`), or null when its read failed. */
function drawAll(metrics) {
	for (const [type, m] of Object.entries(metrics)) {
		const el = /** @type {HTMLElement | null} */ (document.querySelector(`[data-metrics="${CSS.escape(type)}"]`));
		if (el && m) drawMetrics(el, m);
	}
}

// The counts per status (GET /types) still count index entries (docs/dashboard.md): read every
// 30 s, not every 5 s like the metrics, which cost the same at any size.
const COUNTS_EVERY = 6;
let round = 0;
async function refresh() {
	const withCounts = ++round % COUNTS_EVERY === 0;
	// The group shown (docs/residency.md): its counts, metrics and alerts come from its own shards.
	const inGroup = config.group ? `?group=${encodeURIComponent(config.group)}` : '';
	const [types, alerts, ...metrics] = await Promise.all([withCounts ? api(`/types${inGroup}`) : null, withCounts ? api(`/alerts${inGroup}`) : null, ...config.types.map((/** @type {string} */ t) => api(`/types/${encodeURIComponent(t)}/metrics${inGroup}`))]);
	const ok = (types === null || types.ok) && metrics.every((r) => r.ok);
	if (types?.ok) types.body.types.forEach(drawCounts);
	if (alerts) drawAlerts(alertsEl, alerts.ok ? alerts.body.alerts : null);
	// The backlog comes with the metrics too: it stays current between two readings of the counts.
	metrics.forEach((r, i) => r.ok && drawBacklog(config.types[i], r.body.backlog));
	drawAll(Object.fromEntries(config.types.map((/** @type {string} */ t, /** @type {number} */ i) => [t, metrics[i].ok ? metrics[i].body : null])));
	liveEl.dataset.state = ok ? 'live' : 'reconnecting';
	liveEl.textContent = ok ? `Updated ${new Date().toLocaleTimeString()}` : 'Could not update; retrying';
}

drawAll(config.metrics);
drawAlerts(alertsEl, config.alerts);
liveEl.dataset.state = 'live';
liveEl.textContent = `Updated ${new Date().toLocaleTimeString()}`;
// Only while the page is shown: a tab in the background reads nothing.
async function loop() {
	if (document.visibilityState === 'visible') await refresh().catch(() => {});
	setTimeout(loop, REFRESH_MS);
}
setTimeout(loop, REFRESH_MS);
