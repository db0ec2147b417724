// The columns the operator chose to show, kept in this browser.
import { filter } from './listfilter.js';

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
