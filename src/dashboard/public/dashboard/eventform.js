// The send-event card: an event and its payload, checked against the type's declared shape.
import { api, wireEventEditor } from './common.js';
import { $, config, id, path, say } from './instancepage.js';

/** Wires the send-event form; `refresh` reads the instance again after the event was answered. */
export function wireEventForm(/** @type {(force?: boolean) => Promise<void>} */ refresh) {
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
}
