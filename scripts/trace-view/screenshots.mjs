// `node scripts/trace-view/screenshots.mjs [<viewer url>] [<out dir>]`: with scripts/trace-view.mjs
// serving Jaeger UI, takes in headless Chromium (the build @sparticuz/chromium ships, driven by
// playwright-core, as the dashboard's browser tests do) what docs/operations.md shows:
//   search.png                 the search page listing every trace of the export
//   upload.png                 the same traces after uploading the OTLP file on the Upload tab
//   trace-<n>.png              each trace's waterfall, span names widened
//   trace-<n>-step-<m>.png     each `shardflow.step` span opened on its attributes (tags)
// Prints the page errors it saw (none expected). Look at the pictures: nothing here judges them.
import chromium from '@sparticuz/chromium';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium as playwright } from 'playwright-core';

const root = resolve(import.meta.dirname, '../..');
const base = process.argv[2] ?? 'http://127.0.0.1:16686';
const out = resolve(process.argv[3] ?? join(root, 'trace-export-out', 'screenshots'));
const upload = join(root, 'trace-export-out', 'trace.otlp.json');
mkdirSync(out, { recursive: true });

const services = (await (await fetch(`${base}/api/services`)).json()).data;
const traces = (await (await fetch(`${base}/api/traces?service=${encodeURIComponent(services[0])}&limit=100`)).json()).data;
// Oldest first: the order the run went through them.
traces.sort((a, b) => Math.min(...a.spans.map((s) => s.startTime)) - Math.min(...b.spans.map((s) => s.startTime)));

const args = chromium.args.filter((arg) => arg !== '--single-process');
const browser = await playwright.launch({ executablePath: await chromium.executablePath(), args, headless: true });
const errors = [];
const open = async (path) => {
	const page = await browser.newPage({ viewport: { width: 1600, height: 1250 } });
	page.on('pageerror', (e) => errors.push(`${path}: ${e.message}`));
	await page.goto(`${base}${path}`);
	return page;
};
try {
	// Every trace whatever its age: the custom time range from 1970 to now.
	let page = await open(`/search?service=${encodeURIComponent(services[0])}&limit=100&lookback=custom&start=0&end=${Date.now() * 1000}`);
	await page.getByText(`${traces.length} Traces`).waitFor();
	await page.screenshot({ path: join(out, 'search.png') });
	await page.close();

	page = await open('/search');
	await page.getByText('Upload', { exact: true }).click();
	await page.locator('input[type=file]').setInputFiles(upload);
	await page.getByText(`${traces.length} Traces`).waitFor();
	await page.screenshot({ path: join(out, 'upload.png') });
	await page.close();

	for (const [n, trace] of traces.entries()) {
		page = await open(`/trace/${trace.traceID}`);
		await page.locator('.span-name-wrapper').first().waitFor();
		// Drag the column divider from a quarter of the width to 45 %, so span names are not cut.
		const header = await page.locator('.TimelineHeaderRow').first().boundingBox();
		await page.mouse.move(header.x + header.width * 0.25, header.y + header.height / 2);
		await page.mouse.down();
		await page.mouse.move(header.x + header.width * 0.45, header.y + header.height / 2, { steps: 8 });
		await page.mouse.up();
		await page.screenshot({ path: join(out, `trace-${n + 1}.png`) });
		const steps = page.locator('.span-name-wrapper', { hasText: 'shardflow.step' });
		for (let m = 0; m < (await steps.count()); m++) {
			await steps.nth(m).click();
			const detail = page.getByText('Tags:').first();
			await detail.click();
			await steps.nth(m).scrollIntoViewIfNeeded();
			await page.evaluate(() => window.scrollBy(0, -300));
			await page.screenshot({ path: join(out, `trace-${n + 1}-step-${m + 1}.png`) });
			await steps.nth(m).click(); // closed again, so the next row is where it was
		}
		await page.close();
	}
} finally {
	await browser.close();
}
console.log(`${traces.length} traces -> ${out}; page errors: ${JSON.stringify(errors)}`);
