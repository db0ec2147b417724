// Shared by every dashboard page: local times with a relative form, the
// filter form's date inputs, and calls to the API through the dashboard.

/**
 * Where the dashboard is mounted (`/dashboard`, or `/ops/dashboard` under a
 * host's `app.route('/ops', createApp(...))`): the folder this script is served
 * from, so every script's links and calls stay under the mount.
 */
export const base = new URL('.', import.meta.url).pathname.replace(/\/$/, '');

const relativeFormat = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto', style: 'short' });
const absoluteFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/**
 * "3 min ago", "in 2 hr", "now".
 * @param {number} ms
 */
export function relative(ms, now = Date.now()) {
	const seconds = Math.round((ms - now) / 1000);
	const abs = Math.abs(seconds);
	if (abs < 5) return 'now';
	if (abs < 60) return relativeFormat.format(seconds, 'second');
	if (abs < 3600) return relativeFormat.format(Math.round(seconds / 60), 'minute');
	if (abs < 86400) return relativeFormat.format(Math.round(seconds / 3600), 'hour');
	return relativeFormat.format(Math.round(seconds / 86400), 'day');
}

/** @param {number} ms */
export function absolute(ms) {
	return absoluteFormat.format(new Date(ms));
}

/**
 * Fills a `<time data-ms>` with the relative form; the local absolute time is its tooltip.
 * @param {HTMLTimeElement} el
 */
export function renderTime(el) {
	const ms = Number(el.dataset.ms);
	// Beyond Date's range (8.64e15 ms) there is no time to show: the text stays the raw value.
	if (!Number.isFinite(ms) || ms <= 0 || ms > 8.64e15) return;
	el.textContent = relative(ms);
	el.title = absolute(ms);
	el.dateTime = new Date(ms).toISOString();
}

/** @param {ParentNode} [root] */
export function refreshTimes(root = document) {
	root.querySelectorAll('time[data-ms]').forEach((el) => renderTime(/** @type {HTMLTimeElement} */ (el)));
}

/**
 * A duration for people: 850 ms, 4.2 s, 3 min 5 s, 2 h 10 min.
 * @param {number} ms
 */
export function duration(ms) {
	if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
	if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
	if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
	if (ms < 86_400_000) return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} min`;
	return `${Math.floor(ms / 86_400_000)} d ${Math.round((ms % 86_400_000) / 3_600_000)} h`;
}

/**
 * Calls the REST API through the dashboard (`<base>/api/...`), which adds
 * the deployment's token for a signed-in session. Answers `{ok, status, body}`.
 * @param {string} path
 * @param {RequestInit} [init]
 * @returns {Promise<{ ok: boolean; status: number; body: any }>}
 */
export async function api(path, init = {}) {
	const headers = new Headers(init.headers);
	headers.set('x-shardflow-dashboard', '1');
	const res = await fetch(`${base}/api${path}`, { ...init, headers, credentials: 'same-origin' });
	/** @type {any} */
	let body = null;
	try {
		body = await res.json();
	} catch {}
	if (res.status === 401) location.assign(`${base}/login?next=${encodeURIComponent(location.pathname + location.search)}`);
	return { ok: res.ok, status: res.status, body };
}

/** Datetime inputs show and edit the hidden millisecond fields the server reads, in the browser's time zone. */
function wireDateInputs() {
	document.querySelectorAll('input[data-ms-for]').forEach((node) => {
		const input = /** @type {HTMLInputElement} */ (node);
		const hidden = /** @type {HTMLInputElement | null} */ (input.parentElement?.querySelector(`input[name="${input.dataset.msFor}"]`) ?? null);
		if (!hidden) return;
		const ms = Number(hidden.value);
		if (hidden.value && Number.isFinite(ms)) {
			const d = new Date(ms);
			input.value = new Date(ms - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
		}
		input.addEventListener('change', () => {
			const parsed = input.value ? new Date(input.value).getTime() : NaN;
			hidden.value = Number.isFinite(parsed) ? String(parsed) : '';
		});
	});
	// Empty fields out of the URL: a shorter, shareable query.
	document.querySelectorAll('form[method="get"]').forEach((form) =>
		form.addEventListener('submit', () => {
			form.querySelectorAll('input[name], select[name]').forEach((node) => {
				const field = /** @type {HTMLInputElement} */ (node);
				if (!field.value) field.disabled = true;
			});
		}),
	);
}

/**
 * An event's payload editor (the instance page's event form, the list's bulk event): the chosen
 * event's JSON Schema and note shown beside the payload box, and the box filled with a value of
 * the schema's shape until the operator writes their own.
 * @param {{ name: string, schema: any, required: boolean, note?: string }[]} events
 * @param {HTMLSelectElement} select
 * @param {HTMLTextAreaElement} textarea
 * @param {HTMLElement} schemaEl
 * @param {HTMLElement} noteEl
 */
export function wireEventEditor(events, select, textarea, schemaEl, noteEl) {
	let example = '';
	const showShape = () => {
		const declared = events.find((e) => e.name === select.value);
		if (!declared) return;
		schemaEl.textContent = declared.schema ? JSON.stringify(declared.schema, null, 2) : '';
		schemaEl.hidden = !declared.schema;
		noteEl.textContent = [declared.note ?? '', declared.required ? '' : 'This event carries nothing: leave the payload empty to send it without a body.'].filter(Boolean).join(' ');
		if (textarea.value.trim() === '' || textarea.value === example) {
			example = declared.required ? JSON.stringify(exampleOf(declared.schema ?? {}), null, 2) : '';
			textarea.value = example;
		}
	};
	select.addEventListener('change', showShape);
	showShape();
}

/**
 * A starting value that has the schema's shape, for the payload box.
 * @param {Record<string, any>} schema
 * @returns {unknown}
 */
function exampleOf(schema) {
	if ('const' in schema) return schema.const;
	if (Array.isArray(schema.enum)) return schema.enum[0];
	if ('default' in schema) return schema.default;
	const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
	if (schema.anyOf || schema.oneOf) return exampleOf((schema.anyOf ?? schema.oneOf)[0] ?? {});
	switch (type) {
		case 'object':
			return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, exampleOf(v)]));
		case 'array':
			return [];
		case 'string':
			return '';
		case 'number':
		case 'integer':
			return 0;
		case 'boolean':
			return false;
		case 'null':
			return null;
		default:
			return {};
	}
}

refreshTimes();
wireDateInputs();
setInterval(() => refreshTimes(), 15_000);
