// The instance page's shared parts: its config, the instance's path, what the page knows of the
// run (status, records, the run shown), and the small helpers every card uses.

export const config = JSON.parse(/** @type {HTMLElement} */ (document.getElementById('instance-config')).textContent ?? '{}');
export const id = config.id;
export const path = `/workflows/${encodeURIComponent(id)}`;
export const FINISHED = ['completed', 'errored', 'terminated'];
export const $ = (/** @type {string} */ sel) => /** @type {HTMLElement} */ (document.querySelector(sel));

/** What the page knows of the instance and its run, changed by the cards as answers come in. */
export const state = {
	status: config.status,
	/** @type {Array<Record<string, any>>} */
	events: [],
	/** @type {number | null} */
	generation: null,
	/** @type {number | null} */
	lastSeq: null,
	/** An earlier run the operator chose to look at (`generation=`), or null: the current run, followed live. */
	/** @type {number | null} */
	viewedRun: null,
	deleted: false,
	/** The records of the earlier run shown (`viewedRun`). */
	/** @type {Array<Record<string, any>>} */
	earlierEvents: [],
};

/** Records a table shows at most, newest first. */
export const HISTORY_ROWS = 500;

/** The records the page shows: the current run's, followed live, or an earlier run's the operator chose. */
export const shownEvents = () => (state.viewedRun === null ? state.events : state.earlierEvents);
export const currentRunEvents = () => state.events;

/**
 * @param {string} label
 * @param {unknown} value
 * @param {boolean} [open]
 */
export function jsonBlock(label, value, open) {
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

/**
 * @param {string} target
 * @param {boolean} ok
 * @param {string} text
 * @param {string} [code]
 */
export function say(target, ok, text, code) {
	const el = $(target);
	el.className = ok ? 'ok-box' : 'error-box';
	el.replaceChildren();
	if (code) el.append(Object.assign(document.createElement('strong'), { textContent: code }), ': ');
	el.append(text);
}
