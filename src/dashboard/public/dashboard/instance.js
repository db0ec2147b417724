// The instance page: follows the history while the instance runs (polling
// `GET /workflows/:id/history?after=<last seq>`, one object, about once a
// second, as docs/history-format.md suggests), draws the timeline and the
// raw history, and runs the controls and the send-event form.
import { absolute, api, base, duration, refreshTimes, wireEventEditor } from './common.js';
import { confirmAction } from './confirm.js';
import { buildTimeline, renderTimeline, restartPoints } from './timeline.js';

const config = JSON.parse(/** @type {HTMLElement} */ (document.getElementById('instance-config')).textContent ?? '{}');
const id = config.id;
const path = `/workflows/${encodeURIComponent(id)}`;
const FINISHED = ['completed', 'errored', 'terminated'];
const ALLOWED = {
	pause: ['created', 'running', 'sleeping', 'waiting'],
	resume: ['paused', 'diverged'],
	terminate: ['queued', 'created', 'running', 'sleeping', 'waiting', 'paused', 'diverged', 'rolling_back'],
	restart: [...FINISHED, 'diverged'],
	// Any status: an unfinished instance is terminated first (the dialog says so).
	delete: ['queued', 'created', 'running', 'sleeping', 'waiting', 'paused', 'diverged', 'rolling_back', ...FINISHED],
};
const $ = (/** @type {string} */ sel) => /** @type {HTMLElement} */ (document.querySelector(sel));

let status = config.status;
/** @type {Array<Record<string, any>>} */
let events = [];
/** @type {number | null} */
let generation = null;
/** @type {number | null} */
let lastSeq = null;
/** An earlier run the operator chose to look at (`generation=`), or null: the current run, followed live. */
/** @type {number | null} */
let viewedRun = null;
let deleted = false;

// ---- search attributes: step.setAttributes changes them while the run goes on ----
/** @param {Record<string, unknown>} attributes */
function showAttributes(attributes) {
	for (const row of document.querySelectorAll('#attributes > div[data-attr]')) {
		const el = /** @type {HTMLElement} */ (row);
		const name = el.dataset.attr ?? '';
		const value = attributes[name];
		const dd = /** @type {HTMLElement} */ (el.querySelector('dd'));
		if (value === undefined) {
			dd.innerHTML = '<span class="muted">not set</span>';
			continue;
		}
		const link = document.createElement('a');
		link.href = `${base}/instances?${new URLSearchParams({ type: config.type, [`attr.${name}`]: String(value) })}`;
		if (el.dataset.kind === 'datetime') {
			const time = document.createElement('time');
			time.dataset.ms = String(value);
			link.appendChild(time);
		} else link.textContent = el.dataset.kind === 'boolean' ? (value ? 'yes' : 'no') : String(value);
		dd.replaceChildren(link);
	}
	refreshTimes(document.getElementById('attributes') ?? undefined);
}

// ---- status, controls ----
/** @param {Record<string, any>} detail The instance as `GET /workflows/{id}` answers it. */
function showStatus(detail) {
	status = detail.status;
	$('#instance-status').innerHTML = `<span class="badge status-${status}" data-field="status">${status}</span>`;
	$('#updated-at').innerHTML = `<time data-ms="${detail.updatedAt}"></time>`;
	$('#version').textContent = String(detail.version);
	$('#step-counts').textContent = String(detail.stepCounts?.total ?? 0);
	$('#buffered').textContent = String(detail.bufferedEvents);
	// What a restart or a finish changes, shown as it happens, not only after a reload: a finished
	// instance takes no events (the API answers 409), so the event form goes.
	$('#generation').textContent = String(detail.generation ?? 0);
	showAttributes(detail.attributes ?? {});
	const eventCard = document.getElementById('event-card');
	if (eventCard) {
		const closed = detail.archived === true || FINISHED.includes(status);
		// A card hidden since the page loaded appears once the instance takes events again (a restart);
		// one in use stays, its form disabled, so the answer to the event that finished the run stays readable.
		if (!closed) eventCard.hidden = false;
		eventCard.querySelectorAll('input, select, textarea, button').forEach((el) => (/** @type {HTMLInputElement} */ (el).disabled = closed));
		const note = document.getElementById('event-closed');
		if (note) note.hidden = !closed;
	}
	const result = $('#result');
	const body = document.createElement('div');
	if (detail.error) {
		body.className = 'error-box';
		const strong = document.createElement('strong');
		strong.textContent = detail.error.code ?? detail.error.name;
		body.append(strong, `: ${detail.error.message}`);
	} else if (detail.output !== undefined) {
		body.append(jsonBlock('output', detail.output));
	} else {
		body.className = 'muted';
		body.textContent = 'No output yet.';
	}
	result.replaceChildren(Object.assign(document.createElement('h2'), { textContent: 'Result' }), body);
	updateControls();
	refreshTimes();
}

/**
 * @param {string} label
 * @param {unknown} value
 * @param {boolean} [open]
 */
function jsonBlock(label, value, open) {
	const details = document.createElement('details');
	details.className = 'json';
	const text = JSON.stringify(value, null, 2) ?? 'undefined';
	details.open = open ?? text.length <= 600;
	const summary = document.createElement('summary');
	summary.textContent = label;
	const pre = document.createElement('pre');
	pre.textContent = text;
	details.append(summary, pre);
	return details;
}

function updateControls() {
	document.querySelectorAll('button[data-action]').forEach((node) => {
		const button = /** @type {HTMLButtonElement} */ (node);
		button.disabled = !ALLOWED[/** @type {keyof typeof ALLOWED} */ (button.dataset.action ?? '')].includes(status);
	});
}

/**
 * @param {string} target
 * @param {boolean} ok
 * @param {string} text
 * @param {string} [code]
 */
function say(target, ok, text, code) {
	const el = $(target);
	el.className = ok ? 'ok-box' : 'error-box';
	el.replaceChildren();
	if (code) el.append(Object.assign(document.createElement('strong'), { textContent: code }), ': ');
	el.append(text);
}

/** The restart dialog's choice: from the beginning, or from a step the current run recorded. */
function restartChoice() {
	const label = document.createElement('label');
	label.className = 'dialog-field';
	const span = Object.assign(document.createElement('span'), { textContent: 'Start the new run from' });
	const select = document.createElement('select');
	select.id = 'restart-from';
	select.append(new Option('the beginning (every step runs again)', ''));
	const points = restartPoints(currentRunEvents());
	for (const p of points) select.append(new Option(`${p.label}: the steps completed before it keep their results`, JSON.stringify({ name: p.name, type: p.type })));
	label.append(span, select);
	return { element: label, from: () => (select.value ? JSON.parse(select.value) : undefined) };
}

/** The terminate dialog's choice: run the rollbacks of the completed steps first (not while they already run: a terminate then abandons them). */
function terminateChoice() {
	const box = document.createElement('div');
	box.className = 'dialog-field';
	const rollback = Object.assign(document.createElement('input'), { type: 'checkbox', id: 'terminate-rollback', checked: false });
	if (status !== 'rolling_back') {
		const l = document.createElement('label');
		l.className = 'check';
		l.append(rollback, ' Run the rollbacks (compensations) of its completed steps first');
		box.append(l);
	}
	return { element: box, rollback: () => status !== 'rolling_back' && rollback.checked };
}

/** The delete dialog's choices: archive first (when a bucket is bound), and terminate first (an unfinished instance). */
function deleteChoice() {
	const box = document.createElement('div');
	box.className = 'dialog-field';
	const archive = Object.assign(document.createElement('input'), { type: 'checkbox', id: 'delete-archive', checked: true });
	const terminate = Object.assign(document.createElement('input'), { type: 'checkbox', id: 'delete-terminate', checked: true });
	if (config.archiveBound) {
		const l = document.createElement('label');
		l.className = 'check';
		l.append(archive, ' Archive its history first (R2), readable here afterwards');
		box.append(l);
	}
	if (!FINISHED.includes(status)) {
		const l = document.createElement('label');
		l.className = 'check';
		l.append(terminate, ` Terminate it first (it is ${status})`);
		box.append(l);
	}
	return { element: box, archive: () => config.archiveBound && archive.checked, terminate: () => !FINISHED.includes(status) && terminate.checked };
}

document.querySelectorAll('button[data-action]').forEach((node) =>
	node.addEventListener('click', async () => {
		const button = /** @type {HTMLButtonElement} */ (node);
		const action = button.dataset.action;
		const choice = action === 'restart' ? restartChoice() : action === 'delete' ? deleteChoice() : action === 'terminate' ? terminateChoice() : null;
		if (!(await confirmAction(button.dataset.confirm ?? `${action}?`, button.classList.contains('danger'), choice?.element))) return;
		button.disabled = true;
		let res;
		if (action === 'delete') {
			const c = /** @type {ReturnType<typeof deleteChoice>} */ (choice);
			const q = new URLSearchParams();
			if (c.terminate()) q.set('terminate', 'true');
			if (c.archive()) q.set('archive', 'true');
			res = await api(`${path}${q.size ? `?${q}` : ''}`, { method: 'DELETE' });
			if (res.ok) {
				deleted = true;
				if (c.archive()) return location.reload(); // its archived record, read-only
				document.querySelectorAll('button[data-action]').forEach((b) => (/** @type {HTMLButtonElement} */ (b).disabled = true));
				const el = $('#control-result');
				el.className = 'ok-box';
				el.replaceChildren(`Deleted ${id}. `, Object.assign(document.createElement('a'), { href: `${base}/instances?type=${encodeURIComponent(config.type)}`, textContent: `Back to the ${config.type} list` }));
				return;
			}
		} else {
			const from = action === 'restart' ? /** @type {ReturnType<typeof restartChoice>} */ (choice).from() : undefined;
			const rollback = action === 'terminate' && /** @type {ReturnType<typeof terminateChoice>} */ (choice).rollback();
			res = await api(`${path}/${action}${rollback ? '?rollback=true' : ''}`, { method: 'POST', ...(from ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ from }) } : {}) });
		}
		await refresh(true);
		// The status the page shows now, not the one the control answered (a resumed instance is running only until its pass suspends again).
		if (res.ok) say('#control-result', true, `${action}: done; the instance is ${status} now.`);
		else say('#control-result', false, res.body?.error?.message ?? `failed (${res.status})`, res.body?.error?.code);
	}),
);

// ---- history, timeline ----
const historyBody = /** @type {HTMLTableSectionElement} */ (document.querySelector('#history tbody'));
const HISTORY_ROWS = 500;

/** @param {Record<string, any>} e */
function historyRow(e) {
	const tr = document.createElement('tr');
	const { seq, at, kind, generation: _g, step, event, topic, ...rest } = e;
	const cells = [String(seq), '', kind, step ?? event ?? topic ?? '', ''];
	cells.forEach((text, i) => {
		const td = document.createElement('td');
		if (i === 1) td.innerHTML = `<time data-ms="${at}"></time>`;
		else if (i === 2) Object.assign(td, { className: 'kind', textContent: text });
		else if (i === 4 && Object.keys(rest).length) td.append(jsonBlock(summaryOf(rest), rest, false));
		else td.textContent = text;
		tr.appendChild(td);
	});
	return tr;
}

/** One line for a record's fields; the whole record opens below it. */
/** @param {Record<string, any>} rest */
function summaryOf(rest) {
	if (rest.error) return `${rest.error.code ?? rest.error.name}: ${String(rest.error.message).slice(0, 100)}`;
	if (rest.until) return `until ${absolute(rest.until)}`;
	if (rest.retryAt) return `retry at ${absolute(rest.retryAt)}`;
	if ('timeoutAt' in rest) return rest.timeoutAt === null ? 'no timeout' : `times out at ${absolute(rest.timeoutAt)}`;
	if ('expiresAt' in rest && rest.url) return rest.expiresAt === null ? 'webhook, no timeout' : `webhook, expires at ${absolute(rest.expiresAt)}`;
	const text = JSON.stringify(rest);
	return text.length > 100 ? `${text.slice(0, 99)}…` : text;
}

/** The records the page shows: the current run's, followed live, or an earlier run's the operator chose. */
/** @type {Array<Record<string, any>>} */
let earlierEvents = [];
const shownEvents = () => (viewedRun === null ? events : earlierEvents);
const currentRunEvents = () => events;

// ---- messages: what the shown run published with step.emit (docs/streams.md), newest first ----
const messagesBody = /** @type {HTMLTableSectionElement} */ (document.querySelector('#messages tbody'));

/** @param {Record<string, any>} e */
function messageRow(e) {
	const tr = document.createElement('tr');
	tr.dataset.seq = String(e.seq);
	[String(e.index), '', e.topic, ''].forEach((text, i) => {
		const td = document.createElement('td');
		if (i === 1) td.innerHTML = `<time data-ms="${e.at}"></time>`;
		else if (i === 2) Object.assign(td, { className: 'kind', textContent: text });
		else if (i === 3) {
			const json = JSON.stringify(e.data) ?? 'null';
			td.append(jsonBlock(json.length > 100 ? `${json.slice(0, 99)}…` : json, e.data, false));
		} else td.textContent = text;
		tr.appendChild(td);
	});
	return tr;
}

/** Redraws the Messages card from the shown run's records; the card shows only when the run published any. */
function fillMessages() {
	const messages = shownEvents().filter((e) => e.kind === 'stream.message');
	const card = $('#messages-card');
	card.hidden = messages.length === 0;
	if (card.hidden) return messagesBody.replaceChildren();
	messagesBody.replaceChildren(...messages.slice(-HISTORY_ROWS).reverse().map(messageRow));
	refreshTimes(messagesBody);
	const run = viewedRun ?? generation ?? 0;
	$('#messages-count').textContent = `${messages.length} message${messages.length === 1 ? '' : 's'} in run ${run + 1}${messages.length > HISTORY_ROWS ? `, newest ${HISTORY_ROWS} shown` : ''}, newest first`;
}

function draw() {
	// An earlier run is over: its bars end at its last record, never at now.
	const shown = shownEvents();
	const now = viewedRun === null ? Date.now() : (shown.at(-1)?.at ?? Date.now());
	renderTimeline($('#timeline'), buildTimeline(shown, now), duration);
}

function showHistoryCount() {
	const shown = shownEvents();
	const run = viewedRun ?? generation ?? 0;
	$('#history-count').textContent = `${shown.length} record${shown.length === 1 ? '' : 's'} in run ${run + 1}${viewedRun !== null ? ' (an earlier run)' : ''}${shown.length > HISTORY_ROWS ? `, newest ${HISTORY_ROWS} shown` : ''}, newest first`;
}

/** Redraws the history table from `list` (newest first, at most HISTORY_ROWS). */
/** @param {Array<Record<string, any>>} list */
function fillHistory(list) {
	historyBody.replaceChildren(...list.slice(-HISTORY_ROWS).reverse().map(historyRow));
	refreshTimes(historyBody);
}

async function loadHistory() {
	let more = true;
	let grew = false;
	while (more) {
		const q = new URLSearchParams({ limit: '1000' });
		if (lastSeq !== null) q.set('after', String(lastSeq));
		const res = await api(`${path}/history?${q}`);
		if (!res.ok) return grew;
		if (generation !== null && res.body.generation !== generation) {
			// A restart: the page follows the new run from its start.
			generation = null;
			lastSeq = null;
			events = [];
			if (viewedRun === null) historyBody.replaceChildren();
			continue;
		}
		if (generation !== res.body.generation) updateRunPicker(res.body.generation);
		generation = res.body.generation;
		for (const e of res.body.events) {
			events.push(e);
			if (viewedRun === null) historyBody.prepend(historyRow(e));
			lastSeq = e.seq;
			grew = true;
		}
		more = res.body.nextCursor !== null;
	}
	while (historyBody.rows.length > HISTORY_ROWS) historyBody.rows[historyBody.rows.length - 1]?.remove();
	showHistoryCount();
	if (grew && viewedRun === null) fillMessages();
	return grew;
}

// ---- earlier runs: the history of one generation, read once (it no longer changes) ----
const runSelect = /** @type {HTMLSelectElement | null} */ (document.getElementById('run-select'));
/** @param {number} current */
function updateRunPicker(current) {
	if (!runSelect) return;
	const chosen = viewedRun;
	runSelect.replaceChildren();
	for (let g = current; g >= 0; g--) {
		const label = `Run ${g + 1}${g === current ? ' (current)' : g === 0 ? ' (the first)' : ''}`;
		runSelect.append(new Option(label, g === current ? '' : String(g), false, chosen === g));
	}
	/** @type {HTMLElement} */ (runSelect.closest('label')).hidden = current === 0;
}
/** @param {number | null} run */
async function showRun(run) {
	if (run === null) {
		viewedRun = null;
		fillHistory(events);
	} else {
		const all = [];
		let after = null;
		for (;;) {
			const q = new URLSearchParams({ limit: '1000', generation: String(run) });
			if (after !== null) q.set('after', String(after));
			const res = await api(`${path}/history?${q}`);
			if (!res.ok) {
				say('#control-result', false, res.body?.error?.message ?? `could not read run ${run + 1}`, res.body?.error?.code);
				return;
			}
			all.push(...res.body.events);
			if (res.body.nextCursor === null || res.body.events.length === 0) break;
			after = res.body.events.at(-1).seq;
		}
		earlierEvents = all;
		viewedRun = run;
		fillHistory(all);
	}
	const note = $('#timeline-run');
	note.hidden = viewedRun === null;
	note.textContent = viewedRun === null ? '' : `Showing run ${viewedRun + 1}, an earlier run (read-only).`;
	showHistoryCount();
	fillMessages();
	draw();
}
runSelect?.addEventListener('change', () => showRun(runSelect.value === '' ? null : Number(runSelect.value)));

/** @type {Promise<void> | null} */
let refreshing = null;
async function refresh(force = false) {
	if (refreshing) return refreshing;
	refreshing = (async () => {
		const grew = await loadHistory();
		if (grew || force) {
			const res = await api(path);
			if (res.ok) showStatus(res.body);
		}
		draw();
		refreshTimes(historyBody);
		refreshTimes(messagesBody);
	})().finally(() => (refreshing = null));
	return refreshing;
}

// Poll about once a second while the instance can still change on its own; open bars grow in between.
async function follow() {
	if (deleted) return;
	await refresh();
	setTimeout(follow, FINISHED.includes(status) ? 5000 : 1000);
}
setInterval(() => !FINISHED.includes(status) && viewedRun === null && draw(), 250);
updateControls();
follow();

// ---- send an event ----
const form = /** @type {HTMLFormElement | null} */ (document.getElementById('event-form'));
if (form) {
	const select = /** @type {HTMLSelectElement} */ (document.getElementById('event-name'));
	wireEventEditor(config.events, select, /** @type {HTMLTextAreaElement} */ (document.getElementById('event-payload')), $('#event-schema'), $('#event-note'));
	form.addEventListener('submit', async (submit) => {
		submit.preventDefault();
		const data = new FormData(form);
		const text = String(data.get('payload') ?? '').trim();
		let body;
		if (text) {
			try {
				body = JSON.stringify(JSON.parse(text));
			} catch (error) {
				say('#event-result', false, `the payload is not JSON: ${error instanceof Error ? error.message : error}`, 'MALFORMED_JSON');
				return;
			}
		}
		/** @type {Record<string, string>} */
		const headers = { 'content-type': 'application/json' };
		const key = String(data.get('idempotencyKey') ?? '').trim();
		if (key) headers['idempotency-key'] = key;
		const res = await api(`${path}/events/${encodeURIComponent(select.value)}`, { method: 'POST', headers, ...(body !== undefined ? { body } : {}) });
		const bufferedBefore = Number($('#buffered').textContent);
		await refresh(true);
		const buffered = Number($('#buffered').textContent) > bufferedBefore;
		// Accepted is not consumed: an event no wait has taken yet is buffered, and the page says so.
		if (res.ok) say('#event-result', true, buffered ? `Accepted: "${select.value}" is buffered: no wait of ${id} has taken it yet.` : `Accepted: "${select.value}" was sent to ${id}.`);
		else say('#event-result', false, res.body?.error?.message ?? `refused (${res.status})`, res.body?.error?.code);
	});
}
