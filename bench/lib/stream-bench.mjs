// Live streams in the benchmark (docs/streams.md): emit-to-receive latency with one
// subscriber and at the last of many subscribers of one instance (the fan-out), the
// fan-out's delivery rate and the runtime's memory for the subscribers, in one run.

/**
 * Subscribes `subscribers` WebSockets to a new streamer instance, lets it publish
 * `messages` ticks, and answers per tick the latency at the last subscriber (ms from
 * the emit to its arrival), plus the delivery rate and the peak memory while it ran.
 * @param {string} base the bench Worker's URL
 * @param {{ subscribers: number, messages: number, gapMs: number, memory?: { reset: () => void, mib: () => number } }} shape
 */
export async function fanOut(base, { subscribers, messages, gapMs, memory }) {
	const { id } = /** @type {{ id: string }} */ (await (await fetch(`${base}/streams/create`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages, gapMs }) })).json());
	const idle = memory?.mib() ?? 0;
	memory?.reset();
	/** @type {number[][]} arrival times of each tick, per subscriber */
	const arrivals = [];
	/** @type {Map<number, number>} emit time of each tick */
	const emitted = new Map();
	const sockets = [];
	let ended = 0;
	/** @type {(value?: unknown) => void} */
	let resolveEnded = () => {};
	const allEnded = new Promise((resolve) => (resolveEnded = resolve));
	const url = `${base.replace(/^http/, 'ws')}/streams/subscribe/${id}`;
	// Connect in batches: a thousand handshakes at once only measures the machine's connect queue.
	for (let start = 0; start < subscribers; start += 50) {
		await Promise.all(
			Array.from({ length: Math.min(50, subscribers - start) }, (_, k) => {
				const n = start + k;
				arrivals[n] = [];
				const ws = new WebSocket(url);
				sockets.push(ws);
				ws.onmessage = (message) => {
					const event = JSON.parse(String(message.data));
					if (event.kind === 'stream.message') {
						arrivals[n][event.data.i] = performance.timeOrigin + performance.now();
						emitted.set(event.data.i, event.data.at);
					} else if (event.kind === 'end' && ++ended === subscribers) resolveEnded(undefined);
				};
				return new Promise((resolve, reject) => {
					ws.onopen = resolve;
					ws.onerror = () => reject(new Error(`subscriber ${n} could not connect`));
				});
			}),
		);
	}
	const started = performance.now();
	await fetch(`${base}/streams/go/${id}`, { method: 'POST' });
	/** @type {NodeJS.Timeout | undefined} */
	let deadline;
	try {
		await Promise.race([allEnded, new Promise((_, reject) => (deadline = setTimeout(() => reject(new Error(`only ${ended} of ${subscribers} streams ended`)), 120_000)))]);
	} finally {
		// A pending deadline kept the driver alive for two minutes after its last row.
		clearTimeout(deadline);
	}
	const seconds = (performance.now() - started) / 1000;
	for (const ws of sockets) ws.close();
	/** @type {number[]} latency at the last subscriber, per tick */
	const lastArrival = [];
	for (let i = 1; i <= messages; i++) {
		const at = emitted.get(i);
		const times = arrivals.map((a) => a[i]);
		if (at === undefined || times.some((t) => t === undefined)) throw new Error(`tick ${i} did not reach every subscriber`);
		lastArrival.push(Math.max(...times) - at);
	}
	return { lastArrival, deliveriesPerSecond: (subscribers * messages) / seconds, peakMiBOverIdle: Math.max(0, (memory?.mib() ?? 0) - idle) };
}
