/**
 * The example page of live streams (docs/streams.md), served by the example
 * Worker at `/examples/progress`: it starts a `progress` workflow and draws its
 * progress bar from `GET /workflows/:id/stream` with the browser's EventSource,
 * which reconnects by itself and sends `Last-Event-ID`, so a reconnect (a
 * deploy, a crash of the runtime, a network change) skips and repeats nothing.
 * `?id=<id>` watches an instance that exists instead of starting one.
 *
 * EventSource sends no Authorization header: on a deployment with `API_TOKEN`,
 * serve such a page from a Worker of your own that holds the token (or read the
 * stream with `fetch` and the header); this one is for development.
 */
export function progressPage(): string {
	return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Live progress · shardflow</title>
<style>
	body { font: 15px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; color: #1f2328; }
	h1 { font-size: 1.4rem; margin-bottom: .25rem; }
	p.lead { color: #59636e; margin-top: 0; }
	button { font: inherit; padding: .45rem 1rem; border-radius: 6px; border: 1px solid #1f6feb; background: #1f6feb; color: #fff; cursor: pointer; }
	button:disabled { opacity: .5; cursor: default; }
	.bar { height: 1.4rem; border-radius: 6px; background: #eaeef2; overflow: hidden; margin: 1.25rem 0 .5rem; }
	.fill { height: 100%; width: 0; background: linear-gradient(90deg, #1f6feb, #2da44e); transition: width .2s ease; }
	.meta { display: flex; justify-content: space-between; color: #59636e; font-variant-numeric: tabular-nums; }
	.state[data-state=reconnecting] { color: #bc4c00; }
	.state[data-state=completed] { color: #1a7f37; font-weight: 600; }
	ol { font: 13px/1.6 ui-monospace, monospace; color: #59636e; max-height: 16rem; overflow: auto; padding-left: 2.5rem; }
</style>
</head>
<body>
<h1>Live progress</h1>
<p class="lead">Starts an import workflow of 20 parts and follows its stream: every part publishes <code>step.emit('progress', …)</code>.</p>
<button id="start" type="button">Start an import</button>
<div class="bar" role="progressbar" aria-valuemin="0" aria-valuemax="100" aria-valuenow="0"><div class="fill" id="fill"></div></div>
<div class="meta"><span id="count">not started</span><span class="state" id="state" data-state="idle"></span></div>
<ol id="log" aria-label="progress messages"></ol>
<script type="module">
const $ = (id) => document.getElementById(id);
const show = (state, text) => { $('state').dataset.state = state; $('state').textContent = text; };

function follow(id, after) {
	$('start').disabled = true;
	history.replaceState(null, '', '?id=' + encodeURIComponent(id));
	show('connecting', 'connecting…');
	let lastSeq = after;
	let ended = false;
	const source = new EventSource('/workflows/' + encodeURIComponent(id) + '/stream' + (after === undefined ? '' : '?after=' + after));
	source.onopen = () => show('live', 'live · ' + id);
	source.onerror = () => {
		if (ended) return;
		show('reconnecting', 'reconnecting…');
		// The browser reconnects by itself and sends Last-Event-ID. If it gave up (an error response while
		// the server restarted), start again after the last message shown: nothing is skipped or repeated.
		if (source.readyState === EventSource.CLOSED) setTimeout(() => follow(id, lastSeq), 1000);
	};
	source.onmessage = (message) => {
		const event = JSON.parse(message.data);
		lastSeq = event.seq;
		if (event.kind === 'stream.message' && event.topic === 'progress') {
			const { done, of, percent } = event.data;
			$('fill').style.width = percent + '%';
			$('fill').parentElement.setAttribute('aria-valuenow', String(percent));
			$('count').textContent = done + ' / ' + of + ' parts · ' + percent + '%';
			const item = document.createElement('li');
			item.dataset.seq = String(event.seq);
			item.dataset.done = String(done);
			item.textContent = 'part ' + done + ' of ' + of + ' done';
			$('log').append(item);
			item.scrollIntoView({ block: 'nearest' });
		} else if (event.kind.startsWith('workflow.')) {
			show('live', event.kind.slice('workflow.'.length) + ' · ' + id);
		}
	};
	// The instance finished: close, or EventSource would reconnect for ever.
	source.addEventListener('end', (message) => {
		ended = true;
		source.close();
		const { status } = JSON.parse(message.data);
		show(status, status);
		$('start').disabled = false;
	});
}

$('start').addEventListener('click', async () => {
	$('log').replaceChildren();
	$('fill').style.width = '0';
	const response = await fetch('/workflows', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'progress', payload: { parts: 20, partMs: 300 } }) });
	const body = await response.json();
	if (!response.ok) return show('error', body.error?.message ?? 'could not start');
	follow(body.id);
});

const existing = new URLSearchParams(location.search).get('id');
if (existing) follow(existing);
</script>
</body>
</html>`;
}
