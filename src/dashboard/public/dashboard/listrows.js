// The table's rows: each filled from an index entry, placed in the listing order, kept up to
// date by the live feed's entries (listfeed.js) and by re-reading the page (catch-up).
import { api, base, renderTime } from './common.js';
import { byAttribute, config, filter, listPath, matches, orderKey } from './listfilter.js';

/** @typedef {import('./listfilter.js').Entry} Entry */

const tbody = /** @type {HTMLTableSectionElement} */ (document.querySelector('#instances tbody'));
const template = /** @type {HTMLTemplateElement} */ (document.getElementById('row-template'));
const emptyEl = /** @type {HTMLElement} */ (document.getElementById('empty'));

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
export async function catchUp() {
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

/** An entry from the live feed: applied now, or after the catch-up under way (which it is newer than). */
export function receive(/** @type {Entry} */ entry) {
	catchingUp ? heldBack.push(entry) : apply(entry);
}
