import { describe, expect, it } from 'vitest';
import { checkTargets, costModel, layoutComparison, monthlyBill, PRICES, RETENTION_DAYS, SCENARIOS } from '../../bench/lib/cost-model.mjs';
import { readFileSync } from 'node:fs';

// Expected values are worked out by hand from the published prices (docs/cost.md "Prices"), not from the model.
const run = (over: Partial<Parameters<typeof costModel>[0][string]> = {}) => ({ wallMs: 10, idleMs: 0, rowsRead: 0, sqlRowsWritten: 13, alarmsSet: 1, alarmsDeleted: 0, requests: 2, bytes: 0, ...over });

describe("the bench's cost model", () => {
	it('bills 13 SQL rows + 1 alarm + 2 requests of a 10-step run at $14.30 per million runs, against $80.50 on Cloudflare Workflows', () => {
		// Ours: 14 rows written x $1/M = $14; 2 requests x $0.15/M = $0.30; 10 ms x 0.128 GB x $12.50/M GB-s = $0.016.
		// Cloudflare: 10 steps x $8/M = $80; 1 invocation x $0.30/M = $0.30; CPU 1 ms per step x 10 steps x $0.02/M ms = $0.20.
		const { figures } = costModel({ trivial: run() });
		const [trivial] = figures;
		expect(trivial.rowsWritten).toBe(14);
		expect(trivial.oursLines.rowsWritten).toBeCloseTo(14, 9);
		expect(trivial.oursLines.requests).toBeCloseTo(0.3, 9);
		expect(trivial.oursLines.duration).toBeCloseTo(0.016, 9);
		expect(trivial.oursPerMillionRuns).toBeCloseTo(14.316, 9);
		expect(trivial.cfLines.steps).toBeCloseTo(80, 9);
		expect(trivial.cfPerMillionRuns).toBeCloseTo(80.5, 9);
		expect(trivial.ratio).toBeCloseTo(14.316 / 80.5, 9);
	});

	it("counts a deleteAlarm as a row written and keeps a completed instance's bytes for the default retention", () => {
		// 40,960 B kept 7 days: 40,960e-9 GB x 7/30 month x $0.20 = $1.9115 per million runs.
		const [f] = costModel({ trivial: run({ sqlRowsWritten: 50, alarmsSet: 3, alarmsDeleted: 1, bytes: 40_960, requests: 0, wallMs: 0 }) }).figures;
		expect(f.rowsWritten).toBe(54);
		expect(f.oursLines.storage).toBeCloseTo((40_960 / 1e9) * (7 / 30) * 0.2 * 1e6, 9);
		expect(f.oursLines.storage).toBeCloseTo(1.9115, 4);
		// The model's retention is the engine's default (read from its source: this project's tooling tests import no src).
		const registry = readFileSync(new URL('../../src/engine/definition/registry.ts', import.meta.url), 'utf8');
		expect(registry).toMatch(new RegExp(`DEFAULT_RETENTION = \\{ completed: '${RETENTION_DAYS} days',`));
	});

	it('counts a sleep and a waitForEvent as Cloudflare steps but not a retry, and bills the bytes kept while asleep', () => {
		const steps = Object.fromEntries(SCENARIOS.map((s) => [s.key, s.cfSteps]));
		expect(steps).toEqual({ trivial: 10, fetch: 10, sleep: 3, children: 20, event: 3, retry: 3 });
		// 7 days asleep with 53,248 B and 7 days kept after with 40,960 B, idle time (the sleep) not billed as duration.
		const [f] = costModel({ sleep: run({ bytes: 40_960, bytesWhileSleeping: 53_248, wallMs: 1_100, idleMs: 1_000, requests: 0, sqlRowsWritten: 0, alarmsSet: 0 }) }).figures;
		expect(f.usage.ours.activeMs).toBe(100);
		expect(f.oursLines.storage).toBeCloseTo(((40_960 + 53_248) / 1e9) * (7 / 30) * 0.2 * 1e6, 9);
		expect(f.cfLines.steps).toBeCloseTo(24, 9);
	});

	it("applies both plans' included amounts to a month's bill", () => {
		// 10M runs of 14 rows = 140M rows, 50M included: 90M x $1/M = $90. 20M requests, 1M included: 19M x $0.15/M = $2.85.
		// Cloudflare: 100M steps, 500k included: 99.5M x $8/M = $796; 10M invocations, all included.
		const bill = monthlyBill({ rowsWritten: 14, requests: 2, rowsRead: 0, gbSeconds: 0, gbMonths: 0, activeMs: 0 }, { requests: 1, steps: 10, cpuMs: 0 }, 10e6);
		expect(bill.ours.rowsWritten).toBeCloseTo(90, 9);
		expect(bill.ours.requests).toBeCloseTo(2.85, 9);
		expect(bill.oursTotal).toBeCloseTo(92.85, 9);
		expect(bill.cf.steps).toBeCloseTo(796, 9);
		expect(bill.cf.requests).toBe(0);
		expect(bill.cfTotal).toBeCloseTo(796, 9);
		// Under the included amounts, nothing is billed on either side.
		expect(monthlyBill({ rowsWritten: 14, requests: 2, rowsRead: 0, gbSeconds: 0, gbMonths: 0, activeMs: 0 }, { requests: 1, steps: 10, cpuMs: 0 }, 50_000)).toMatchObject({ oursTotal: 0, cfTotal: 0 });
	});

	it("flags the issue's targets as met or not", () => {
		const { targets } = costModel({ trivial: run({ sqlRowsWritten: 15, alarmsSet: 2, bytes: 16_384 }), sleep: run({ sqlRowsWritten: 10, alarmsSet: 2, requests: 2 }) });
		// Trivial: 17 rows (over 16); $17.316 against $80.50, 0.215x (met); 16,384 B (met). Sleep: 12 rows, 2 requests and
		// 10 ms = $12.316 against 3 steps ($24), an invocation ($0.30) and 2 ms of CPU ($0.04): 0.506x, over 0.5x.
		expect(targets.map((t: { met: boolean }) => t.met)).toEqual([false, true, true, false]);
		expect(targets.map((t: { value: string }) => t.value)).toEqual(['17 rows', '0.22x', '16384 B', '0.51x']);
		expect(checkTargets([{ scenario: 'event', label: 'event', ratio: 0.5 }])[0].met).toBe(true);
		expect(PRICES.workflows.perMillionSteps).toBe(8);
	});

	it('sets the two storage layouts side by side, scenario by scenario: rows written, dollars, ratio and bytes kept', () => {
		const compact = costModel({ trivial: run({ sqlRowsWritten: 14, alarmsSet: 2, bytes: 8_192 }) }).figures;
		const table = costModel({ trivial: run({ sqlRowsWritten: 37, alarmsSet: 2, bytes: 36_864 }) }).figures;
		const lines = layoutComparison(compact, table).split('\n');
		const row = lines.find((line: string) => line.startsWith(`| ${SCENARIOS[0]!.label} |`))!.split(' | ');
		expect(row.slice(1, 3)).toEqual(['16', '39']);
		expect(row.slice(-2)).toEqual(['8192', '36864 |']);
	});
});
