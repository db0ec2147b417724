// The live feed: one WebSocket per index shard of the listed type(s), accepted and hibernated
// by the shard itself, which sends every entry it stores; after a lost connection the socket
// reconnects with backoff and the page re-reads its listing (catch-up).
import { catchUp, receive } from './listrows.js';

export const liveEl = /** @type {HTMLElement} */ (document.getElementById('live'));
// ---- sockets: one per shard ----
export const sockets = new Map();
export function setState() {
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
export function connect(key, url) {
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
			for (const entry of message.entries) receive(entry);
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
