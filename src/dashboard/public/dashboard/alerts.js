// The overview's alerts (GET /alerts): failing passes, stuck instances, the index backlog and
// missed schedule ticks, each with a link to where to look: the filtered list when the index can
// answer it (stuck: the status, last changed before the threshold), else the instances named
// (the index does not know an instance is failing or behind), else the schedule's page.
import { base } from './common.js';

const TITLES = /** @type {Record<string, string>} */ ({
	failing_passes: 'Passes failing in a row',
	stuck: 'Stuck',
	index_backlog: 'Index backlog',
	schedule_missed_ticks: 'Missed schedule ticks',
	schedule_overdue: 'Schedule overdue',
});

/**
 * @typedef {{ type: string; kind: string; status?: string; count: number; message: string; since?: number;
 *   list?: { type: string; status: string; updatedBefore: number; order: string; group?: string }; ids?: string[] }} Alert
 */

/** @param {Alert} alert @returns {{ href: string; text: string }[]} */
function linksOf(alert) {
	if (alert.list) {
		const { type, status, updatedBefore, order } = alert.list;
		const q = new URLSearchParams({ type, status, updatedBefore: String(updatedBefore), order });
		// Another group's alert lists from that group's index (docs/residency.md).
		if (alert.list.group) q.set('group', alert.list.group);
		return [{ href: `${base}/instances?${q}`, text: `List the ${alert.count.toLocaleString('en')} ${alert.list.status} past the threshold` }];
	}
	if (alert.ids?.length) return alert.ids.map((id) => ({ href: `${base}/instances/${encodeURIComponent(id)}`, text: id }));
	if (alert.kind.startsWith('schedule_')) return [{ href: `${base}/schedules/${encodeURIComponent(alert.type)}`, text: 'The schedule' }];
	return [];
}

/**
 * Draws `alerts` into `el` (the section the overview renders), or says all is well; null: they could not be read.
 * @param {HTMLElement} el
 * @param {Alert[] | null} alerts
 */
export function drawAlerts(el, alerts) {
	const doc = el.ownerDocument;
	el.replaceChildren();
	el.dataset.alerts = alerts === null ? 'unknown' : String(alerts.length);
	const head = doc.createElement('h2');
	head.textContent = alerts === null ? 'Alerts could not be read' : alerts.length ? `Alerts (${alerts.length})` : 'No alerts';
	el.appendChild(head);
	el.classList.toggle('firing', !!alerts?.length);
	if (!alerts?.length) {
		const p = doc.createElement('p');
		p.className = 'muted';
		p.textContent = alerts === null ? 'GET /alerts failed; the counts below are still current.' : 'No failing passes, stuck instances, index backlog or missed schedule ticks.';
		el.appendChild(p);
		return;
	}
	const list = doc.createElement('ul');
	for (const alert of alerts) {
		const li = doc.createElement('li');
		li.className = `alert alert-${alert.kind}`;
		li.dataset.kind = alert.kind;
		li.dataset.type = alert.type;
		const title = doc.createElement('strong');
		title.textContent = `${TITLES[alert.kind] ?? alert.kind}${alert.status ? ` (${alert.status})` : ''} · ${alert.type}`;
		const text = doc.createElement('p');
		text.textContent = alert.message;
		li.append(title, text);
		const links = linksOf(alert);
		if (links.length) {
			const nav = doc.createElement('p');
			nav.className = 'alert-links';
			for (const { href, text: label } of links) {
				const a = doc.createElement('a');
				a.href = href;
				a.textContent = label;
				nav.appendChild(a);
			}
			li.appendChild(nav);
		}
		list.appendChild(li);
	}
	el.appendChild(list);
}
