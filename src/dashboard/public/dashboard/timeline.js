// The step timeline, built from the instance history (docs/history-format.md):
// one row per step, sleep or wait; a step's row shows each attempt and the
// retry waits between them. `buildTimeline` is pure (tested on Node, in
// test/dashboard/timeline.test.ts); `renderTimeline` draws it.

/**
 * @typedef {{ type: 'attempt', attempt: number, start: number, end: number | null, state: 'ok' | 'failed' | 'running' | 'interrupted', error?: { name: string, message: string, code?: string } }
 *   | { type: 'retry', start: number, end: number | null, until: number }
 *   | { type: 'sleep', start: number, end: number | null, until: number }
 *   | { type: 'wait', start: number, end: number | null, event: string, outcome: 'received' | 'timed_out' | null, timeoutAt: number | null }
 *   | { type: 'child', start: number, end: number | null, childId: string, outcome: 'started' | 'completed' | 'failed' | null }} Segment
 * @typedef {{ key: string, kind: 'do' | 'sleep' | 'wait' | 'rollback' | 'child', name: string, segments: Segment[], cancelled?: true }} Row
 * @typedef {{ at: number, kind: string, label: string }} Marker
 * @typedef {{ start: number, end: number, finishedAt: number | null, rows: Row[], markers: Marker[] }} Timeline
 */

const FINISH_KINDS = ['workflow.completed', 'workflow.errored', 'workflow.terminated'];

/**
 * @param {Array<Record<string, any>>} events the history of one generation, in seq order
 * @param {number} now the time open bars grow to while the instance runs
 * @returns {Timeline}
 */
export function buildTimeline(events, now) {
	/** @type {Map<string, Row>} */
	const rows = new Map();
	/** @type {Marker[]} */
	const markers = [];
	let finishedAt = null;
	let terminated = false;
	/**
	 * @param {Row['kind']} kind
	 * @param {string} name
	 */
	const row = (kind, name) => {
		const key = `${kind}:${name}`;
		let found = rows.get(key);
		if (!found) rows.set(key, (found = { key, kind, name, segments: [] }));
		return found;
	};
	const open = (/** @type {Row} */ r, /** @type {Segment['type']} */ type) => /** @type {any} */ ([...r.segments].reverse().find((s) => s.type === type && s.end === null));

	for (const e of events) {
		switch (e.kind) {
			case 'rollback.started':
			case 'step.started': {
				const r = row(e.kind === 'step.started' ? 'do' : 'rollback', e.step);
				const running = open(r, 'attempt');
				if (running) Object.assign(running, { end: e.at, state: 'interrupted' }); // a crash cut it short
				const retry = open(r, 'retry');
				if (retry) retry.end = e.at;
				r.segments.push({ type: 'attempt', attempt: e.attempt, start: e.at, end: null, state: 'running' });
				break;
			}
			case 'step.completed':
			case 'step.failed':
			case 'step.attempt_failed':
			case 'rollback.completed':
			case 'rollback.failed':
			case 'rollback.attempt_failed': {
				const r = row(e.kind.startsWith('step.') ? 'do' : 'rollback', e.step);
				const running = open(r, 'attempt') ?? { type: 'attempt', attempt: e.attempt, start: e.at, end: null, state: 'running' };
				if (!r.segments.includes(running)) r.segments.push(running);
				Object.assign(running, { end: e.at, state: e.kind.endsWith('.completed') ? 'ok' : 'failed' }, e.error ? { error: e.error } : {});
				if (e.kind.endsWith('.attempt_failed')) r.segments.push({ type: 'retry', start: e.at, end: null, until: e.retryAt });
				break;
			}
			case 'sleep.started':
				row('sleep', e.step).segments.push({ type: 'sleep', start: e.at, end: null, until: e.until });
				break;
			case 'sleep.finished': {
				const r = row('sleep', e.step);
				const sleeping = open(r, 'sleep');
				if (sleeping) sleeping.end = e.at;
				else r.segments.push({ type: 'sleep', start: e.at, end: e.at, until: e.at });
				break;
			}
			case 'wait.started':
				row('wait', e.step).segments.push({ type: 'wait', start: e.at, end: null, event: e.event, outcome: null, timeoutAt: e.timeoutAt ?? null });
				break;
			case 'event.consumed':
			case 'wait.timed_out': {
				const r = row('wait', e.step);
				// An event buffered before the wait was reached is consumed without a wait.started: a bar of no length.
				const waiting = open(r, 'wait') ?? { type: 'wait', start: e.at, end: null, event: e.event, outcome: null, timeoutAt: null };
				if (!r.segments.includes(waiting)) r.segments.push(waiting);
				Object.assign(waiting, { end: e.at, outcome: e.kind === 'event.consumed' ? 'received' : 'timed_out' });
				break;
			}
			case 'webhook.created':
				row('wait', e.step).segments.push({ type: 'wait', start: e.at, end: null, event: 'webhook', outcome: null, timeoutAt: e.expiresAt ?? null });
				break;
			case 'webhook.received':
			case 'webhook.timed_out': {
				const waiting = open(row('wait', e.step), 'wait');
				if (waiting) Object.assign(waiting, { end: e.at, outcome: e.kind === 'webhook.received' ? 'received' : 'timed_out' });
				break;
			}
			case 'child.started':
				// A started child (fire and forget) is a point; an invoked one waits until child.completed / child.failed.
				row('child', e.step).segments.push({ type: 'child', start: e.at, end: e.mode === 'start' ? e.at : null, childId: e.childId, outcome: e.mode === 'start' ? 'started' : null });
				break;
			case 'child.completed':
			case 'child.failed': {
				const waiting = open(row('child', e.step), 'child');
				if (waiting) Object.assign(waiting, { end: e.at, outcome: e.kind === 'child.completed' ? 'completed' : 'failed' });
				break;
			}
			case 'event.received':
				markers.push({ at: e.at, kind: e.kind, label: `event ${e.event} received` });
				break;
			case 'workflow.paused':
			case 'workflow.resumed':
			case 'workflow.restarted':
			case 'workflow.diverged':
			case 'workflow.rolling_back':
				markers.push({ at: e.at, kind: e.kind, label: e.kind.slice('workflow.'.length) });
				break;
			default:
				if (FINISH_KINDS.includes(e.kind)) {
					finishedAt = e.at;
					terminated = e.kind === 'workflow.terminated';
					markers.push({ at: e.at, kind: e.kind, label: e.kind.slice('workflow.'.length) });
				}
		}
	}
	const start = events.length ? events[0].at : now;
	const lastAt = events.length ? events[events.length - 1].at : now;
	const end = finishedAt ?? Math.max(now, lastAt);
	// Bars still open when the run ended stop there; while it runs they grow to now.
	if (finishedAt !== null) {
		for (const r of rows.values()) {
			for (const s of r.segments) {
				if (s.end !== null) continue;
				s.end = finishedAt;
				if (s.type === 'attempt') s.state = 'interrupted';
				// A terminate cancels what it interrupts (the step's status says `cancelled` too).
				if (terminated) r.cancelled = true;
			}
		}
	}
	return { start, end: Math.max(end, start + 1), finishedAt, rows: [...rows.values()], markers };
}

/**
 * The smallest round duration (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten ms) of at least `ms`.
 * @param {number} ms
 */
export function roundTick(ms) {
	if (!(ms > 0)) return 1;
	const power = 10 ** Math.floor(Math.log10(ms));
	for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * power >= ms - 1e-9) return m * power;
	return 10 * power;
}

const KIND_LABEL = { do: 'step', sleep: 'sleep', wait: 'wait', rollback: 'rollback', child: 'child' };
const MAX_ROWS = 300;
/** The glyph each marker shows on the timeline (the legend names them). */
/** @type {Record<string, string>} */
const MARK_GLYPH = {
	'workflow.paused': '‖',
	'workflow.resumed': '▶',
	'event.received': '✉',
	'workflow.restarted': '↻',
	'workflow.diverged': '!',
	'workflow.rolling_back': '↶',
	'workflow.completed': '■',
	'workflow.errored': '■',
	'workflow.terminated': '■',
};

/**
 * The steps a restart can start from, in the order the run first reached them, as the restart
 * API names them (`{name, type}`, docs/writing-workflows.md "Restart from a step").
 * @param {Array<Record<string, any>>} events the current run's history
 * @returns {{ name: string, type: string, label: string }[]}
 */
export function restartPoints(events) {
	/** @type {Record<string, string>} */
	const TYPE = { 'step.started': 'do', 'sleep.started': 'sleep', 'wait.started': 'waitForEvent', 'event.consumed': 'waitForEvent', 'webhook.created': 'webhook', 'child.started': 'invoke' };
	/** @type {Record<string, string>} */
	const LABEL = { do: 'step', sleep: 'sleep', waitForEvent: 'wait for event', webhook: 'webhook', invoke: 'child' };
	const seen = new Set();
	const points = [];
	for (const e of events) {
		const type = TYPE[e.kind];
		if (!type || typeof e.step !== 'string' || seen.has(`${type}:${e.step}`)) continue;
		seen.add(`${type}:${e.step}`);
		points.push({ name: e.step, type, label: `${LABEL[type]} "${e.step}"` });
	}
	return points;
}

/**
 * A tick label: short enough that five fit on a phone (`+1.5 s`, `+2 min`).
 * @param {number} ms
 * @param {(ms: number) => string} duration
 */
function tickLabel(ms, duration) {
	if (ms === 0) return '0';
	if (ms >= 60_000 && ms % 60_000 === 0 && ms < 3_600_000) return `+${ms / 60_000} min`;
	if (ms >= 3_600_000 && ms % 3_600_000 === 0) return `+${ms / 3_600_000} h`;
	return `+${duration(ms)}`;
}

/**
 * What a row took, for its visible label: the time from its first bar's start to its last bar's end.
 * @param {Row} r
 * @param {number} end
 * @param {(ms: number) => string} duration
 */
function rowSummary(r, end, duration) {
	const first = r.segments[0];
	const last = r.segments[r.segments.length - 1];
	if (!first || !last) return '';
	const took = duration((last.end ?? end) - first.start);
	const attempts = r.segments.filter((s) => s.type === 'attempt').length;
	const open = last.end === null;
	if (r.cancelled) return `${took} · cancelled`;
	if (r.kind === 'do' || r.kind === 'rollback') {
		const failed = r.segments.some((s) => s.type === 'attempt' && s.state === 'failed');
		return `${open ? 'running ' : ''}${took}${attempts > 1 ? ` · ${attempts} attempts` : failed ? ' · failed' : ''}`;
	}
	if (r.kind === 'wait' && last.type === 'wait') return open ? `waiting ${took}` : `${took}${last.outcome === 'timed_out' ? ' · timed out' : ''}`;
	if (r.kind === 'child' && last.type === 'child') return open ? `waiting ${took}` : last.outcome === 'started' ? 'started' : `${took} · ${last.outcome}`;
	return open ? `sleeping ${took}` : took;
}

/**
 * @param {HTMLElement} container
 * @param {Timeline} timeline
 * @param {(ms: number) => string} duration
 */
export function renderTimeline(container, timeline, duration) {
	const { start, end, rows, markers } = timeline;
	if (rows.length === 0) {
		container.innerHTML = '<p class="tl-empty">No steps yet.</p>';
		return;
	}
	// Rows the operator opened stay open across redraws (the page redraws while the instance runs).
	const opened = new Set([...container.querySelectorAll('.tl-row[aria-expanded="true"]')].map((el) => /** @type {HTMLElement} */ (el).dataset.row));
	// The axis runs to four round ticks (+250 ms, not +253 ms): a little past the last event at most.
	const step = roundTick((end - start) / 4);
	const span = 4 * step;
	const pct = (/** @type {number} */ t) => `${(((Math.min(Math.max(t, start), end) - start) / span) * 100).toFixed(3)}%`;
	const doc = container.ownerDocument;
	const fragment = doc.createDocumentFragment();
	const axis = doc.createElement('div');
	axis.className = 'tl-axis';
	const ticks = doc.createElement('div');
	ticks.className = 'tl-ticks';
	for (const f of [0, 0.25, 0.5, 0.75, 1]) {
		const tick = doc.createElement('span');
		tick.style.left = `${f * 100}%`;
		tick.textContent = tickLabel(Math.round(span * f), duration);
		ticks.appendChild(tick);
	}
	axis.appendChild(ticks);
	fragment.appendChild(axis);
	const shownMarkers = markers.slice(-50);
	if (shownMarkers.length) {
		// Markers get a lane of their own with a glyph each, so they read without hovering.
		const lane = doc.createElement('div');
		lane.className = 'tl-lane';
		const track = doc.createElement('div');
		track.className = 'tl-lane-track';
		// A flag close to the one before it goes one level up, so neighbours never cover each other.
		let lastAt = -Infinity;
		let level = 0;
		let levels = 1;
		for (const m of shownMarkers) {
			const flag = doc.createElement('span');
			flag.className = `tl-flag ${m.kind.replace('.', '-')}`;
			const at = (Math.min(Math.max(m.at, start), end) - start) / span;
			level = at - lastAt < 0.04 ? (level + 1) % 3 : 0;
			levels = Math.max(levels, level + 1);
			lastAt = at;
			flag.style.left = pct(m.at);
			flag.style.top = `${1 + level * 20}px`;
			flag.textContent = MARK_GLYPH[m.kind] ?? '•';
			flag.title = `${m.label}, +${duration(m.at - start)}`;
			flag.setAttribute('aria-label', flag.title);
			track.appendChild(flag);
		}
		track.style.height = lane.style.height = `${levels * 20}px`;
		lane.appendChild(track);
		fragment.appendChild(lane);
	}
	const shown = rows.slice(-MAX_ROWS);
	if (shown.length < rows.length) {
		const note = doc.createElement('p');
		note.className = 'muted';
		note.textContent = `Showing the last ${MAX_ROWS} of ${rows.length} rows; the history below has every record.`;
		fragment.appendChild(note);
	}
	for (const r of shown) {
		const line = doc.createElement('div');
		line.className = 'tl-row';
		line.dataset.row = r.key;
		// A row opens on a tap, a click or Enter/Space: its attempts and waits in words (no hover on a phone).
		line.tabIndex = 0;
		line.setAttribute('role', 'button');
		line.setAttribute('aria-expanded', opened.has(r.key) ? 'true' : 'false');
		const name = doc.createElement('div');
		name.className = 'tl-name';
		name.title = r.name;
		const kind = doc.createElement('span');
		kind.className = 'kind';
		kind.textContent = KIND_LABEL[r.kind];
		const label = doc.createElement('span');
		label.className = 'tl-label';
		label.textContent = r.name;
		const took = doc.createElement('span');
		took.className = 'tl-took';
		took.textContent = rowSummary(r, end, duration);
		name.append(kind, label, took);
		const track = doc.createElement('div');
		track.className = 'tl-track';
		const detail = doc.createElement('ol');
		detail.className = 'tl-detail';
		for (const s of r.segments) {
			const bar = doc.createElement('div');
			const to = s.end ?? end;
			bar.className = `seg ${s.type}${s.type === 'attempt' ? ` ${s.state}` : ''}${s.type === 'child' && s.outcome === 'failed' ? ' failed' : ''}${s.end === null ? ' open' : ''}${r.cancelled && s === r.segments[r.segments.length - 1] ? ' cancelled' : ''}`;
			bar.style.left = pct(s.start);
			bar.style.width = `calc(${pct(to)} - ${pct(s.start)})`;
			bar.dataset.segment = s.type;
			bar.title = describe(s, to, duration);
			track.appendChild(bar);
			const li = doc.createElement('li');
			li.textContent = `+${duration(s.start - start)}: ${bar.title}`;
			detail.appendChild(li);
		}
		// Pauses, resumes, received events and the end, as thin lines across every row.
		for (const m of shownMarkers) {
			const mark = doc.createElement('div');
			mark.className = `tl-marker ${m.kind.replace('.', '-')}`;
			mark.style.left = pct(m.at);
			mark.title = `${m.label}, +${duration(m.at - start)}`;
			track.appendChild(mark);
		}
		const toggle = () => line.setAttribute('aria-expanded', line.getAttribute('aria-expanded') === 'true' ? 'false' : 'true');
		line.addEventListener('click', toggle);
		line.addEventListener('keydown', (event) => {
			if (event.key === 'Enter' || event.key === ' ') {
				event.preventDefault();
				toggle();
			}
		});
		line.append(name, track, detail);
		fragment.appendChild(line);
	}
	if (shownMarkers.length) {
		// The same marks in words, with their times.
		const list = doc.createElement('p');
		list.className = 'tl-marks muted';
		list.textContent = shownMarkers.map((m) => `${MARK_GLYPH[m.kind] ?? '•'} ${m.label} +${duration(m.at - start)}`).join(' · ');
		fragment.appendChild(list);
	}
	container.replaceChildren(fragment);
}

/**
 * @param {Segment} s
 * @param {number} to
 * @param {(ms: number) => string} duration
 */
function describe(s, to, duration) {
	const took = duration(to - s.start);
	switch (s.type) {
		case 'attempt':
			return `attempt ${s.attempt}: ${s.state === 'running' ? 'running for' : s.state} ${s.state === 'running' ? took : `after ${took}`}${s.error ? ` — ${s.error.code ?? s.error.name}: ${s.error.message}` : ''}`;
		case 'retry':
			return `retry wait, ${took}${s.end === null ? ` (retries at ${new Date(s.until).toLocaleTimeString()})` : ''}`;
		case 'sleep':
			return `sleep, ${took}${s.end === null ? ` (until ${new Date(s.until).toLocaleString()})` : ''}`;
		case 'wait':
			return `waiting for ${s.event}, ${took}${s.outcome ? ` — ${s.outcome === 'received' ? 'received' : 'timed out'}` : ''}`;
		case 'child':
			return s.outcome === 'started' ? `started child ${s.childId}` : `child ${s.childId}, ${took}${s.outcome ? ` — ${s.outcome}` : ' so far'}`;
	}
	return took;
}
