// The Messages card: what the shown run published with step.emit (docs/streams.md), newest first.
import { refreshTimes } from './common.js';
import { $, HISTORY_ROWS, jsonBlock, shownEvents, state } from './instancepage.js';

export const messagesBody = /** @type {HTMLTableSectionElement} */ (document.querySelector('#messages tbody'));

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
export function fillMessages() {
	const messages = shownEvents().filter((e) => e.kind === 'stream.message');
	const card = $('#messages-card');
	card.hidden = messages.length === 0;
	if (card.hidden) return messagesBody.replaceChildren();
	messagesBody.replaceChildren(...messages.slice(-HISTORY_ROWS).reverse().map(messageRow));
	refreshTimes(messagesBody);
	const run = state.viewedRun ?? state.generation ?? 0;
	$('#messages-count').textContent = `${messages.length} message${messages.length === 1 ? '' : 's'} in run ${run + 1}${messages.length > HISTORY_ROWS ? `, newest ${HISTORY_ROWS} shown` : ''}, newest first`;
}
