// The instance list, live: one WebSocket per index shard of the listed
// type(s), accepted and hibernated by the shard itself, which sends every
// entry it stores. Rows that match the filter are inserted or updated in
// place; rows that stop matching leave. After a lost connection the socket
// reconnects with backoff and the page re-reads its listing (catch-up).
import { base } from './common.js';
import { config, filter, wireFilterForm } from './listfilter.js';
import { catchUp } from './listrows.js';
import { connect, liveEl, setState, sockets } from './listfeed.js';
import './listcolumns.js';

wireFilterForm();

// A bulk job started from this page has finished: its changes are in the index, read the page again.
document.addEventListener('shardflow:bulk-finished', () => void catchUp());

const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
if (config.refused) {
	// The API refused this query: no feed, no catch-up, so no other list ever fills in under the error.
	liveEl.dataset.state = 'off';
	liveEl.textContent = 'Not live';
	liveEl.title = 'The query was refused: fix the filter to see a live list';
} else {
	for (const [type, shards] of Object.entries(config.shards)) {
		// A group's shards are its own (docs/residency.md): the Worker reaches them in the group's jurisdiction.
		const inGroup = filter.group ? `?group=${encodeURIComponent(filter.group)}` : '';
		for (let n = 0; n < shards; n++) connect(`${type}:${n}`, `${scheme}//${location.host}${base}/live/${encodeURIComponent(type)}/${n}${inGroup}`);
	}
	setState();
}
// For tests and the curious: the page's live state.
Object.assign(window, { shardflowList: { catchUp, sockets } });
