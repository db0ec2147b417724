// A schedule's page: pause and resume after a confirmation, then the page reloads
// to show the schedule as the API answers it.
import { api } from './common.js';
import { confirmAction } from './confirm.js';

const config = JSON.parse(/** @type {HTMLElement} */ (document.getElementById('schedule-config')).textContent ?? '{}');
const result = /** @type {HTMLElement} */ (document.getElementById('control-result'));

document.querySelectorAll('button[data-schedule-action]').forEach((node) =>
	node.addEventListener('click', async () => {
		const button = /** @type {HTMLButtonElement} */ (node);
		const action = button.dataset.scheduleAction;
		if (!(await confirmAction(button.dataset.confirm ?? `${action}?`, false))) return;
		button.disabled = true;
		const res = await api(`/schedules/${encodeURIComponent(config.type)}/${action}`, { method: 'POST' });
		if (res.ok) {
			location.reload();
			return;
		}
		button.disabled = false;
		result.className = 'error-box';
		result.textContent = `${res.body?.error?.code ?? res.status}: ${res.body?.error?.message ?? 'refused'}`;
	}),
);
