// The instance list, live: one WebSocket per index shard of the listed
// type(s), accepted and hibernated by the shard itself, which sends every
// entry it stores. Rows that match the filter are inserted or updated in
// place; rows that stop matching leave. After a lost connection the socket
// reconnects with backoff and the page re-reads its listing (catch-up).
import { api, base, renderTime } from './common.js';

const config = JSON.parse(/** @type {HTMLElement} */ (document.getElementById('list-config')).textContent ?? '{}');
const filter = config.filter;
const tbody = /** @type {HTMLTableSectionElement} */ (document.querySelector('#instances tbody'));
const template = /** @type {HTMLTemplateElement} */ (document.getElementById('row-template'));
const liveEl = /** @type {HTMLElement} */ (document.getElementById('live'));
const emptyEl = /** @type {HTMLElement} */ (document.getElementById('empty'));
const orderKey = filter.order === 'updated' ? 'updatedAt' : 'createdAt';
/** Ordered by a search attribute: a live change re-reads the page (the API's order), rather than placing rows here. */
const byAttribute = /^-?attr\./.test(filter.order);
const declared = config.declared ?? {};
/** A time bound as the API read it: ms, or ISO 8601 text (a bound the API refused leaves the page without a live feed). */
const num = (/** @type {string | undefined} */ v) => (v === undefined ? undefined : /^-?\d+$/.test(v) ? Number(v) : Date.parse(v));
const bounds = { ca: num(filter.createdAfter), cb: num(filter.createdBefore), ua: num(filter.updatedAfter), ub: num(filter.updatedBefore) };

/** A condition's value read as the attribute's kind (a datetime as ms or ISO 8601, as the API reads it). */
/**
 * @param {string} kind
 * @param {string} raw
 * @returns {string | number | boolean}
 */
function valueOf(kind, raw) {
	if (kind === 'number') return Number(raw);
	if (kind === 'datetime') return /^-?\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
	if (kind === 'boolean') return raw === 'true';
	return raw;
}
/** The attribute conditions: per name, the "any of" list and the bounds. */
/** @type {Record<string, { kind: string; anyOf: unknown[]; bounds: Record<string, any> }>} */
const conditions = {};
for (const [param, raw] of filter.attributes ?? []) {
	const [, name, bound] = param.split('.');
	const kind = declared[name];
	if (!kind) continue;
	const c = (conditions[name] ??= { kind, anyOf: [], bounds: {} });
	if (bound) c.bounds[bound] = valueOf(kind, raw);
	else c.anyOf.push(valueOf(kind, raw));
}
const orderedBy = byAttribute ? filter.order.replace(/^-?attr\./, '') : null;
/** @param {Record<string, any>} [attributes] */
function attributesMatch(attributes = {}) {
	if (orderedBy && attributes[orderedBy] === undefined) return false; // an order by an attribute lists only the instances that have it
	for (const [name, c] of Object.entries(conditions)) {
		const v = attributes[name];
		if (v === undefined) return false;
		if (c.anyOf.length && !c.anyOf.includes(v)) return false;
		const { gt, gte, lt, lte } = c.bounds;
		if ((gt !== undefined && !(v > gt)) || (gte !== undefined && !(v >= gte)) || (lt !== undefined && !(v < lt)) || (lte !== undefined && !(v <= lte))) return false;
	}
	return true;
}

/**
 * @typedef {{ id: string; type: string; status: string; createdAt: number; updatedAt: number; codeVersion?: string; parentId?: string; attributes?: Record<string, unknown> } & Record<string, any>} Entry
 * An index entry, as the live feed and the list API send it.
 */

/**
 * The same test the list API applies, on one entry.
 * @param {Entry} e
 */
function matches(e) {
	return (
		groupOfId(e.id) === (filter.group ?? null) &&
		(!filter.idPrefix || e.id.startsWith(filter.idPrefix)) &&
		attributesMatch(e.attributes) &&
		(!filter.type || e.type === filter.type) &&
		(!filter.status.length || filter.status.includes(e.status)) &&
		(!filter.id || e.id === filter.id) &&
		(!filter.codeVersion || e.codeVersion === filter.codeVersion) &&
		(!filter.parent || e.parentId === filter.parent) &&
		(bounds.ca === undefined || e.createdAt > bounds.ca) &&
		(bounds.cb === undefined || e.createdAt < bounds.cb) &&
		(bounds.ua === undefined || e.updatedAt > bounds.ua) &&
		(bounds.ub === undefined || e.updatedAt < bounds.ub)
	);
}

/** The group an id names (its part before "~", without the jurisdiction), null for the default group (docs/residency.md). */
function groupOfId(/** @type {string} */ id) {
	const at = id.indexOf('~');
	return at < 0 ? null : id.slice(0, at).split('.')[0];
}

const keyOf = (/** @type {HTMLTableRowElement} */ tr) => ({ at: Number(tr.dataset[orderKey === 'updatedAt' ? 'updated' : 'created']), id: tr.dataset.id ?? '' });
/** The list API's order: newest first, then id descending. Negative: a comes first. */
const compare = (/** @type {{ at: number; id: string }} */ a, /** @type {{ at: number; id: string }} */ b) => (a.at !== b.at ? b.at - a.at : a.id > b.id ? -1 : a.id < b.id ? 1 : 0);

/**
 * @param {HTMLTableRowElement} tr
 * @param {Entry} e
 */
function fill(tr, e) {
	/** A field of the row's template (list.tsx), there by construction. */
	const field = (/** @type {string} */ name) => /** @type {HTMLAnchorElement} */ (tr.querySelector(`[data-field="${name}"]`));
	tr.dataset.id = e.id;
	tr.dataset.created = String(e.createdAt);
	tr.dataset.updated = String(e.updatedAt);
	tr.dataset.status = e.status;
	field('link').href = `${base}/instances/${encodeURIComponent(e.id)}`;
	field('id').textContent = e.id;
	field('type').textContent = e.type;
	field('codeVersion').textContent = e.codeVersion ?? '';
	const parent = field('parent');
	parent.textContent = e.parentId ?? '';
	parent.hidden = !e.parentId;
	if (e.parentId) parent.href = `${base}/instances/${encodeURIComponent(e.parentId)}`;
	else parent.removeAttribute('href');
	const badge = field('status');
	badge.className = `badge status-${e.status}`;
	badge.textContent = e.status;
	for (const name of /** @type {const} */ (['createdAt', 'updatedAt'])) {
		const time = /** @type {HTMLTimeElement} */ (tr.querySelector(`[data-field="${name}"]`));
		time.dataset.ms = String(e[name]);
		renderTime(time);
	}
	for (const cell of tr.querySelectorAll('td[data-attr]')) fillAttribute(/** @type {HTMLElement} */ (cell), e.attributes?.[/** @type {HTMLElement} */ (cell).dataset.attr ?? '']);
}

/** An attribute cell, as the server renders it (list.tsx AttributeValue). */
/**
 * @param {HTMLElement} cell
 * @param {unknown} value
 */
function fillAttribute(cell, value) {
	if (value === undefined) {
		const dash = document.createElement('span');
		dash.className = 'muted';
		dash.dataset.empty = '';
		dash.textContent = '—';
		cell.replaceChildren(dash);
	} else if (cell.dataset.kind === 'datetime') {
		const time = document.createElement('time');
		time.dataset.ms = String(value);
		time.textContent = String(value);
		renderTime(time);
		cell.replaceChildren(time);
	} else cell.textContent = cell.dataset.kind === 'boolean' ? (value ? 'yes' : 'no') : String(value);
}

/** @param {HTMLElement} tr */
function flash(tr) {
	tr.classList.remove('flash');
	void tr.offsetWidth;
	tr.classList.add('flash');
}

const rowOf = (/** @type {string} */ id) => /** @type {HTMLTableRowElement | null} */ ([...tbody.rows].find((tr) => tr.dataset.id === id) ?? null);

/** Places a row at its position in the listing order; false when it falls past a full page. */
/** @param {HTMLTableRowElement} tr */
function place(tr) {
	const key = keyOf(tr);
	const before = [...tbody.rows].find((other) => other !== tr && compare(key, keyOf(other)) < 0);
	if (!before && tbody.rows.length >= filter.limit && tr.parentElement !== tbody) return false;
	tbody.insertBefore(tr, before ?? null);
	while (tbody.rows.length > filter.limit) tbody.rows[tbody.rows.length - 1]?.remove();
	return true;
}

/** @type {ReturnType<typeof setTimeout> | undefined} */
let attributeCatchUp;
/** @param {Entry} entry */
function apply(entry) {
	const existing = rowOf(entry.id);
	if (existing && Number(existing.dataset.updated) > entry.updatedAt) return; // older news
	if (byAttribute && (existing || (config.firstPage && matches(entry)))) {
		// The page's order is the attribute's: the API places rows (one re-read for a burst of changes).
		if (existing) fill(existing, entry);
		clearTimeout(attributeCatchUp);
		attributeCatchUp = setTimeout(catchUp, 300);
		return;
	}
	if (!matches(entry)) {
		existing?.remove();
	} else if (existing) {
		const moved = existing.dataset.status !== entry.status;
		fill(existing, entry);
		if (orderKey === 'updatedAt') place(existing);
		if (moved) flash(existing);
	} else if (config.firstPage) {
		// Only the first page takes new rows: a later page is a fixed window of the keyset.
		const tr = /** @type {HTMLTableRowElement} */ (template.content.firstElementChild?.cloneNode(true));
		fill(tr, entry);
		if (place(tr)) flash(tr);
	}
	emptyEl.hidden = tbody.rows.length > 0;
}

// ---- catch-up: re-read the page from the API (after connecting, reconnecting, or an overflow) ----
/** @type {Promise<void> | null} */
let catchingUp = null;
/** @type {Entry[]} */
let heldBack = [];
function listPath() {
	const plain = !filter.attributes.length && !filter.idPrefix && !byAttribute;
	if (filter.id && plain) return `/workflows/${encodeURIComponent(filter.id)}`;
	const q = new URLSearchParams();
	if (filter.type) q.set('type', filter.type);
	if (filter.group) q.set('group', filter.group);
	if (filter.status.length) q.set('status', filter.status.join(','));
	for (const key of ['createdAfter', 'createdBefore', 'updatedAfter', 'updatedBefore', 'codeVersion', 'parent', 'idPrefix', 'cursor']) if (filter[key]) q.set(key, filter[key]);
	if (filter.id && !filter.idPrefix) q.set('idPrefix', filter.id);
	if (filter.order !== 'created') q.set('order', filter.order);
	for (const [name, value] of filter.attributes) q.append(name, value);
	q.set('limit', String(filter.limit));
	return `/workflows?${q}`;
}
async function catchUp() {
	if (catchingUp) return catchingUp;
	heldBack = [];
	catchingUp = (async () => {
		const res = await api(listPath());
		if (res.ok) {
			const items = filter.id ? ('items' in res.body ? res.body.items : [res.body]).filter((/** @type {Entry} */ i) => i.id === filter.id && matches(i)) : res.body.items;
			const ids = new Set(items.map((/** @type {Entry} */ i) => i.id));
			for (const tr of [...tbody.rows]) if (!ids.has(tr.dataset.id ?? '')) tr.remove();
			for (const item of items) {
				const tr = rowOf(item.id);
				if (tr) Number(tr.dataset.updated) <= item.updatedAt && fill(tr, item);
				else {
					const row = /** @type {HTMLTableRowElement} */ (template.content.firstElementChild?.cloneNode(true));
					fill(row, item);
					tbody.appendChild(row);
				}
			}
			// Ordered by an attribute, the API's order is the page's; otherwise the keyset order (which the live feed keeps).
			if (byAttribute) items.forEach((/** @type {Entry} */ item) => { const tr = rowOf(item.id); if (tr) tbody.appendChild(tr); });
			else [...tbody.rows].sort((a, b) => compare(keyOf(a), keyOf(b))).forEach((tr) => tbody.appendChild(tr));
			emptyEl.hidden = tbody.rows.length > 0;
		}
		catchingUp = null;
		// What arrived while the page was read is newer than it, or equal: apply it on top.
		const pending = heldBack;
		heldBack = [];
		pending.forEach(apply);
	})();
	return catchingUp;
}

// ---- sockets: one per shard ----
const sockets = new Map();
function setState() {
	const states = [...sockets.values()].map((s) => s.state);
	const state = states.every((s) => s === 'live') ? 'live' : states.some((s) => s === 'live') || states.every((s) => s !== 'connecting') ? 'reconnecting' : 'connecting';
	liveEl.dataset.state = state;
	liveEl.textContent = state === 'live' ? 'Live' : state === 'reconnecting' ? 'Reconnecting…' : 'Connecting…';
	liveEl.title = state === 'live' ? `Watching ${sockets.size} index shard${sockets.size === 1 ? '' : 's'}` : '';
}

/**
 * @param {string} key
 * @param {string} url
 */
function connect(key, url) {
	const slot = sockets.get(key) ?? { state: 'connecting', attempts: 0, ws: null, ping: 0 };
	sockets.set(key, slot);
	const ws = new WebSocket(url);
	slot.ws = ws;
	ws.onmessage = (event) => {
		if (event.data === 'pong') return;
		const message = JSON.parse(event.data);
		if (message.kind === 'hello') {
			const reconnected = slot.attempts > 0 || slot.everLive;
			slot.state = 'live';
			slot.attempts = 0;
			slot.everLive = true;
			setState();
			if (reconnected || [...sockets.values()].every((s) => s.state === 'live')) catchUp();
		} else if (message.kind === 'entries') {
			for (const entry of message.entries) catchingUp ? heldBack.push(entry) : apply(entry);
		} else if (message.kind === 'overflow') {
			catchUp();
		}
	};
	ws.onclose = () => {
		clearInterval(slot.ping);
		slot.state = 'reconnecting';
		setState();
		const delay = Math.min(10_000, 500 * 2 ** slot.attempts++) * (0.75 + Math.random() / 2);
		setTimeout(() => connect(key, url), delay);
	};
	// The shard answers "ping" without waking up (a hibernation auto-response); a dead path shows as a close.
	slot.ping = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send('ping'), 25_000);
}

// ---- the columns the operator chose, kept in this browser ----
const COLUMNS_KEY = 'shardflow.dashboard.columns';
const table = /** @type {HTMLTableElement} */ (document.getElementById('instances'));
const columnBoxes = /** @type {HTMLInputElement[]} */ ([...document.querySelectorAll('#columns-menu input[name="column"]')]);
/** @param {string[]} shown */
function showColumns(shown) {
	for (const box of columnBoxes) {
		box.checked = shown.includes(box.value);
		table.classList.toggle(`hide-${box.value}`, !box.checked);
	}
}
try {
	const saved = JSON.parse(localStorage.getItem(COLUMNS_KEY) ?? 'null');
	if (Array.isArray(saved)) showColumns(saved);
} catch {}
for (const box of columnBoxes) {
	box.addEventListener('change', () => {
		const shown = columnBoxes.filter((b) => b.checked).map((b) => b.value);
		showColumns(shown);
		try {
			localStorage.setItem(COLUMNS_KEY, JSON.stringify(shown));
		} catch {}
	});
}

// ---- the attribute columns the operator chose, per type, kept in this browser ----
const ATTRIBUTE_COLUMNS_KEY = 'shardflow.dashboard.attributeColumns';
const attributeBoxes = /** @type {HTMLInputElement[]} */ ([...document.querySelectorAll('#columns-menu input[name="attribute-column"]')]);
/** @param {string[]} shown */
function showAttributeColumns(shown) {
	for (const box of attributeBoxes) {
		box.checked = shown.includes(box.value);
		table.classList.toggle(`hide-attr-${box.value}`, !box.checked);
	}
}
const readAttributeColumns = () => {
	try {
		const saved = JSON.parse(localStorage.getItem(ATTRIBUTE_COLUMNS_KEY) ?? '{}');
		return saved && typeof saved === 'object' && !Array.isArray(saved) ? saved : {};
	} catch {
		return {};
	}
};
if (filter.type && Array.isArray(readAttributeColumns()[filter.type])) showAttributeColumns(readAttributeColumns()[filter.type]);
for (const box of attributeBoxes) {
	box.addEventListener('change', () => {
		const shown = attributeBoxes.filter((b) => b.checked).map((b) => b.value);
		showAttributeColumns(shown);
		try {
			localStorage.setItem(ATTRIBUTE_COLUMNS_KEY, JSON.stringify({ ...readAttributeColumns(), [filter.type]: shown }));
		} catch {}
	});
}

// ---- a keyword field takes several values, "a, b": sent as the repeated parameter the API reads as "any of" ----
const form = /** @type {HTMLFormElement | null} */ (document.getElementById('filters'));
form?.addEventListener('submit', () => {
	for (const input of /** @type {HTMLInputElement[]} */ ([...form.querySelectorAll('input[data-any-of]')])) {
		const values = input.value.split(',').map((v) => v.trim()).filter(Boolean);
		if (values.length < 2) continue;
		input.disabled = true;
		for (const value of values) {
			const hidden = document.createElement('input');
			hidden.type = 'hidden';
			hidden.name = input.name;
			hidden.value = value;
			form.appendChild(hidden);
		}
	}
});
// Another type has other attributes: its conditions and an order by one of them are not sent with it.
form?.addEventListener('submit', () => {
	const typeSelect = /** @type {HTMLSelectElement | null} */ (form.querySelector('select[name="type"]'));
	if (!typeSelect || typeSelect.value === (filter.type ?? '')) return;
	form.querySelectorAll('[name^="attr."]').forEach((field) => (/** @type {HTMLInputElement} */ (field).disabled = true));
	const order = /** @type {HTMLSelectElement | null} */ (form.querySelector('select[name="order"]'));
	if (order && /attr\./.test(order.value)) order.disabled = true;
});

// A bulk job started from this page has finished: its changes are in the index, read the page again.
document.addEventListener('shardflow:bulk-finished', () => void catchUp());

// ---- the filter form: open on a wide screen, folded on a phone (the list is what the first screen shows) ----
const fold = /** @type {HTMLDetailsElement | null} */ (document.getElementById('filters-fold'));
if (fold && !matchMedia('(max-width: 760px)').matches) fold.open = true;

const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
if (config.refused) {
	// The API refused this query: no feed, no catch-up, so no other list ever fills in under the error.
	liveEl.dataset.state = 'off';
	liveEl.textContent = 'Not live';
	liveEl.title = 'The query was refused: fix the filter to see a live list';
} else {
	for (const [type, shards] of Object.entries(config.shards)) {
		// A group's shards are its own (docs/residency.md): the Worker reaches them in the group's jurisdiction.
		const inGroup = filter.group ? `?group=${encodeURIComponent(filter.group)}` : '';
		for (let n = 0; n < shards; n++) connect(`${type}:${n}`, `${scheme}//${location.host}${base}/live/${encodeURIComponent(type)}/${n}${inGroup}`);
	}
	setState();
}
// For tests and the curious: the page's live state.
Object.assign(window, { shardflowList: { catchUp, sockets } });
