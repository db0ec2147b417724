// What a run costs, from what the benchmark measured (rows written and read, alarm writes, requests, active time,
// bytes kept) at Cloudflare's published prices, against the same run on Cloudflare Workflows (and, for reference,
// AWS Step Functions and Temporal Cloud). Two views: the marginal dollars per million runs beyond every included
// amount (the comparison), and a monthly bill at a stated volume with the included amounts applied.
// docs/cost.md explains each input and cites the price pages with the date they were read.

/** Prices and included amounts a month, Workers Paid plan, read 2026-12-06 (docs/cost.md "Prices"). */
export const PRICES = {
	read: '2026-12-06',
	durableObjects: {
		url: 'https://developers.cloudflare.com/durable-objects/platform/pricing/',
		perMillionRequests: 0.15,
		perMillionGbSeconds: 12.5,
		/** Duration is billed for the 128 MB an object is allocated, whatever it uses. */
		gbPerObject: 0.128,
		perMillionRowsRead: 0.001,
		/** Index entries, schema statements, deletes and each `setAlarm()` included (docs/cost.md "What counts as a row written"). */
		perMillionRowsWritten: 1.0,
		perGbMonth: 0.2,
		included: { requests: 1e6, gbSeconds: 400_000, rowsRead: 25e9, rowsWritten: 50e6, gbMonths: 5 },
	},
	workflows: {
		url: 'https://developers.cloudflare.com/workflows/reference/pricing/',
		/** The Steps line: changelog "Workflows pricing adds per-step billing" (2026-07-07), billed from no earlier than 2026-08-10. */
		stepsSource: 'https://developers.cloudflare.com/changelog/ ("Workflows pricing adds per-step billing", 2026-07-07)',
		perMillionRequests: 0.3,
		perMillionCpuMs: 0.02,
		/** $0.80 per 100,000 steps; `step.do`, `sleep`, `sleepUntil` and `waitForEvent` count, retries and rollbacks do not. */
		perMillionSteps: 8.0,
		perGbMonth: 0.2,
		included: { requests: 10e6, cpuMs: 30e6, steps: 500_000, gbMonths: 1 },
	},
	stepFunctions: {
		url: 'https://aws.amazon.com/step-functions/pricing/',
		/** Standard workflows: $0.025 per 1,000 state transitions; a retry is a transition too. */
		perMillionTransitions: 25,
		included: { transitions: 4_000 },
	},
	temporalCloud: {
		url: 'https://temporal.io/pricing',
		/** The first tier of Actions (workflow started, activity started or retried, timer, signal, child started); no included amount counted. */
		perMillionActions: 50,
	},
};

/** How long a completed instance is kept: DEFAULT_RETENTION.completed (src/engine/definition/registry.ts; a test holds them equal). */
export const RETENTION_DAYS = 7;
/** A billing month, as both pricing pages count a GB-month (30 days). */
const MONTH_DAYS = 30;
const GB = 1e9;

/**
 * The six scenarios. `cfSteps`: what Cloudflare Workflows bills as steps for the same run (a `step.do`, a sleep, a
 * waitForEvent; not a retry); `cfInvocations`: instances it starts; `cfCodeSteps`: steps that run code (CPU);
 * `sfnTransitions` / `temporalActions`: the same run's count on AWS Step Functions (standard) and Temporal Cloud.
 */
export const SCENARIOS = [
	{ key: 'trivial', label: '10 trivial steps', cfSteps: 10, cfCodeSteps: 10, cfInvocations: 1, sfnTransitions: 10, temporalActions: 11 },
	{ key: 'fetch', label: '10 steps, each awaiting a 200 ms fetch', cfSteps: 10, cfCodeSteps: 10, cfInvocations: 1, sfnTransitions: 10, temporalActions: 11 },
	// Measured with an 11 s sleep (bench/worker.ts COSTED_SLEEP_MS): rows and requests are those of any sleep past the index
	// delivery's 10 s grace (a shorter one is not delivered alone); it is idle (an alarm, no pending I/O) while it sleeps.
	{ key: 'sleep', label: '2 steps, a 7-day sleep between them', cfSteps: 3, cfCodeSteps: 2, cfInvocations: 1, sfnTransitions: 3, temporalActions: 4, sleepDays: 7 },
	// Cloudflare Workflows has no step.invoke: the lower bound is a step per child in the parent and the child's one step (a
	// hand-built round trip, a create step and a waitForEvent in the parent and a notify step in the child, is 40).
	{ key: 'children', label: '10 steps, each a one-step child workflow (step.invoke)', cfSteps: 20, cfCodeSteps: 20, cfInvocations: 11, sfnTransitions: 20, temporalActions: 21 },
	{ key: 'event', label: 'a step, a waitForEvent (event sent), a step', cfSteps: 3, cfCodeSteps: 2, cfInvocations: 1, sfnTransitions: 3, temporalActions: 4 },
	{ key: 'retry', label: '3 steps, the middle one retried twice', cfSteps: 3, cfCodeSteps: 5, cfInvocations: 1, sfnTransitions: 5, temporalActions: 6 },
];

/** The issue's targets (issue 44), checked on the measured figures. */
export const TARGETS = { trivialRowsWritten: 16, trivialRatio: 0.25, everyRatio: 0.5, trivialBytesKept: 16 * 1024 };

/**
 * What one run measurably did.
 * @typedef {{ wallMs: number, idleMs?: number, statements?: number, rowsRead: number, sqlRowsWritten: number, alarmsSet: number, alarmsDeleted: number, indexAlarmsSet?: number, indexAlarmsDeleted?: number, metricsRows?: number, requests: number, bytes: number, bytesWhileSleeping?: number }} Measured
 */

/** Rows written as billed: the SQL cursors' rows, each setAlarm() and (counted as the upper bound) each deleteAlarm(). */
export const rowsWritten = (/** @type {Measured} */ m) => m.sqlRowsWritten + m.alarmsSet + m.alarmsDeleted;

/**
 * Our usage per run, in billed units. Active time is wall time minus idle time (asleep, waiting for an event or a
 * retry); the children scenario counts parent and child active for the whole run, an upper bound.
 */
export function oursUsage(/** @type {typeof SCENARIOS[number]} */ s, /** @type {Measured} */ m) {
	const activeMs = Math.max(0, m.wallMs - (m.idleMs ?? 0)) * (s.key === 'children' ? 2 : 1);
	const sleepingGbMonths = ((m.bytesWhileSleeping ?? 0) * (s.sleepDays ?? 0)) / MONTH_DAYS / GB;
	return {
		requests: m.requests,
		rowsWritten: rowsWritten(m),
		rowsRead: m.rowsRead,
		gbSeconds: (activeMs / 1000) * PRICES.durableObjects.gbPerObject,
		// Kept RETENTION_DAYS once completed (and while it sleeps): averaged over a 30-day month.
		gbMonths: (m.bytes * RETENTION_DAYS) / MONTH_DAYS / GB + sleepingGbMonths,
		activeMs,
	};
}

/**
 * Cloudflare Workflows' usage per run. Its CPU time is not measurable under wrangler dev: our trivial run's active
 * time per step stands in for each step that runs code (an upper bound of ours). Its storage is left out (the local
 * engine keeps it private), which can only flatter it.
 */
export function cfUsage(/** @type {typeof SCENARIOS[number]} */ s, /** @type {number} */ cpuMsPerStep) {
	return { requests: s.cfInvocations, steps: s.cfSteps, cpuMs: cpuMsPerStep * s.cfCodeSteps };
}

/** Dollars per run of each line, beyond the included amounts (marginal). */
export function oursDollars(/** @type {ReturnType<typeof oursUsage>} */ u) {
	const p = PRICES.durableObjects;
	return {
		rowsWritten: (u.rowsWritten * p.perMillionRowsWritten) / 1e6,
		requests: (u.requests * p.perMillionRequests) / 1e6,
		storage: u.gbMonths * p.perGbMonth,
		duration: (u.gbSeconds * p.perMillionGbSeconds) / 1e6,
		rowsRead: (u.rowsRead * p.perMillionRowsRead) / 1e6,
	};
}
export function cfDollars(/** @type {ReturnType<typeof cfUsage>} */ u) {
	const w = PRICES.workflows;
	return { steps: (u.steps * w.perMillionSteps) / 1e6, requests: (u.requests * w.perMillionRequests) / 1e6, cpu: (u.cpuMs * w.perMillionCpuMs) / 1e6 };
}
const sum = (/** @type {Record<string, number>} */ o) => Object.values(o).reduce((a, b) => a + b, 0);

/**
 * A month's bill for `runs` runs of one scenario, the plan's included amounts applied (and nothing else on the
 * account using them); the Workers Paid subscription ($5 a month, needed by both) left out.
 */
export function monthlyBill(/** @type {ReturnType<typeof oursUsage>} */ ours, /** @type {ReturnType<typeof cfUsage>} */ cf, /** @type {number} */ runs) {
	const p = PRICES.durableObjects;
	const w = PRICES.workflows;
	const over = (/** @type {number} */ perRun, /** @type {number} */ included) => Math.max(0, perRun * runs - included);
	const oursBill = {
		rowsWritten: (over(ours.rowsWritten, p.included.rowsWritten) * p.perMillionRowsWritten) / 1e6,
		requests: (over(ours.requests, p.included.requests) * p.perMillionRequests) / 1e6,
		// Steady state: `runs` a month, each kept its retention, is that many GB on average over the month.
		storage: over(ours.gbMonths, p.included.gbMonths) * p.perGbMonth,
		duration: (over(ours.gbSeconds, p.included.gbSeconds) * p.perMillionGbSeconds) / 1e6,
		rowsRead: (over(ours.rowsRead, p.included.rowsRead) * p.perMillionRowsRead) / 1e6,
	};
	const cfBill = {
		steps: (over(cf.steps, w.included.steps) * w.perMillionSteps) / 1e6,
		requests: (over(cf.requests, w.included.requests) * w.perMillionRequests) / 1e6,
		cpu: (over(cf.cpuMs, w.included.cpuMs) * w.perMillionCpuMs) / 1e6,
	};
	return { ours: oursBill, oursTotal: sum(oursBill), cf: cfBill, cfTotal: sum(cfBill) };
}

/** The volume of the monthly-bill table: 10 million runs a month of one scenario. */
export const BILL_RUNS = 10e6;

/**
 * The Cost section: each measured scenario's rows, its marginal $ per million runs on both sides, the targets, and a
 * monthly bill at BILL_RUNS.
 * @param {Record<string, Measured>} inputs
 */
export function costModel(inputs) {
	const trivial = inputs.trivial;
	const cpuMsPerStep = trivial ? Math.max(0, trivial.wallMs - (trivial.idleMs ?? 0)) / 10 : 1;
	const figures = [];
	for (const s of SCENARIOS) {
		const m = inputs[s.key];
		if (!m) continue;
		const ours = oursUsage(s, m);
		const cf = cfUsage(s, cpuMsPerStep);
		const oursLines = oursDollars(ours);
		const cfLines = cfDollars(cf);
		const oursPerMillionRuns = sum(oursLines) * 1e6;
		const cfPerMillionRuns = sum(cfLines) * 1e6;
		const bill = monthlyBill(ours, cf, BILL_RUNS);
		figures.push({
			scenario: s.key,
			label: s.label,
			measured: m,
			rowsWritten: rowsWritten(m),
			usage: { ours, cf },
			oursLines: Object.fromEntries(Object.entries(oursLines).map(([k, v]) => [k, v * 1e6])),
			cfLines: Object.fromEntries(Object.entries(cfLines).map(([k, v]) => [k, v * 1e6])),
			oursPerMillionRuns,
			cfPerMillionRuns,
			ratio: oursPerMillionRuns / cfPerMillionRuns,
			stepFunctionsPerMillionRuns: s.sfnTransitions * PRICES.stepFunctions.perMillionTransitions,
			temporalPerMillionRuns: s.temporalActions * PRICES.temporalCloud.perMillionActions,
			bill,
		});
	}
	const targets = checkTargets(figures);
	return { figures, targets, markdown: markdown(figures, targets) };
}

/**
 * The two storage layouts side by side (runtime/storage-layout.ts): the compact one the figures above are of, and the
 * table one, which instances created before it (or with SHARDFLOW_STORAGE_LAYOUT=table) keep.
 */
export function layoutComparison(/** @type {any[]} */ compactFigures, /** @type {any[]} */ tableFigures) {
	const tableBy = Object.fromEntries(tableFigures.map((f) => [f.scenario, f]));
	const rows = compactFigures
		.filter((f) => tableBy[f.scenario])
		.map((f) => {
			const t = tableBy[f.scenario];
			return [f.label, `${f.rowsWritten}`, `${t.rowsWritten}`, usd(f.oursPerMillionRuns), usd(t.oursPerMillionRuns), `${f.ratio.toFixed(2)}x`, `${t.ratio.toFixed(2)}x`, `${f.measured.bytes}`, `${t.measured.bytes}`];
		});
	return [
		'#### The two storage layouts (the figures above are the compact one)',
		'',
		table(['scenario', 'rows written / run: compact', 'table', '$ / M runs: compact', 'table', 'ours / CF: compact', 'table', 'bytes kept: compact', 'table'], rows),
	].join('\n');
}

/** Each target of issue 44, met or not, on the figures. */
export function checkTargets(/** @type {any[]} */ figures) {
	const by = Object.fromEntries(figures.map((f) => [f.scenario, f]));
	const list = [];
	if (by.trivial) {
		list.push({ target: `10 trivial steps: <= ${TARGETS.trivialRowsWritten} rows written per run, alarms included`, value: `${by.trivial.rowsWritten} rows`, met: by.trivial.rowsWritten <= TARGETS.trivialRowsWritten });
		list.push({ target: `10 trivial steps: <= ${TARGETS.trivialRatio}x Cloudflare Workflows per million runs`, value: `${by.trivial.ratio.toFixed(2)}x`, met: by.trivial.ratio <= TARGETS.trivialRatio });
		list.push({ target: `bytes kept by a completed trivial instance <= ${TARGETS.trivialBytesKept} (16 KiB)`, value: `${by.trivial.measured.bytes} B`, met: by.trivial.measured.bytes <= TARGETS.trivialBytesKept });
	}
	for (const f of figures) {
		if (f.scenario === 'trivial') continue;
		list.push({ target: `${f.label}: <= ${TARGETS.everyRatio}x Cloudflare Workflows per million runs`, value: `${f.ratio.toFixed(2)}x`, met: f.ratio <= TARGETS.everyRatio });
	}
	return list;
}

const usd = (/** @type {number} */ v) => (v >= 100 ? `$${v.toFixed(0)}` : v >= 1 ? `$${v.toFixed(2)}` : `$${v.toFixed(3)}`);
const table = (/** @type {string[]} */ head, /** @type {string[][]} */ rows) => [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');

function markdown(/** @type {any[]} */ figures, /** @type {any[]} */ targets) {
	const p = PRICES.durableObjects;
	const w = PRICES.workflows;
	const measured = table(
		['scenario', 'rows written / run (SQL + setAlarm + deleteAlarm)', "of the alarm writes, the index shard's", "of the SQL rows, the index shard's run metrics (rollup)", 'rows read / run', 'requests / run', 'active ms / run', 'bytes kept', 'CF steps / run'],
		figures.map((f) => {
			const m = f.measured;
			const onIndex = m.indexAlarmsSet === undefined ? '-' : `${m.indexAlarmsSet + (m.indexAlarmsDeleted ?? 0)}`;
			const metrics = m.metricsRows === undefined ? '-' : `${m.metricsRows}`;
			return [f.label, `**${f.rowsWritten}** (${m.sqlRowsWritten} + ${m.alarmsSet} + ${m.alarmsDeleted})`, onIndex, metrics, `${m.rowsRead}`, `${m.requests}`, f.usage.ours.activeMs.toFixed(0), `${m.bytes}${m.bytesWhileSleeping !== undefined ? ` (${m.bytesWhileSleeping} asleep)` : ''}`, `${f.usage.cf.steps}`];
		}),
	);
	const marginal = table(
		['scenario', 'ours $ / M runs', 'ours: rows written, requests, storage, duration, rows read', 'CF Workflows $ / M runs', 'CF: steps, invocations, CPU', 'ours / CF', 'AWS Step Functions $ / M runs', 'Temporal Cloud $ / M runs'],
		figures.map((f) => {
			const o = f.oursLines;
			const c = f.cfLines;
			return [f.label, `**${usd(f.oursPerMillionRuns)}**`, `${usd(o.rowsWritten)}, ${usd(o.requests)}, ${usd(o.storage)}, ${usd(o.duration)}, ${usd(o.rowsRead)}`, `**${usd(f.cfPerMillionRuns)}**`, `${usd(c.steps)}, ${usd(c.requests)}, ${usd(c.cpu)}`, `**${f.ratio.toFixed(2)}x**`, usd(f.stepFunctionsPerMillionRuns), usd(f.temporalPerMillionRuns)];
		}),
	);
	const bills = table(
		['scenario', `ours $ / month at ${BILL_RUNS / 1e6}M runs`, 'CF Workflows $ / month', 'ours / CF'],
		figures.map((f) => [f.label, usd(f.bill.oursTotal), usd(f.bill.cfTotal), f.bill.cfTotal > 0 ? `${(f.bill.oursTotal / f.bill.cfTotal).toFixed(2)}x` : '-']),
	);
	const targetRows = table(
		['target (issue 44)', 'measured', 'status'],
		targets.map((t) => [t.target, t.value, t.met ? 'met' : '**NOT met**']),
	);
	return [
		`## Cost per million runs (prices read ${PRICES.read}; docs/cost.md)`,
		'',
		'What one run did, every object of the run metered (the instance, its children, their index shard):',
		'',
		measured,
		'',
		'Marginal dollars per million runs, beyond every included amount:',
		'',
		marginal,
		'',
		'Targets:',
		'',
		targetRows,
		'',
		`A month of ${BILL_RUNS / 1e6} million runs of one scenario, the Workers Paid plan's included amounts applied (nothing else on the account using them; the $5 subscription left out):`,
		'',
		bills,
		'',
		`Ours: Durable Objects (${p.url}): rows written $${p.perMillionRowsWritten}/M (50M a month included; each setAlarm() a row written, deleteAlarm() counted too as the upper bound), requests $${p.perMillionRequests}/M (1M), duration $${p.perMillionGbSeconds}/M GB-s at 128 MB (400,000 GB-s), rows read $${p.perMillionRowsRead}/M (25B), storage $${p.perGbMonth}/GB-month (5 GB-month) for the ${RETENTION_DAYS} days a completed instance is kept (DEFAULT_RETENTION). CF Workflows (${w.url}; Steps line: ${w.stepsSource}): steps $${w.perMillionSteps}/M (500,000 included; sleep and waitForEvent count, retries do not), invocations $${w.perMillionRequests}/M (10M), CPU $${w.perMillionCpuMs}/M ms (30M); its CPU is not measurable locally (our trivial run's active ms per step stands in), its storage is left out (not readable locally). AWS Step Functions standard: $${PRICES.stepFunctions.perMillionTransitions}/M state transitions (${PRICES.stepFunctions.url}), Temporal Cloud: $${PRICES.temporalCloud.perMillionActions}/M actions, first tier (${PRICES.temporalCloud.url}); both counted by hand from the scenario, their compute (Lambda, workers) left out. The user's own Worker request is left out on every side.`,
	].join('\n');
}
