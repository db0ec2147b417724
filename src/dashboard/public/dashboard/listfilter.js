// What the list shows: the filter as the list API applies it (to check a live entry against),
// the API path of the page, and the filter form.

export const config = JSON.parse(/** @type {HTMLElement} */ (document.getElementById('list-config')).textContent ?? '{}');
export const filter = config.filter;
export const orderKey = filter.order === 'updated' ? 'updatedAt' : 'createdAt';
/** Ordered by a search attribute: a live change re-reads the page (the API's order), rather than placing rows here. */
export const byAttribute = /^-?attr\./.test(filter.order);
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
export function matches(e) {
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

export function listPath() {
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

/** The filter form's behaviour: several values of a keyword field, another type's conditions left out, folded on a phone. */
export function wireFilterForm() {
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

	// ---- the filter form: open on a wide screen, folded on a phone (the list is what the first screen shows) ----
	const fold = /** @type {HTMLDetailsElement | null} */ (document.getElementById('filters-fold'));
	if (fold && !matchMedia('(max-width: 760px)').matches) fold.open = true;
}
