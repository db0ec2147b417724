/// <reference path="../raw-modules.d.ts" />
// The dashboard's browser modules and stylesheet, bundled into the Worker as text
// (`?raw`: wrangler's Text rule in this repository, scripts/build.mjs for the
// package, Vite in the tests), so a Worker that installs shardflow serves its
// dashboard with no `assets` setting and no files to copy.
import alertsJs from './public/dashboard/alerts.js?raw';
import bulkJs from './public/dashboard/bulk.js?raw';
import controlsJs from './public/dashboard/controls.js?raw';
import eventformJs from './public/dashboard/eventform.js?raw';
import headerJs from './public/dashboard/header.js?raw';
import historyJs from './public/dashboard/history.js?raw';
import instancepageJs from './public/dashboard/instancepage.js?raw';
import messagesJs from './public/dashboard/messages.js?raw';
import commonJs from './public/dashboard/common.js?raw';
import confirmJs from './public/dashboard/confirm.js?raw';
import pluralJs from './public/dashboard/plural.js?raw';
import dashboardCss from './public/dashboard/dashboard.css?raw';
import instanceJs from './public/dashboard/instance.js?raw';
import listJs from './public/dashboard/list.js?raw';
import listcolumnsJs from './public/dashboard/listcolumns.js?raw';
import listfeedJs from './public/dashboard/listfeed.js?raw';
import listfilterJs from './public/dashboard/listfilter.js?raw';
import listrowsJs from './public/dashboard/listrows.js?raw';
import overviewJs from './public/dashboard/overview.js?raw';
import scheduleJs from './public/dashboard/schedule.js?raw';
import timelineJs from './public/dashboard/timeline.js?raw';

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** File name (served at `<dashboard>/<name>`) -> its text and content type. */
const FILES: Record<string, { body: string; type: string }> = {
	'alerts.js': { body: alertsJs, type: JS },
	'bulk.js': { body: bulkJs, type: JS },
	'controls.js': { body: controlsJs, type: JS },
	'eventform.js': { body: eventformJs, type: JS },
	'header.js': { body: headerJs, type: JS },
	'history.js': { body: historyJs, type: JS },
	'instancepage.js': { body: instancepageJs, type: JS },
	'messages.js': { body: messagesJs, type: JS },
	'common.js': { body: commonJs, type: JS },
	'confirm.js': { body: confirmJs, type: JS },
	'plural.js': { body: pluralJs, type: JS },
	'dashboard.css': { body: dashboardCss, type: CSS },
	'instance.js': { body: instanceJs, type: JS },
	'list.js': { body: listJs, type: JS },
	'listcolumns.js': { body: listcolumnsJs, type: JS },
	'listfeed.js': { body: listfeedJs, type: JS },
	'listfilter.js': { body: listfilterJs, type: JS },
	'listrows.js': { body: listrowsJs, type: JS },
	'overview.js': { body: overviewJs, type: JS },
	'schedule.js': { body: scheduleJs, type: JS },
	'timeline.js': { body: timelineJs, type: JS },
};

const etags = new Map<string, Promise<string>>();

/** A strong ETag of a file's text (SHA-1, computed once per isolate). */
function etagOf(name: string, body: string): Promise<string> {
	let etag = etags.get(name);
	if (!etag) {
		etag = crypto.subtle.digest('SHA-1', new TextEncoder().encode(body)).then((digest) => `"${[...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('')}"`);
		etags.set(name, etag);
	}
	return etag;
}

/**
 * A dashboard file as Workers static assets would serve it: revalidated on each
 * use (`max-age=0, must-revalidate`, the ETag answered with 304), so a deploy's
 * new scripts are picked up at once and an unchanged one costs no body.
 */
export async function dashboardAsset(name: string, request: Request): Promise<Response | null> {
	const file = Object.hasOwn(FILES, name) ? FILES[name]! : null;
	if (!file) return null;
	const etag = await etagOf(name, file.body);
	const headers = { 'content-type': file.type, etag, 'cache-control': 'public, max-age=0, must-revalidate', 'x-content-type-options': 'nosniff' };
	const match = request.headers.get('if-none-match');
	if (match && match.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)) return new Response(null, { status: 304, headers });
	return new Response(request.method === 'HEAD' ? null : file.body, { headers });
}
