// Bulk operations from the dashboard: on the list, an action on every instance its filter
// matches (a dry run counts them first, and the confirmation says how many); then the job's
// progress, followed live until it ends, with Cancel. The job page (/dashboard/bulk/:id)
// follows one job the same way.
import { api, base, wireEventEditor } from './common.js';
import { confirmAction } from './confirm.js';
import { plural } from './plural.js';

const card = /** @type {HTMLElement | null} */ (document.getElementById('bulk-progress'));
const $ = (/** @type {string} */ selector) => /** @type {HTMLElement} */ (card?.querySelector(selector));
const POLL_MS = 700;

/**
 * The list's filter as a bulk query (POST /workflows/bulk: attribute conditions typed by the
 * attribute's kind). Never broader than the list: a parameter the page passed to the API
 * unread, or a condition on an attribute the type does not declare, throws instead of being left out.
 * @param {Record<string, any>} filter
 * @param {Record<string, string>} declared
 */
export function bulkQuery(filter, declared) {
	if (filter.unchecked?.length) throw new Error(`The filter has parameters the list did not read (${filter.unchecked.map((/** @type {[string, string]} */ [name]) => name).join(', ')}): fix the filter first.`);
	/** @type {Record<string, unknown>} */
	const query = { type: filter.type };
	if (filter.status.length) query.status = filter.status;
	// Time bounds go as the list sent them (ms or ISO 8601 text): the API reads both by one rule.
	for (const key of ['createdAfter', 'createdBefore', 'updatedAfter', 'updatedBefore']) if (filter[key]) query[key] = filter[key];
	for (const key of ['codeVersion', 'parent', 'idPrefix']) if (filter[key]) query[key] = filter[key];
	/** @type {Record<string, any>} */
	const attributes = {};
	for (const [param, raw] of filter.attributes) {
		const [, name, bound] = param.split('.');
		const kind = Object.hasOwn(declared, name) ? declared[name] : undefined;
		if (!kind) throw new Error(`${param}: ${filter.type} declares no search attribute ${JSON.stringify(name)}; fix the filter first.`);
		const value = kind === 'number' ? Number(raw) : kind === 'boolean' ? raw === 'true' : kind === 'datetime' && /^-?\d+$/.test(raw) ? Number(raw) : raw;
		if (bound) attributes[name] = { ...(attributes[name] && typeof attributes[name] === 'object' && !Array.isArray(attributes[name]) ? attributes[name] : {}), [bound]: value };
		else attributes[name] = name in attributes ? [].concat(attributes[name], value) : value;
	}
	if (Object.keys(attributes).length) query.attributes = attributes;
	return query;
}

/** @type {Record<string, string>} */
const ACTION_LABELS = { terminate: 'Terminate', pause: 'Pause', resume: 'Resume', restart: 'Restart', delete: 'Delete', reindex: 'Re-index', sendEvent: 'Send an event to' };
/** Why an instance was skipped, for people (the code stays visible). */
/** @type {Record<string, string>} */
const REASONS = {
	no_longer_matches: 'no longer matched the filter when reached',
	not_found: 'gone when reached',
	INVALID_STATE: 'INVALID_STATE (the action does not apply in its status)',
};
const skippedTotal = (/** @type {BulkProgress} */ p) => Object.values(p.skipped ?? {}).reduce((a, b) => a + Number(b), 0);

/**
 * @typedef {{ id: string; state: string; dryRun: boolean; action: { kind: string } & Record<string, unknown>; query: Record<string, any>; matched: number; done: number; skipped: Record<string, number>; failed: number; errors: { id: string; code: string; message: string }[] }} BulkProgress
 * A bulk operation's progress, as `GET /bulk/{id}` answers it.
 */

/**
 * Draws a job's progress in the card.
 * @param {BulkProgress} p
 */
export function showProgress(p) {
	if (!card) return;
	card.hidden = false;
	card.dataset.job = p.id;
	card.dataset.state = p.state;
	const skipped = skippedTotal(p);
	const handled = p.done + skipped + p.failed;
	const verb = ACTION_LABELS[p.action.kind] ?? p.action.kind;
	$('#bulk-title').textContent = `${p.dryRun ? 'Dry run: ' : ''}${verb} the ${p.query.type ?? ''} instances of a filter`;
	const state = $('#bulk-state');
	state.textContent = p.state;
	state.className = `badge status-${p.state === 'completed' ? 'completed' : p.state === 'cancelled' ? 'terminated' : 'running'}`;
	for (const [key, value] of Object.entries({ matched: p.matched, done: p.done, skipped, failed: p.failed })) $(`[data-count="${key}"]`).textContent = value.toLocaleString();
	const bar = $('#bulk-bar');
	bar.setAttribute('aria-valuemax', String(p.matched));
	bar.setAttribute('aria-valuenow', String(handled));
	for (const part of /** @type {const} */ (['done', 'skipped', 'failed'])) {
		const n = part === 'skipped' ? skipped : p[part];
		/** @type {HTMLElement} */ (bar.querySelector(`[data-part="${part}"]`)).style.width = p.matched ? `${(100 * n) / p.matched}%` : '0';
	}
	$('#bulk-reasons').replaceChildren(
		...Object.entries(p.skipped ?? {}).map(([reason, n]) => {
			const li = document.createElement('li');
			li.dataset.reason = reason;
			li.textContent = `${plural(Number(n), 'instance')} skipped: ${REASONS[reason] ?? reason}`;
			return li;
		}),
	);
	$('#bulk-errors').replaceChildren(
		...(p.errors ?? []).map((e) => {
			const li = document.createElement('li');
			const link = document.createElement('a');
			link.href = `${base}/instances/${encodeURIComponent(e.id)}`;
			link.textContent = e.id;
			li.append(link, ` failed: ${e.code} ${e.message}`);
			return li;
		}),
	);
	$('#bulk-cancel').hidden = p.state !== 'running';
	const link = /** @type {HTMLAnchorElement | null} */ (card.querySelector('#bulk-link'));
	if (link) {
		link.href = `${base}/bulk/${encodeURIComponent(p.id)}`;
		link.hidden = false;
	}
}

/** Follows a job until it ends; resolves with its last progress (or null when it cannot be read). */
/** @param {string} id */
export async function follow(id) {
	for (;;) {
		const res = await api(`/bulk/${encodeURIComponent(id)}`);
		if (!res.ok) {
			$('#bulk-note').textContent = `${res.body?.error?.code ?? res.status} ${res.body?.error?.message ?? ''}`;
			return null;
		}
		showProgress(res.body);
		if (res.body.state !== 'running') return res.body;
		await new Promise((r) => setTimeout(r, POLL_MS));
	}
}

$('#bulk-cancel')?.addEventListener('click', async () => {
	const id = card?.dataset.job;
	if (!id) return;
	const button = /** @type {HTMLButtonElement} */ ($('#bulk-cancel'));
	button.disabled = true;
	const res = await api(`/bulk/${encodeURIComponent(id)}/cancel`, { method: 'POST' });
	button.disabled = false;
	if (res.ok) showProgress(res.body);
	else $('#bulk-note').textContent = `${res.body?.error?.code ?? res.status} ${res.body?.error?.message ?? ''}`;
});

// ---- the list: an action on its filter ----
/** Finished jobs are announced on the document, so the list (list.js) reads its page again. */
export const BULK_FINISHED = 'shardflow:bulk-finished';

/**
 * The action the form asks for, as POST /workflows/bulk takes it, and how the confirmation says
 * it; `error` when the form cannot be sent (a payload that is not JSON).
 * @param {HTMLFormElement} form
 * @returns {{ action: Record<string, unknown>, words: string } | { error: string }}
 */
function actionOf(form) {
	const data = new FormData(form);
	const kind = String(data.get('kind'));
	const label = /** @type {HTMLSelectElement} */ (form.elements.namedItem('kind')).selectedOptions[0]?.textContent ?? kind;
	const text = (/** @type {string} */ name) => String(data.get(name) ?? '').trim();
	switch (kind) {
		case 'terminate': {
			const rollback = data.get('rollback') === 'on';
			return { action: { kind, rollback }, words: rollback ? 'Terminate, running their rollbacks first,' : 'Terminate' };
		}
		case 'delete': {
			const [archive, terminate] = [data.get('archive') === 'on', data.get('terminate') === 'on'];
			const how = [terminate ? 'terminating unfinished ones' : '', archive ? 'archiving each' : ''].filter(Boolean).join(' and ');
			return { action: { kind, archive, terminate }, words: how ? `Delete, ${how} first,` : 'Delete' };
		}
		case 'restart': {
			const from = text('from');
			return { action: { kind, ...(from ? { from } : {}) }, words: from ? `Restart from step "${from}"` : 'Restart' };
		}
		case 'sendEvent': {
			const event = text('event');
			const key = text('idempotencyKey');
			const raw = text('payload');
			let payload;
			if (raw) {
				try {
					payload = JSON.parse(raw);
				} catch (error) {
					return { error: `MALFORMED_JSON the payload is not JSON: ${error instanceof Error ? error.message : error}` };
				}
			}
			return { action: { kind, event, ...(payload !== undefined ? { payload } : {}), ...(key ? { idempotencyKey: key } : {}) }, words: `Send "${event}"${key ? ` (idempotency key ${key})` : ''} to` };
		}
		default:
			return { action: { kind }, words: label };
	}
}

const start = /** @type {HTMLButtonElement | null} */ (document.getElementById('bulk-start'));
const listConfigEl = document.getElementById('list-config');
const form = /** @type {HTMLFormElement | null} */ (document.getElementById('bulk-form'));
if (start && listConfigEl && form) {
	const config = JSON.parse(listConfigEl.textContent ?? '{}');
	const choice = /** @type {HTMLSelectElement} */ (document.getElementById('bulk-action'));
	const note = /** @type {HTMLElement} */ (document.getElementById('bulk-tools-note'));
	const eventSelect = /** @type {HTMLSelectElement | null} */ (document.getElementById('bulk-event-name'));
	if (eventSelect) {
		const events = JSON.parse(document.getElementById('bulk-events')?.textContent ?? '[]');
		const el = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
		wireEventEditor(events, eventSelect, /** @type {HTMLTextAreaElement} */ (el('bulk-event-payload')), el('bulk-event-schema'), el('bulk-event-note'));
	}
	// Each action's options show while it is chosen.
	const showOptions = () => form.querySelectorAll('[data-for]').forEach((node) => ((/** @type {HTMLElement} */ (node)).hidden = /** @type {HTMLElement} */ (node).dataset.for !== choice.value));
	choice.addEventListener('change', showOptions);
	showOptions();
	form.addEventListener('submit', (e) => e.preventDefault());
	// A refusal names what was asked: once the action or its options change, it no longer applies.
	const clearNote = () => {
		if (!start.disabled) note.textContent = '';
	};
	form.addEventListener('input', clearNote);
	choice.addEventListener('change', clearNote);
	start.addEventListener('click', async () => {
		const asked = actionOf(form);
		if ('error' in asked) return void (note.textContent = asked.error);
		const { action, words } = asked;
		let query;
		try {
			query = bulkQuery(config.filter, config.declared ?? {});
		} catch (error) {
			return void (note.textContent = error instanceof Error ? error.message : String(error));
		}
		const send = (/** @type {boolean} */ dryRun) => api('/workflows/bulk', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, action, dryRun, ...(config.filter.group ? { group: config.filter.group } : {}) }) });
		start.disabled = true;
		note.textContent = 'Counting the instances this filter matches…';
		try {
			// The dry run: nothing is acted on, the job walks the query and counts (and the API checks the action first).
			const dry = await send(true);
			if (!dry.ok) return void (note.textContent = `${dry.body?.error?.code ?? dry.status} ${dry.body?.error?.message ?? ''}`);
			let counted = dry.body;
			while (counted.state === 'running') {
				await new Promise((r) => setTimeout(r, 300));
				const res = await api(`/bulk/${encodeURIComponent(counted.id)}`);
				if (!res.ok) return void (note.textContent = `${res.body?.error?.code ?? res.status} ${res.body?.error?.message ?? ''}`);
				counted = res.body;
				note.textContent = `Counting… ${counted.matched.toLocaleString()} so far`;
			}
			note.textContent = '';
			if (counted.matched === 0) return void (note.textContent = `No ${config.filter.type} instance matches this filter: nothing to ${choice.value}.`);
			const ok = await confirmAction(
				`${words} ${plural(counted.matched, `${config.filter.type} instance`)} matching this filter? (Counted now by a dry run. Instances that no longer match when the job reaches them are skipped; what is done stays done if you cancel.)`,
				true,
			);
			if (!ok) return;
			const res = await send(false);
			if (!res.ok) return void (note.textContent = `${res.body?.error?.code ?? res.status} ${res.body?.error?.message ?? ''}`);
			showProgress(res.body);
			card?.scrollIntoView({ block: 'nearest' });
			const last = await follow(res.body.id);
			if (last) document.dispatchEvent(new CustomEvent(BULK_FINISHED, { detail: last }));
		} finally {
			start.disabled = false;
		}
	});
}

// ---- the job page ----
const jobConfig = document.getElementById('bulk-config');
if (jobConfig) follow(JSON.parse(jobConfig.textContent ?? '{}').job);
