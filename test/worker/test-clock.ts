/**
 * The clock of the test Worker's runners and API: real time plus an offset
 * that tests move with `advanceClock` (from `test/helpers`), so a '24 hours'
 * sleep or a '7 days' timeout is tested without waiting. The offset lives in
 * the isolate, which tests share with the Durable Objects they drive.
 */
export const testClock = {
	offsetMs: 0,
	now(): number {
		return Date.now() + testClock.offsetMs;
	},
};
