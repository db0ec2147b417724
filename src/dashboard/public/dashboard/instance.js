// The instance page: follows the history while the instance runs (polling
// `GET /workflows/:id/history?after=<last seq>`, one object, about once a
// second, as docs/history-format.md suggests), draws the timeline and the
// raw history, and runs the controls and the send-event form. The cards are
// modules of their own: header.js, controls.js, history.js, messages.js,
// eventform.js, over what instancepage.js shares.
import { api, duration, refreshTimes } from './common.js';
import { buildTimeline, renderTimeline } from './timeline.js';
import { $, FINISHED, path, state, shownEvents } from './instancepage.js';
import { showStatus } from './header.js';
import { updateControls, wireControls } from './controls.js';
import { messagesBody } from './messages.js';
import { historyBody, loadHistory, wireRunPicker } from './history.js';
import { wireEventForm } from './eventform.js';

function draw() {
	// An earlier run is over: its bars end at its last record, never at now.
	const shown = shownEvents();
	const now = state.viewedRun === null ? Date.now() : (shown.at(-1)?.at ?? Date.now());
	renderTimeline($('#timeline'), buildTimeline(shown, now), duration);
}

/** @type {Promise<void> | null} */
let refreshing = null;
async function refresh(force = false) {
	if (refreshing) return refreshing;
	refreshing = (async () => {
		const grew = await loadHistory();
		if (grew || force) {
			const res = await api(path);
			if (res.ok) showStatus(res.body);
		}
		draw();
		refreshTimes(historyBody);
		refreshTimes(messagesBody);
	})().finally(() => (refreshing = null));
	return refreshing;
}

// Poll about once a second while the instance can still change on its own; open bars grow in between.
async function follow() {
	if (state.deleted) return;
	await refresh();
	setTimeout(follow, FINISHED.includes(state.status) ? 5000 : 1000);
}
wireControls(refresh);
wireRunPicker(draw);
setInterval(() => !FINISHED.includes(state.status) && state.viewedRun === null && draw(), 250);
updateControls();
follow();

wireEventForm(refresh);
