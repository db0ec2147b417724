/** Figures the reliability suite prints at the end (and the README quotes). */
export const report = {
	workflows: 0,
	evictions: 0,
	crashes: 0,
	alarmsFired: 0,
	eventsSent: 0,
	fuzzCases: 0,
	lost: 0,
};

export function printReport(suite: string): void {
	console.log(
		`[reliability:${suite}] workflows=${report.workflows} evictions=${report.evictions} crashes=${report.crashes} alarms=${report.alarmsFired} events=${report.eventsSent} fuzzCases=${report.fuzzCases} lost=${report.lost}`,
	);
}

/** A small seeded PRNG (mulberry32) so a failing chaos run can be replayed from its seed. */
export function prng(seed: number): () => number {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}
