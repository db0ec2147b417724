// The History card: the run's records, newest first, followed as they are written, and the
// earlier runs, each read once (it no longer changes).
import { absolute, api, refreshTimes } from './common.js';
import { $, HISTORY_ROWS, jsonBlock, path, say, shownEvents, state } from './instancepage.js';
import { fillMessages } from './messages.js';

export const historyBody = /** @type {HTMLTableSectionElement} */ (document.querySelector('#history tbody'));

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

function showHistoryCount() {
	const shown = shownEvents();
	const run = state.viewedRun ?? state.generation ?? 0;
	$('#history-count').textContent = `${shown.length} record${shown.length === 1 ? '' : 's'} in run ${run + 1}${state.viewedRun !== null ? ' (an earlier run)' : ''}${shown.length > HISTORY_ROWS ? `, newest ${HISTORY_ROWS} shown` : ''}, newest first`;
}

/** Redraws the history table from `list` (newest first, at most HISTORY_ROWS). */
/** @param {Array<Record<string, any>>} list */
function fillHistory(list) {
	historyBody.replaceChildren(...list.slice(-HISTORY_ROWS).reverse().map(historyRow));
	refreshTimes(historyBody);
}

export async function loadHistory() {
	let more = true;
	let grew = false;
	while (more) {
		const q = new URLSearchParams({ limit: '1000' });
		if (state.lastSeq !== null) q.set('after', String(state.lastSeq));
		const res = await api(`${path}/history?${q}`);
		if (!res.ok) return grew;
		if (state.generation !== null && res.body.generation !== state.generation) {
			// A restart: the page follows the new run from its start.
			state.generation = null;
			state.lastSeq = null;
			state.events = [];
			if (state.viewedRun === null) historyBody.replaceChildren();
			continue;
		}
		if (state.generation !== res.body.generation) updateRunPicker(res.body.generation);
		state.generation = res.body.generation;
		for (const e of res.body.events) {
			state.events.push(e);
			if (state.viewedRun === null) historyBody.prepend(historyRow(e));
			state.lastSeq = e.seq;
			grew = true;
		}
		more = res.body.nextCursor !== null;
	}
	while (historyBody.rows.length > HISTORY_ROWS) historyBody.rows[historyBody.rows.length - 1]?.remove();
	showHistoryCount();
	if (grew && state.viewedRun === null) fillMessages();
	return grew;
}

// ---- earlier runs: the history of one generation, read once (it no longer changes) ----
const runSelect = /** @type {HTMLSelectElement | null} */ (document.getElementById('run-select'));
/** @param {number} current */
function updateRunPicker(current) {
	if (!runSelect) return;
	const chosen = state.viewedRun;
	runSelect.replaceChildren();
	for (let g = current; g >= 0; g--) {
		const label = `Run ${g + 1}${g === current ? ' (current)' : g === 0 ? ' (the first)' : ''}`;
		runSelect.append(new Option(label, g === current ? '' : String(g), false, chosen === g));
	}
	/** @type {HTMLElement} */ (runSelect.closest('label')).hidden = current === 0;
}
/**
 * @param {number | null} run
 * @param {() => void} draw redraws the timeline
 */
async function showRun(run, draw) {
	if (run === null) {
		state.viewedRun = null;
		fillHistory(state.events);
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
		state.earlierEvents = all;
		state.viewedRun = run;
		fillHistory(all);
	}
	const note = $('#timeline-run');
	note.hidden = state.viewedRun === null;
	note.textContent = state.viewedRun === null ? '' : `Showing run ${state.viewedRun + 1}, an earlier run (read-only).`;
	showHistoryCount();
	fillMessages();
	draw();
}

/** Wires the run picker; `draw` redraws the timeline of the run shown. */
export function wireRunPicker(/** @type {() => void} */ draw) {
	runSelect?.addEventListener('change', () => showRun(runSelect.value === '' ? null : Number(runSelect.value), draw));
}
