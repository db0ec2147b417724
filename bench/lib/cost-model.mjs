// Dollars per million runs and per million steps, from what the benchmark measured (rows, requests,
// wall time, bytes) and Cloudflare's published prices (Workers Paid, beyond the included amounts).
// docs/cost.md explains each input and cites the price pages with the date they were read.

/** Cloudflare's prices, read 2026-11-26 (docs/cost.md "Prices"). */
export const PRICES = {
	read: '2026-11-26',
	durableObjects: {
		url: 'https://developers.cloudflare.com/durable-objects/platform/pricing/',
		perMillionRequests: 0.15,
		perMillionGbSeconds: 12.5,
		/** Duration is billed for the 128 MB an object is allocated, whatever it uses. */
		gbPerObject: 0.128,
		perMillionRowsRead: 0.001,
		perMillionRowsWritten: 1.0,
		perGbMonth: 0.2,
	},
	workflows: {
		url: 'https://developers.cloudflare.com/workflows/reference/pricing/',
		perMillionRequests: 0.3,
		perMillionCpuMs: 0.02,
		perGbMonth: 0.2,
	},
};

/** Completed instances are kept 30 days (DEFAULT_RETENTION), then deleted with all their storage. */
const RETENTION_MONTHS = 1;
const GB = 1e9;

/**
 * The four scenarios of docs/cost.md: what one run did, measured, and what it costs.
 * @param {Record<string, { wallMs: number, statements: number, rowsRead: number, rowsWritten: number, requests: number, bytes: number, bytesWhileSleeping?: number }>} inputs
 */
export function costModel(inputs) {
	const p = PRICES.durableObjects;
	const w = PRICES.workflows;
	const scenarios = [
		{ key: 'trivial', label: '10 trivial steps', steps: 10, activeMs: (m) => m.wallMs, sleepMonths: 0 },
		{ key: 'fetch', label: '10 steps, each awaiting a 200 ms fetch', steps: 10, activeMs: (m) => m.wallMs, sleepMonths: 0 },
		// Measured with a 1 s sleep: rows and requests are those of any sleep; the object is not active while it sleeps (alarm, no pending I/O).
		{ key: 'sleep', label: '2 steps, a 7-day sleep between them', steps: 2, activeMs: (m) => Math.max(0, m.wallMs - 1000), sleepMonths: 7 / 30 },
		// Parent and one child active at a time, both for the whole run: an upper bound.
		{ key: 'children', label: '10 steps, each a one-step child workflow (step.invoke)', steps: 20, activeMs: (m) => 2 * m.wallMs, sleepMonths: 0 },
	];
	const figures = [];
	for (const s of scenarios) {
		const m = inputs[s.key];
		if (!m) continue;
		const gbSeconds = (s.activeMs(m) / 1000) * p.gbPerObject;
		const ours = {
			requests: (m.requests * p.perMillionRequests) / 1e6,
			rowsWritten: (m.rowsWritten * p.perMillionRowsWritten) / 1e6,
			rowsRead: (m.rowsRead * p.perMillionRowsRead) / 1e6,
			duration: (gbSeconds * p.perMillionGbSeconds) / 1e6,
			storage: ((m.bytes * RETENTION_MONTHS + (m.bytesWhileSleeping ?? 0) * s.sleepMonths) / GB) * p.perGbMonth,
		};
		const oursRun = Object.values(ours).reduce((a, b) => a + b, 0);
		// Cloudflare Workflows: one invocation per run, CPU time only (waiting and sleeping are free), storage.
		// Its CPU time is not measurable under wrangler dev; our run's active wall time on a CPU-bound run stands in
		// for it (an upper bound of our own CPU; for the I/O-bound scenarios only the trivial run's share).
		const cpuMs = s.key === 'trivial' ? m.wallMs : inputs.trivial ? (inputs.trivial.wallMs / 10) * s.steps : m.wallMs;
		// Its storage is not readable locally (the local engine keeps it private): left out, which can only flatter it.
		const cf = {
			requests: w.perMillionRequests / 1e6,
			cpu: (cpuMs * w.perMillionCpuMs) / 1e6,
		};
		const cfRun = Object.values(cf).reduce((a, b) => a + b, 0);
		figures.push({ scenario: s.key, label: s.label, steps: s.steps, measured: m, activeMs: s.activeMs(m), cfCpuMsAssumed: cpuMs, ours, oursPerMillionRuns: oursRun * 1e6, oursPerMillionSteps: (oursRun * 1e6) / s.steps, cf, cfPerMillionRuns: cfRun * 1e6, cfPerMillionSteps: (cfRun * 1e6) / s.steps });
	}
	const usd = (v) => (v >= 100 ? `$${v.toFixed(0)}` : v >= 1 ? `$${v.toFixed(2)}` : `$${v.toFixed(3)}`);
	const head = '| scenario | rows written / run | rows read / run | requests / run | active ms / run | bytes kept | ours $ / M runs (requests, rows written, duration, storage) | ours $ / M steps | CF Workflows $ / M runs | CF $ / M steps | ours / CF |';
	const rows = figures.map((f) => {
		const parts = `${usd(f.ours.requests * 1e6)}, ${usd(f.ours.rowsWritten * 1e6)}, ${usd(f.ours.duration * 1e6)}, ${usd(f.ours.storage * 1e6)}`;
		return `| ${f.label} | ${f.measured.rowsWritten} | ${f.measured.rowsRead} | ${f.measured.requests} | ${f.activeMs.toFixed(0)} | ${f.measured.bytes} | ${usd(f.oursPerMillionRuns)} (${parts}) | ${usd(f.oursPerMillionSteps)} | ${usd(f.cfPerMillionRuns)} | ${usd(f.cfPerMillionSteps)} | ${(f.oursPerMillionRuns / f.cfPerMillionRuns).toFixed(1)}x |`;
	});
	const markdown = [
		`## Cost per million runs and steps (prices read ${PRICES.read}; docs/cost.md)`,
		'',
		head,
		`|${head.split('|').slice(1, -1).map(() => '---').join('|')}|`,
		...rows,
		'',
		`Ours: Durable Objects requests $${p.perMillionRequests}/M, rows written $${p.perMillionRowsWritten}/M, rows read $${p.perMillionRowsRead}/M, duration $${p.perMillionGbSeconds}/M GB-s at 128 MB, storage $${p.perGbMonth}/GB-month for the 30 days a completed instance is kept (${p.url}). CF Workflows: $${w.perMillionRequests}/M invocations, $${w.perMillionCpuMs}/M CPU-ms, $${w.perGbMonth}/GB-month (${w.url}); its CPU is not measurable locally: our measured active time of the trivial run stands in (an upper bound), and its storage is left out (not readable locally). Beyond the plans' included amounts; the user's own Worker request is left out on both sides.`,
	].join('\n');
	return { figures, markdown };
}
