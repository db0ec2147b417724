/**
 * The clock of every workflow instance. `Date.now()` in production; tests
 * move it forward with `advanceClock` (from `test/helpers`) so a '24 hours'
 * sleep or a '7 days' timeout is tested without waiting. The offset lives in
 * the isolate, which tests share with the Durable Objects they drive.
 */
export const runtimeClock = {
	offsetMs: 0,
	now(): number {
		return Date.now() + runtimeClock.offsetMs;
	},
};
