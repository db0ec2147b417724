/**
 * The clock of a test Worker's runners (and API): real time plus an offset
 * the workerd test kit moves, so a '7 days' timeout is tested without waiting.
 * It lives in the isolate, which the Workers vitest integration shares between
 * the tests and the Durable Objects they drive: moving it moves every
 * instance's time.
 */
export const testKitClock = {
	offsetMs: 0,
	now(): number {
		return Date.now() + testKitClock.offsetMs;
	},
	/** Back to real time (between tests). */
	reset(): void {
		testKitClock.offsetMs = 0;
	},
};
