import { parseDuration, type Duration } from '../engine/support/duration';

/**
 * The time every instance of a Node-mode test kit sees. It never moves on its
 * own: `advance` (through the kit, which fires the timers that fall due) is
 * the only way a sleep, a retry wait or an event timeout comes due, so a
 * 7-day timeout test takes milliseconds and never flakes.
 */
export class VirtualClock {
	constructor(private current: number) {}

	now(): number {
		return this.current;
	}

	/** Moves the clock to `at`; never backwards (a timer that fired stays fired). */
	moveTo(at: number): void {
		if (at > this.current) this.current = at;
	}
}

/** A duration as the engine reads it (`'7 days'`, `'2s'`, milliseconds). */
export function durationMs(duration: Duration): number {
	return parseDuration(duration);
}

/** Where a Node-mode clock starts unless the test says otherwise: a fixed instant, so runs repeat exactly. */
export const DEFAULT_START_TIME = Date.UTC(2030, 0, 1);

/** A Node-mode clock's start: the test's `startAt` (epoch ms or a Date), else `DEFAULT_START_TIME`. */
export function startTimeOf(startAt: Date | number | undefined): number {
	return startAt === undefined ? DEFAULT_START_TIME : typeof startAt === 'number' ? startAt : startAt.getTime();
}
