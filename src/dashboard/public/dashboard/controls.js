// The controls: pause, resume, terminate, restart and delete, each after a confirmation, enabled
// by the status.
import { api, base } from './common.js';
import { confirmAction } from './confirm.js';
import { restartPoints } from './timeline.js';
import { $, config, currentRunEvents, FINISHED, id, path, say, state } from './instancepage.js';

const ALLOWED = {
	pause: ['created', 'running', 'sleeping', 'waiting'],
	resume: ['paused', 'diverged'],
	terminate: ['queued', 'created', 'running', 'sleeping', 'waiting', 'paused', 'diverged', 'rolling_back'],
	restart: [...FINISHED, 'diverged'],
	// Any status: an unfinished instance is terminated first (the dialog says so).
	delete: ['queued', 'created', 'running', 'sleeping', 'waiting', 'paused', 'diverged', 'rolling_back', ...FINISHED],
};

export function updateControls() {
	document.querySelectorAll('button[data-action]').forEach((node) => {
		const button = /** @type {HTMLButtonElement} */ (node);
		button.disabled = !ALLOWED[/** @type {keyof typeof ALLOWED} */ (button.dataset.action ?? '')].includes(state.status);
	});
}

/** The restart dialog's choice: from the beginning, or from a step the current run recorded. */
function restartChoice() {
	const label = document.createElement('label');
	label.className = 'dialog-field';
	const span = Object.assign(document.createElement('span'), { textContent: 'Start the new run from' });
	const select = document.createElement('select');
	select.id = 'restart-from';
	select.append(new Option('the beginning (every step runs again)', ''));
	const points = restartPoints(currentRunEvents());
	for (const p of points) select.append(new Option(`${p.label}: the steps completed before it keep their results`, JSON.stringify({ name: p.name, type: p.type })));
	label.append(span, select);
	return { element: label, from: () => (select.value ? JSON.parse(select.value) : undefined) };
}

/** The terminate dialog's choice: run the rollbacks of the completed steps first (not while they already run: a terminate then abandons them). */
function terminateChoice() {
	const box = document.createElement('div');
	box.className = 'dialog-field';
	const rollback = Object.assign(document.createElement('input'), { type: 'checkbox', id: 'terminate-rollback', checked: false });
	if (state.status !== 'rolling_back') {
		const l = document.createElement('label');
		l.className = 'check';
		l.append(rollback, ' Run the rollbacks (compensations) of its completed steps first');
		box.append(l);
	}
	return { element: box, rollback: () => state.status !== 'rolling_back' && rollback.checked };
}

/** The delete dialog's choices: archive first (when a bucket is bound), and terminate first (an unfinished instance). */
function deleteChoice() {
	const box = document.createElement('div');
	box.className = 'dialog-field';
	const archive = Object.assign(document.createElement('input'), { type: 'checkbox', id: 'delete-archive', checked: true });
	const terminate = Object.assign(document.createElement('input'), { type: 'checkbox', id: 'delete-terminate', checked: true });
	if (config.archiveBound) {
		const l = document.createElement('label');
		l.className = 'check';
		l.append(archive, ' Archive its history first (R2), readable here afterwards');
		box.append(l);
	}
	if (!FINISHED.includes(state.status)) {
		const l = document.createElement('label');
		l.className = 'check';
		l.append(terminate, ` Terminate it first (it is ${state.status})`);
		box.append(l);
	}
	return { element: box, archive: () => config.archiveBound && archive.checked, terminate: () => !FINISHED.includes(state.status) && terminate.checked };
}
/** Wires the control buttons; `refresh` reads the instance again after a control answered. */
export function wireControls(/** @type {(force?: boolean) => Promise<void>} */ refresh) {
	document.querySelectorAll('button[data-action]').forEach((node) =>
		node.addEventListener('click', async () => {
			const button = /** @type {HTMLButtonElement} */ (node);
			const action = button.dataset.action;
			const choice = action === 'restart' ? restartChoice() : action === 'delete' ? deleteChoice() : action === 'terminate' ? terminateChoice() : null;
			if (!(await confirmAction(button.dataset.confirm ?? `${action}?`, button.classList.contains('danger'), choice?.element))) return;
			button.disabled = true;
			let res;
			if (action === 'delete') {
				const c = /** @type {ReturnType<typeof deleteChoice>} */ (choice);
				const q = new URLSearchParams();
				if (c.terminate()) q.set('terminate', 'true');
				if (c.archive()) q.set('archive', 'true');
				res = await api(`${path}${q.size ? `?${q}` : ''}`, { method: 'DELETE' });
				if (res.ok) {
					state.deleted = true;
					if (c.archive()) return location.reload(); // its archived record, read-only
					document.querySelectorAll('button[data-action]').forEach((b) => (/** @type {HTMLButtonElement} */ (b).disabled = true));
					const el = $('#control-result');
					el.className = 'ok-box';
					el.replaceChildren(`Deleted ${id}. `, Object.assign(document.createElement('a'), { href: `${base}/instances?type=${encodeURIComponent(config.type)}`, textContent: `Back to the ${config.type} list` }));
					return;
				}
			} else {
				const from = action === 'restart' ? /** @type {ReturnType<typeof restartChoice>} */ (choice).from() : undefined;
				const rollback = action === 'terminate' && /** @type {ReturnType<typeof terminateChoice>} */ (choice).rollback();
				res = await api(`${path}/${action}${rollback ? '?rollback=true' : ''}`, { method: 'POST', ...(from ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ from }) } : {}) });
			}
			await refresh(true);
			// The status the page shows now, not the one the control answered (a resumed instance is running only until its pass suspends again).
			if (res.ok) say('#control-result', true, `${action}: done; the instance is ${state.status} now.`);
			else say('#control-result', false, res.body?.error?.message ?? `failed (${res.status})`, res.body?.error?.code);
		}),
	);
}
