// The instance's header: its status, counts, search attributes and result, as the last status read.
import { base, refreshTimes } from './common.js';
import { $, config, FINISHED, jsonBlock, state } from './instancepage.js';
import { updateControls } from './controls.js';

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
export function showStatus(detail) {
	state.status = detail.status;
	$('#instance-status').innerHTML = `<span class="badge status-${state.status}" data-field="status">${state.status}</span>`;
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
		const closed = detail.archived === true || FINISHED.includes(state.status);
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
